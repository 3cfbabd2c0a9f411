package tokens

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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

// startCPU starts measuring the process's CPU time; the function it returns
// gives the time used since, if the platform measures it.
func startCPU() func() (time.Duration, bool) {
	start, ok := cpuTime()
	return func() (time.Duration, bool) {
		now, _ := cpuTime()
		return now - start, ok && now > start
	}
}

// BenchmarkTextByKind measures Counter.Text on 1 MiB of each kind of text in
// both encodings, in MB/s and tokens/s (and MB/s of CPU time, steadier on a
// shared machine).
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
				cpu := startCPU()
				for b.Loop() {
					c.Text(text)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(len(text))/float64(n), "bytes/token")
				if d, ok := cpu(); ok {
					b.ReportMetric(float64(len(text))*float64(b.N)/1e6/d.Seconds(), "cpu-MB/s")
				}
			})
		}
	}
}

// BenchmarkWorstCase measures Counter.Text on 1 MiB of each worst case
// (worstCases: one letter, one digit, spaces, one CJK character, random
// bytes, random lower-case letters), in milliseconds a count, of the wall
// clock and of CPU time.
func BenchmarkWorstCase(b *testing.B) {
	for _, enc := range encodings {
		c, err := New(enc)
		require.NoError(b, err)
		for _, w := range worstCases(1 << 20) {
			b.Run(fmt.Sprintf("%s/%s", enc, w.name), func(b *testing.B) {
				b.SetBytes(int64(len(w.text)))
				b.ReportAllocs()
				cpu := startCPU()
				for b.Loop() {
					c.Text(w.text)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/count")
				if d, ok := cpu(); ok {
					b.ReportMetric(float64(d.Microseconds())/1e3/float64(b.N), "cpu-ms/count")
				}
			})
		}
	}
}
