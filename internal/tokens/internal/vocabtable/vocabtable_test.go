package vocabtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hash is the same on every build and machine (a table written by one
// build is read by any other), and spreads the tokens of a vocabulary: no
// two of these share a hash.
func TestHashIsFixed(t *testing.T) {
	assert.Equal(t, uint32(0), hash(""))
	assert.Equal(t, uint32(0x60b1c4dd), hash(" the"))
	assert.Equal(t, uint32(0x4ff4e0df), hash("a longer key of more than eight bytes"))
	seen := map[uint32]string{}
	for _, s := range []string{"", "a", "b", "ab", "ba", "hello", " the", "the ", "\xff\x00\xfe", "日本語", "aaaaaaaa", "aaaaaaaaa"} {
		h := hash(s)
		assert.NotContains(t, seen, h, "%q and %q", s, seen[h])
		seen[h] = s
	}
}

func TestBuildThenOpen(t *testing.T) {
	tokens := []string{"a", "b", "ab", "", "abc", " the", "\x00"}
	data, err := Build(tokens)
	require.NoError(t, err)
	tab, err := Open(string(data))
	require.NoError(t, err)
	assert.Equal(t, len(tokens), tab.Len())
	for id, tok := range tokens {
		assert.Equal(t, tok, tab.Token(id))
		got, ok := tab.Lookup(tok)
		if tok == "" {
			assert.False(t, ok, "the empty string is no token")
			continue
		}
		assert.True(t, ok, "%q", tok)
		assert.Equal(t, uint32(id), got, "%q", tok)
	}
	for _, s := range []string{"c", "abcd", "th", "aa"} {
		_, ok := tab.Lookup(s)
		assert.False(t, ok, "%q", s)
	}
	assert.Equal(t, "", tab.Token(-1))
	assert.Equal(t, "", tab.Token(len(tokens)))
}

// Six tokens get 16 slots: a load factor of at most 0.4 keeps misses short.
func TestLoadFactor(t *testing.T) {
	data, err := Build([]string{"a", "b", "c", "d", "e", "f"})
	require.NoError(t, err)
	tab, err := Open(string(data))
	require.NoError(t, err)
	assert.Equal(t, 16, len(tab.slots)/entry)
}

func TestBuildRefusesADuplicate(t *testing.T) {
	_, err := Build([]string{"a", "b", "a"})
	assert.ErrorContains(t, err, "ids 0 and 2 have the same token")
}

func TestOpenRefusesDamage(t *testing.T) {
	data, err := Build([]string{"a", "bc"})
	require.NoError(t, err)
	good := string(data)
	_, err = Open(good)
	require.NoError(t, err)
	for name, bad := range map[string]string{
		"empty":       "",
		"short":       good[:headerSize-1],
		"cut":         good[:len(good)-1],
		"longer":      good + "x",
		"version":     good[:7] + "\x01" + good[8:],
		"bits":        good[:len(magic)+8] + "\x00" + good[len(magic)+9:],
		"offsets end": good[:headerSize+2*entry] + "\x02" + good[headerSize+2*entry+1:],
	} {
		_, err := Open(bad)
		assert.Error(t, err, name)
	}
}
