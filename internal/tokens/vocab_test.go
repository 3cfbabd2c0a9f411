package tokens

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"
)

// The embedded vocabularies are the library's, token for token (regenerate
// with go generate after upgrading github.com/tiktoken-go/tokenizer), and
// counting and cutting with them agree with the library on every kind of text.
func TestVocabulariesMatchTheLibrary(t *testing.T) {
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		t.Run(enc, func(t *testing.T) {
			lib, err := tokenizer.Get(tokenizer.Encoding(enc))
			require.NoError(t, err)
			ours, err := newBPE(enc)
			require.NoError(t, err)

			n := ours.vocab.Len()
			for id := range n {
				tok := ours.vocab.Token(id)
				got, err := lib.Decode([]uint{uint(id)})
				if tok == "" {
					require.Error(t, err, "the library has id %d, which the embedded vocabulary lacks", id)
					continue
				}
				require.NoError(t, err, "id %d", id)
				require.Equal(t, got, tok, "id %d", id)
			}
			// The library has no token for an id past the last of ours.
			for id := n; id < n+1000; id++ {
				_, err = lib.Decode([]uint{uint(id)})
				require.Error(t, err, "the library has id %d, which the embedded vocabulary lacks", id)
			}

			longest := 0
			for id := range n {
				longest = max(longest, len(ours.vocab.Token(id)))
			}
			assert.Equal(t, longestToken, longest, "no pair of parts longer than longestToken is looked up")
		})
	}
}

// Every token of both encodings is found under its own id, and byte strings
// that are no token are not found: the embedded tables' hash (vocabtable's,
// which vocabgen wrote them with) and every slot are intact.
func TestEveryIDRoundTrips(t *testing.T) {
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		t.Run(enc, func(t *testing.T) {
			c, err := newBPE(enc)
			require.NoError(t, err)
			tokens := 0
			for id := range c.vocab.Len() {
				tok := c.vocab.Token(id)
				if tok == "" {
					continue
				}
				tokens++
				got, ok := c.vocab.Lookup(tok)
				require.True(t, ok, "id %d (%q) is not found", id, tok)
				require.Equal(t, uint32(id), got, "%q", tok)
			}
			assert.Greater(t, tokens, 100_000)
			for _, s := range []string{"", "no such token in any vocabulary", strings.Repeat("a", 1000), "\xff\xff\xff"} {
				_, ok := c.vocab.Lookup(s)
				assert.False(t, ok, "%q", s)
			}
		})
	}
}

// A table damaged in the build (cut short, or from another format version)
// is refused when the codec is built, never read.
func TestADamagedTableIsRefused(t *testing.T) {
	real := o200kTable
	t.Cleanup(func() { o200kTable = real })
	for name, damaged := range map[string]string{
		"cut short":     real[:len(real)-1],
		"other version": real[:7] + "\x01" + real[8:],
		"empty":         "",
	} {
		o200kTable = damaged
		_, err := newBPE("o200k_base")
		assert.ErrorContains(t, err, "the embedded o200k_base table", name)
		func() {
			defer func() {
				assert.Contains(t, fmt.Sprint(recover()), "tokens: a broken build: the embedded o200k_base table", name)
			}()
			mustBPE("o200k_base")
		}()
	}
}

// firstCountChild marks the process TestTheFirstCountBuildsNoVocabulary starts.
const firstCountChild = "TOKENS_TEST_FIRST_COUNT_CHILD"

// Counting in a fresh process builds nothing the size of a vocabulary: the
// tables are read in place. A heap vocabulary (a map of 100,000-200,000
// tokens, 17-19 MB) anywhere on the way, even built once and lazily, fails
// this. It runs in a process of its own because other tests build the
// library's vocabularies.
func TestTheFirstCountBuildsNoVocabulary(t *testing.T) {
	if os.Getenv(firstCountChild) != "" {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, enc := range []string{"o200k_base", "cl100k_base"} {
			c, err := New(enc)
			require.NoError(t, err)
			require.Equal(t, 42, c.Prompt([]Message{{Role: "user", Content: "Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."}}))
		}
		runtime.ReadMemStats(&after)
		fmt.Printf("allocated %d bytes\n", after.TotalAlloc-before.TotalAlloc)
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestTheFirstCountBuildsNoVocabulary$", "-test.count=1")
	cmd.Env = append(os.Environ(), firstCountChild+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var allocated int
	_, err = fmt.Sscanf(regexp.MustCompile(`allocated \d+ bytes`).FindString(string(out)), "allocated %d bytes", &allocated)
	require.NoError(t, err, "%s", out)
	t.Logf("the first counts allocated %d bytes", allocated)
	assert.Less(t, allocated, 2<<20, "bytes allocated by the first counts of both encodings")
}

// BenchmarkFirstUse measures what the first count of an encoding in a process
// pays before counting: checking its table's header and looking up its
// single bytes (newBPE; Counters share the result); and what its first piece
// of two bytes or more pays for the tables merges read (newMergeTables).
func BenchmarkFirstUse(b *testing.B) {
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		b.Run(enc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := newBPE(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(enc+"/merge-tables", func(b *testing.B) {
			c, err := newBPE(enc)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				newMergeTables(c.vocab)
			}
		})
	}
}

// BenchmarkLookup measures one table lookup, over substrings of ordinary text
// of 1-7 bytes (byte-pair merging's lookups; most miss). The map it replaced
// took as long on the same keys (9.2-9.6 ns against 9.0-9.2 on the 2-core
// development machine).
func BenchmarkLookup(b *testing.B) {
	c, err := newBPE("o200k_base")
	require.NoError(b, err)
	text := "The report shows that revenue grew in the third quarter, while costs fell because the supply chain recovered. func (c *Counter) Text(s string) int { 第三四半期の売上は増加しました。"
	var keys []string
	for i := range len(text) - 8 {
		for n := 1; n <= 7; n++ {
			keys = append(keys, text[i:i+n])
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, k := range keys {
			_, _ = c.vocab.Lookup(k)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/lookup")
}
