package tokens

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sample returns about n bytes of one kind of text, the same every time:
// English-like prose, Go-like code, Japanese, or text that is mostly white
// space and punctuation (the tokenizer's worst case for pre-tokenization).
func sample(kind string, n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	var pick []string
	switch kind {
	case "prose":
		pick = strings.Fields("The report shows that revenue grew in the third quarter, while costs fell because the supply chain recovered. Customers in Europe renewed their contracts; margins improved by 3.5 percent.")
	case "code":
		pick = []string{"func", "(c *Counter)", "Text(s string)", "int {", "\n\t", "return", "n, err :=", "c.codec.Count(s)", "\n}", "if err != nil {", "// comment", "0x1F", "[]byte{", "},"}
	case "japanese":
		pick = []string{"第三四半期", "の", "売上", "は", "増加", "しました", "。", "顧客", "契約", "を", "更新", "、", "コスト", "削減"}
	case "punctuation":
		pick = []string{"  ", "\n", "---", "...", "[", "]", "//", "\t", " .", "!!", "\r\n", "=>", "|"}
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pick[r.IntN(len(pick))])
		if kind != "japanese" {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// BenchmarkTextByKind measures Counter.Text on 1 MiB of each kind of text in
// both encodings, in MB/s and tokens/s.
func BenchmarkTextByKind(b *testing.B) {
	for _, enc := range encodings {
		c, err := New(enc)
		require.NoError(b, err)
		for _, kind := range []string{"prose", "code", "japanese", "punctuation"} {
			text := sample(kind, 1<<20)
			n := c.Text(text)
			b.Run(fmt.Sprintf("%s/%s", enc, kind), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Text(text)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(len(text))/float64(n), "bytes/token")
			})
		}
	}
}

// BenchmarkWorstCase measures Counter.Text on 1 MiB of each worst case
// (worstCases: one letter, one digit, spaces, one CJK character, random
// bytes, random lower-case letters), in milliseconds a count.
func BenchmarkWorstCase(b *testing.B) {
	for _, enc := range encodings {
		c, err := New(enc)
		require.NoError(b, err)
		for _, w := range worstCases(1 << 20) {
			b.Run(fmt.Sprintf("%s/%s", enc, w.name), func(b *testing.B) {
				b.SetBytes(int64(len(w.text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Text(w.text)
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/count")
			})
		}
	}
}
