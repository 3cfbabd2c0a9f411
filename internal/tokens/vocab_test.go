package tokens

import (
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

			n := 0
			for tok, id := range ours.vocabulary {
				got, err := lib.Decode([]uint{id})
				require.NoError(t, err, "id %d", id)
				require.Equal(t, got, tok, "id %d", id)
				n++
			}
			// The library has no token for an id past the last of ours.
			_, err = lib.Decode([]uint{uint(n)})
			for id := n; err == nil; id++ {
				_, err = lib.Decode([]uint{uint(id)})
				require.Error(t, err, "the library has id %d, which the embedded vocabulary lacks", id)
			}

			c := &Counter{encoding: enc, ready: make(chan struct{})}
			texts := []string{
				"", "hello world", "Count to 10, with a comma between each number.",
				strings.Repeat(" ", 300), strings.Repeat("a", 500), "日本語のテキストを数える", "naïve café 🙂 résumé",
				"func main() {\n\tfmt.Println(\"hi\")\n}\n", "\xff\xfe invalid \xc3 utf-8", "<|endoftext|> special",
				strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", 20),
			}
			for _, text := range texts {
				want, toks, err := lib.Encode(text)
				require.NoError(t, err)
				assert.Equal(t, len(want), c.Text(text), "count of %q", text)
				ends, at := c.Ends(text), 0
				require.Len(t, ends, len(toks), "tokens of %q", text)
				for i, tok := range toks {
					at += len(tok)
					assert.Equal(t, at, ends[i], "end of token %d of %q", i, text)
				}
			}
		})
	}
}
