package vocabtable

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hash is FNV-1a as the standard library computes it, so that a table
// written by one build is read by any other.
func TestHashIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "hello", " the", "\xff\x00\xfe", "日本語"} {
		h := fnv.New32a()
		h.Write([]byte(s))
		assert.Equal(t, h.Sum32(), hash(s), "%q", s)
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
		"version":     good[:7] + "\x02" + good[8:],
		"bits":        good[:len(magic)+8] + "\x00" + good[len(magic)+9:],
		"offsets end": good[:headerSize+2*entry] + "\x02" + good[headerSize+2*entry+1:],
	} {
		_, err := Open(bad)
		assert.Error(t, err, name)
	}
}
