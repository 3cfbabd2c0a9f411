package extract

import (
	"fmt"
	"strings"
	"testing"
)

// tenMB is the document size the throughput target names: a 10 MB
// PDF or DOCX extracted in under 2 s.
const tenMB = 10 << 20

// words is a small vocabulary; lines drawn from it by a fixed generator
// compress about as well as English prose (3-4x), unlike repeated lines.
var words = strings.Fields(`deadline budget request answer upstream retry gateway timeout document
page extract stream token prompt window server client caller platform function minute second
large small fast slow clear error status header limit cap hostile file zip bomb nested depth text`)

// textLines returns n lines of prose-like text, the same for the same n.
func textLines(first, n int) []string {
	lines := make([]string, n)
	x := uint32(first*7919 + 1)
	for i := range lines {
		var b strings.Builder
		fmt.Fprintf(&b, "%d.", first+i)
		for range 14 {
			x = x*1664525 + 1013904223
			b.WriteString(" " + words[int(x>>16)%len(words)])
		}
		lines[i] = b.String()
	}
	return lines
}

// bigPDF writes pages of text with fpdf to about size bytes: it measures a
// sample of 20 pages and scales, since fpdf has no streaming output.
func bigPDF(tb testing.TB, size int, compress bool) []byte {
	tb.Helper()
	pages := func(n int) [][]string {
		out := make([][]string, n)
		for i := range out {
			out[i] = textLines(i*60, 60)
		}
		return out
	}
	sample := len(makePDF(tb, compress, pages(20)...))
	return makePDF(tb, compress, pages(20*size/sample+1)...)
}

// bigDOCX builds a DOCX of about size bytes the same way.
func bigDOCX(tb testing.TB, size int, store bool) []byte {
	tb.Helper()
	sample := len(makeDOCX(tb, documentXML(textLines(0, 1000)...), store))
	return makeDOCX(tb, documentXML(textLines(0, 1000*size/sample+1)...), store)
}

// BenchmarkExtract reports throughput (MB/s of input) per type, reading the
// whole document (caps raised), and the time a 10 MB upload takes under the
// default limits. The inputs are built once per sub-benchmark (fpdf takes
// seconds for a 10 MB file).
func BenchmarkExtract(b *testing.B) {
	article := "<html><head><title>Bench</title></head><body><nav>menu</nav><article>" +
		strings.Repeat("<p>"+strings.Repeat("Readable article text with enough words to score. ", 8)+"</p>\n", 4000) +
		"</article></body></html>"
	tests := []struct {
		name      string
		doc       func(testing.TB) Document
		lim       Limits
		truncates bool
	}{
		{name: "pdf-10MB-uncompressed", doc: func(tb testing.TB) Document {
			return Document{Name: "b.pdf", ContentType: TypePDF, Data: bigPDF(tb, tenMB, false)}
		}, lim: Limits{MaxPages: 5000, MaxTextBytes: 64 << 20}},
		{name: "pdf-10MB-compressed", doc: func(tb testing.TB) Document {
			return Document{Name: "b.pdf", ContentType: TypePDF, Data: bigPDF(tb, tenMB, true)}
		}, lim: Limits{MaxPages: 5000, MaxExpandedBytes: 256 << 20, MaxTextBytes: 64 << 20}},
		// With the production limits, the text cap (2 MiB) ends the work
		// early: what a 10 MB upload costs the server.
		{name: "pdf-10MB-compressed-defaults", doc: func(tb testing.TB) Document {
			return Document{Name: "b.pdf", ContentType: TypePDF, Data: bigPDF(tb, tenMB, true)}
		}, truncates: true},
		{name: "docx-10MB-deflated-defaults", doc: func(tb testing.TB) Document {
			return Document{Name: "b.docx", ContentType: TypeDOCX, Data: bigDOCX(tb, tenMB, false)}
		}, truncates: true},
		{name: "docx-10MB-stored", doc: func(tb testing.TB) Document {
			return Document{Name: "b.docx", ContentType: TypeDOCX, Data: bigDOCX(tb, tenMB, true)}
		}, lim: Limits{MaxTextBytes: 64 << 20}},
		{name: "docx-10MB-deflated", doc: func(tb testing.TB) Document {
			return Document{Name: "b.docx", ContentType: TypeDOCX, Data: bigDOCX(tb, tenMB, false)}
		}, lim: Limits{MaxExpandedBytes: 256 << 20, MaxTextBytes: 64 << 20}},
		{name: "html-" + fmt.Sprint(len(article)>>20) + "MB", doc: func(testing.TB) Document {
			return Document{Name: "b.html", ContentType: TypeHTML, Data: []byte(article)}
		}, lim: Limits{MaxTextBytes: 64 << 20}},
		{name: "text-10MB", doc: func(testing.TB) Document {
			return Document{Name: "b.txt", ContentType: TypeText, Data: []byte(strings.Repeat("plain text line\n", tenMB/16))}
		}, lim: Limits{MaxTextBytes: 64 << 20}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			doc := tt.doc(b)
			b.SetBytes(int64(len(doc.Data)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := Extract(b.Context(), doc, tt.lim)
				if err != nil || res.Truncated != tt.truncates {
					b.Fatalf("extract: %v (truncated %v)", err, res.Truncated)
				}
				b.ReportMetric(float64(len(res.Text))/float64(len(doc.Data)), "text/byte")
			}
		})
	}
}
