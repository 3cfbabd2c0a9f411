package tokens

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"

	"github.com/timebox-dev/timebox/internal/ctxtest"
	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

var encodings = []string{"o200k_base", "cl100k_base"}

// The split patterns exactly as the library writes them.
const (
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// reference is what the encoder must equal: tiktoken, as the library
// encodes, but for two flaws of the regex engine the library generates for
// its split patterns (regexp2cg), where tiktoken (and gpt-tokenizer), which
// Azure OpenAI's counts are, differ from it:
//   - \s*[\r\n]+ backs \s* off to the first line break of a run of white
//     space instead of the last: " \n \n x" is " \n", " \n", " x" there and
//     " \n \n", " x" in tiktoken;
//   - its ASCII bitmaps leave DEL (U+007F) out of [^\s\p{L}\p{N}] and
//     [^\r\n\p{L}\p{N}], so no alternative matches it and it is dropped:
//     "a\x7fb" is "a", "b" there and "a", "\x7f", "b" in tiktoken.
//
// So the reference splits with regexp2's interpreter (the same pattern,
// wrapped in a group so that the generated engine is not picked), and
// encodes each piece with the library where the library's own split keeps
// the piece whole, else with tiktoken's merge loop over the embedded
// vocabulary, which TestVocabulariesMatchTheLibrary proves the library's.
type reference struct {
	lib             tokenizer.Codec
	split, libSplit *regexp2.Regexp
	vocab           vocabtable.Table
}

func newReference(t testing.TB, enc string) *reference {
	t.Helper()
	lib, err := tokenizer.Get(tokenizer.Encoding(enc))
	require.NoError(t, err)
	pattern := o200kPattern
	if enc == "cl100k_base" {
		pattern = cl100kPattern
	}
	libSplit := regexp2.MustCompile(pattern, regexp2.None)
	split := regexp2.MustCompile("(?:"+pattern+")", regexp2.None)
	c, err := newBPE(enc)
	require.NoError(t, err)
	return &reference{lib: lib, split: split, libSplit: libSplit, vocab: c.vocab}
}

// pieces returns re's split of text (valid UTF-8).
func pieces(t testing.TB, re *regexp2.Regexp, text string) []string {
	var out []string
	m, err := re.FindStringMatch(text)
	require.NoError(t, err)
	for m != nil {
		out = append(out, m.String())
		m, err = re.FindNextMatch(m)
		require.NoError(t, err)
	}
	return out
}

// encode returns the reference's ids of text and each token's length.
func (r *reference) encode(t testing.TB, text string) (ids []uint, lens []int) {
	t.Helper()
	sane, _ := valid(text)
	for _, piece := range pieces(t, r.split, sane) {
		if p := pieces(t, r.libSplit, piece); len(p) != 1 || p[0] != piece {
			for _, id := range r.merge(piece) {
				ids = append(ids, id)
				lens = append(lens, len(r.vocab.Token(int(id))))
			}
			continue
		}
		got, toks, err := r.lib.Encode(piece)
		require.NoError(t, err)
		ids = append(ids, got...)
		for _, tok := range toks {
			lens = append(lens, len(tok))
		}
	}
	return ids, lens
}

// merge is tiktoken's merge loop (as the library writes it): merge the
// adjacent pair that is the token of lowest rank, the leftmost of equals,
// until none is a token.
func (r *reference) merge(piece string) []uint {
	bounds := make([]int, len(piece)+1)
	for i := range bounds {
		bounds[i] = i
	}
	for {
		best, at := uint32(math.MaxUint32), -1
		for i := 0; i+2 < len(bounds); i++ {
			if id, ok := r.vocab.Lookup(piece[bounds[i]:bounds[i+2]]); ok && id < best {
				best, at = id, i
			}
		}
		if at < 0 {
			break
		}
		bounds = slices.Delete(bounds, at+1, at+2)
	}
	var ids []uint
	for i := 0; i+1 < len(bounds); i++ {
		id, _ := r.vocab.Lookup(piece[bounds[i]:bounds[i+1]])
		ids = append(ids, uint(id))
	}
	return ids
}

// same fails t unless the encoder's ids for text are the reference's, and
// Ends ends each token where the reference's ends.
func (r *reference) same(t testing.TB, enc, text string) {
	t.Helper()
	want, lens := r.encode(t, text)
	c, err := New(enc)
	require.NoError(t, err)
	var got []uint
	sane, ok := valid(text)
	require.NoError(t, c.codec().each(context.Background(), sane, func(id uint32, _ int) { got = append(got, uint(id)) }))
	if !slices.Equal(want, got) {
		at := 0
		for at < min(len(want), len(got)) && want[at] == got[at] {
			at++
		}
		from := 0
		for _, n := range lens[:at] {
			from += n
		}
		t.Fatalf("%s: ids of %q (%d bytes) differ from token %d on (of %d and %d), at %q: reference %v, ours %v", enc, short(text), len(text), at, len(want), len(got),
			short(sane[from:]), want[at:min(len(want), at+8)], got[at:min(len(got), at+8)])
	}
	require.Equal(t, len(want), c.Text(text), "%s: count of %q", enc, text)
	ends := c.Ends(text)
	require.Len(t, ends, len(want), "%s: ends of %q", enc, text)
	if ok {
		end := 0
		for i, n := range lens {
			end += n
			require.Equal(t, end, ends[i], "%s: end of token %d of %q", enc, i, text)
		}
		return
	}
	// Not valid UTF-8: the ends are offsets of text, in order, the last at
	// its end.
	if len(ends) > 0 {
		require.True(t, slices.IsSorted(ends), "%s: ends of %q: %v", enc, text, ends)
		require.Equal(t, len(text), ends[len(ends)-1], "%s: last end of %q", enc, text)
	}
}

// short is s, or its start if it is long.
func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Where the library's split is tiktoken's, the reference is the library
// itself: the flaws above are the only difference.
func TestTheReferenceIsTheLibraryButForTwoFlaws(t *testing.T) {
	for _, enc := range encodings {
		ref := newReference(t, enc)
		for _, text := range append([]string{"hello world", "a\n\n b", strings.Repeat("ab", 100)}, slices.Collect(maps.Values(corpus(t)))...) {
			want, _, err := ref.lib.Encode(text)
			require.NoError(t, err)
			got, _ := ref.encode(t, text)
			assert.Equal(t, want, got, "%s: %q", enc, text)
		}
		want, _, err := ref.lib.Encode(" \n \n x")
		require.NoError(t, err)
		got, _ := ref.encode(t, " \n \n x")
		assert.Len(t, want, 3, "the library's split of a run of white space with two line breaks")
		assert.Len(t, got, 2, "tiktoken's")
		want, _, err = ref.lib.Encode("a\x7fb")
		require.NoError(t, err)
		got, _ = ref.encode(t, "a\x7fb")
		assert.Len(t, want, 2, "the library drops DEL")
		assert.Len(t, got, 3, "tiktoken's")
	}
}

// corpus returns the texts of testdata/corpus (see its README.md).
func corpus(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		texts[strings.TrimSuffix(filepath.Base(f), ".txt")] = string(b)
	}
	return texts
}

// edgeCases are texts that exercise each branch of the split patterns and
// the merges: contractions in every case, marks, the lookahead of runs of
// white space, line breaks, invalid UTF-8, long pieces.
var edgeCases = []string{
	"", "a", " ", "\n", "hello world", "Count to 10, with a comma between each number.",
	"'ſelf x'ſelf X'ſelf 'self 'Self 'tis 're-do 'ver 'lla 'dx 'mx 'Mx", "it's IT'S it'S they're THEY'RE we've I'm I'M he'd she'll SHE'LL 'll 'LL 'lL 're 'Re ' 's 'x ſ 'ſ Xſ'ſ x'ſ",
	"don't DON'T Don'T", "  leading", "trailing  ", "a  b   c    d", "\t\tx", " \n \n x", "\r\n\r\n  \r\n x",
	"x\n\n\ny", "!!! ??? ... --- /// !/\n/\n!", " !/\r\n/", "a/b//c", "1 12 123 1234 12345", "١٢٣٤ ४५६",
	"é é ñ \u0301x \u0301 x\u0301\u0301 A\u0301B", "ǅungla ǈubljana Ǆ", "HTTPServer XMLHttpRequest iPhone McDonald",
	"ÀÉÎõü ÀÉÎ àéî", "ʰʲ ʼn ˆx", "日本語のテキストを数える", "naïve café 🙂 résumé", "👨‍👩‍👧‍👦 🏳️‍🌈",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "\xff\xfe invalid \xc3 utf-8", "\xed\xa0\x80 \xe6\x97 \xf0\x9f\x98", "a\xffb",
	"\xef\xbf\xbd real replacement", "<|endoftext|> special", "\u00a0\u2009\u3000 \u2028\u2029\u0085",
	strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", 20), strings.Repeat(" ", 300), strings.Repeat("a", 500),
	strings.Repeat("ab", 300), strings.Repeat("\n", 200), strings.Repeat("日", 300), strings.Repeat("!", 300),
	strings.Repeat(" \t", 150) + "x", strings.Repeat("9", 301),
}

// The encoder's ids are the library's on edge cases, on real text in many
// scripts, and on the worst cases (at a size the library counts quickly).
func TestSameIDsAsTheLibrary(t *testing.T) {
	for _, enc := range encodings {
		ref := newReference(t, enc)
		t.Run(enc, func(t *testing.T) {
			for _, text := range edgeCases {
				ref.same(t, enc, text)
			}
			for name, text := range corpus(t) {
				t.Run(name, func(t *testing.T) {
					ref.same(t, enc, text)
					for _, line := range strings.SplitAfter(text, "\n") {
						ref.same(t, enc, line)
					}
				})
			}
			for _, w := range worstCases(16 << 10) {
				ref.same(t, enc, w.text)
			}
			r := rand.New(rand.NewPCG(3, 4))
			for range 200 {
				ref.same(t, enc, randomText(r, 1+r.IntN(200)))
			}
		})
	}
}

// The scanners split as tiktoken's patterns do, piece for piece (ids
// alone can hide a difference: two splits may merge into the same tokens).
func TestSameSplitAsThePatterns(t *testing.T) {
	for _, enc := range encodings {
		ref := newReference(t, enc)
		c, err := newBPE(enc)
		require.NoError(t, err)
		texts := slices.Clone(edgeCases)
		for _, text := range corpus(t) {
			texts = append(texts, strings.SplitAfter(text, "\n")...)
		}
		r := rand.New(rand.NewPCG(7, 8))
		for range 500 {
			texts = append(texts, randomText(r, 1+r.IntN(100)))
		}
		for _, text := range texts {
			ref.sameSplit(t, c, enc, text)
		}
	}
}

// sameSplit fails t unless c splits text into the reference's pieces.
func (r *reference) sameSplit(t testing.TB, c *bpe, enc, text string) {
	t.Helper()
	text, _ = valid(text)
	var got []string
	for i := 0; i < len(text); {
		end := c.split(text, i)
		got = append(got, text[i:end])
		i = end
	}
	require.Equal(t, pieces(t, r.split, text), got, "%s: %q", enc, short(text))
}

// randomText mixes the characters the split patterns tell apart.
func randomText(r *rand.Rand, n int) string {
	alphabet := []string{"a", "Z", "é", "É", "\u0301", "ǅ", "ʰ", "日", "ア", "ー", "ا", "\u064e", "क", "\u093f",
		"1", "٣", "½", " ", "  ", "\t", "\n", "\r", "\u00a0", "\u3000", "'", "s", "S", "t", "re", "ll", "ſ", "!", "/",
		".", "🙂", "\u200d", "\xff", "\xc3", "\xef\xbf\xbd"}
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// FuzzSameIDsAsTheLibrary compares the encoder's split and ids with the
// reference's on any input, invalid UTF-8 included.
func FuzzSameIDsAsTheLibrary(f *testing.F) {
	for _, text := range edgeCases {
		f.Add(text)
	}
	for _, text := range corpus(f) {
		for _, line := range strings.SplitAfter(text, "\n") {
			f.Add(line)
		}
	}
	refs := map[string]*reference{}
	codecs := map[string]*bpe{}
	for _, enc := range encodings {
		refs[enc] = newReference(f, enc)
		c, err := newBPE(enc)
		require.NoError(f, err)
		codecs[enc] = c
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, enc := range encodings {
			refs[enc].sameSplit(t, codecs[enc], enc, text)
			refs[enc].same(t, enc, text)
		}
	})
}

// worstCase is a text that is one piece or nothing but pieces that are no
// token: a tokenizer's worst case.
type worstCase struct {
	name, text string
}

// worstCases returns each worst case of about n bytes.
func worstCases(n int) []worstCase {
	r := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, n)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	lower := make([]byte, n)
	for i := range lower {
		lower[i] = 'a' + byte(r.IntN(26))
	}
	return []worstCase{
		{"letter", strings.Repeat("a", n)},
		{"digit", strings.Repeat("7", n)},
		{"spaces", strings.Repeat(" ", n)},
		{"cjk", strings.Repeat("語", n/3)},
		{"random-bytes", string(random)},
		{"random-letters", string(lower)},
	}
}

// A count stops once its context ends, both in a long text of ordinary
// pieces and inside one piece of a megabyte; with time, it counts whole.
func TestACountStopsWhenTheContextEnds(t *testing.T) {
	for _, text := range []string{strings.Repeat("a", 1<<20), strings.Repeat("The budget forecast for the next quarter. ", 1<<20/42)} {
		c, err := New("o200k_base")
		require.NoError(t, err)
		whole := c.Text(text)
		require.Greater(t, whole, 100_000)

		ctx := ctxtest.ExpireAfter(3)
		n := c.TextContext(ctx, text)
		assert.Less(t, n, whole/4, "stopped early")
		assert.Error(t, ctx.Err())
		assert.Equal(t, whole, c.Text(text), "a stopped count leaves nothing behind")
	}
}

// The memory of a count grows with the longest piece, linearly: a piece
// four times as long takes about four times the memory (a merge that held
// every pair against every other would take sixteen times), and a text of
// pieces that are words, however long, takes a small part of what one long
// piece does (the scratch is reused; BenchmarkTextByKind reports the bytes).
func TestMemoryGrowsLinearlyWithThePiece(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	allocated := func(text string) uint64 {
		c.Text(text) // the reused scratch, once
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c.Text(text)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var piece uint64
	for _, letter := range []string{"a", " ", "語"} {
		short, long := allocated(strings.Repeat(letter, 256<<10/len(letter))), allocated(strings.Repeat(letter, 1<<20/len(letter)))
		assert.Less(t, long, 5*short, "%q: %d bytes for a 1 MiB piece, %d for 256 KiB", letter, long, short)
		piece = max(piece, long)
	}
	words := allocated(strings.Repeat("The budget forecast for the next quarter, unprecedentedly. ", 4<<20/60))
	assert.Less(t, words, piece/10, "4 MiB of words")
}
