package extract

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileCase is a file built to hurt a parser, and the limits it meets.
type hostileCase struct {
	name string
	doc  Document
	lim  Limits
	msg  string // substring of the error
	// readable marks a file the parser survives and reads (the hostile
	// part is skipped): it must not crash or hang, and may succeed.
	readable bool
}

func hostileCases(tb testing.TB) []hostileCase {
	tb.Helper()
	manyKids := make([]string, 2001)
	for i := range manyKids {
		manyKids[i] = "3 0 R"
	}
	entries := []zipEntry{{name: "word/document.xml", data: []byte(documentXML("x"))}}
	for i := range 1500 {
		entries = append(entries, zipEntry{name: fmt.Sprintf("customXml/item%d.xml", i), data: []byte("<a/>")})
	}
	small := onePagePDF(tb, []byte("BT /F1 12 Tf (hi) Tj ET"), false)
	smallXS := onePagePDFXrefStream(tb)
	return []hostileCase{
		{
			name: "pdf xref subsection far past the file",
			doc:  Document{Name: "xref.pdf", ContentType: TypePDF, Data: bytes.Replace(small, []byte("xref\n0 6"), []byte("xref\n90000000 6"), 1)},
			msg:  "does not fit",
		},
		{
			name: "pdf xref stream with huge /Size",
			doc:  Document{Name: "size.pdf", ContentType: TypePDF, Data: bytes.Replace(smallXS, []byte("/Size 7"), []byte("/Size 4000000000"), 1)},
			msg:  "/Size 4000000000 does not fit",
		},
		{
			name: "pdf xref stream with /Index far past the file",
			doc:  Document{Name: "index.pdf", ContentType: TypePDF, Data: bytes.Replace(smallXS, []byte("/Size 7"), []byte("/Size 7 /Index [90000000 7]"), 1)},
			msg:  "/Index does not fit",
		},
		{
			name: "pdf xref stream with wide fields",
			doc:  Document{Name: "wide-w.pdf", ContentType: TypePDF, Data: bytes.Replace(smallXS, []byte("/W [1 4 2]"), []byte("/W [1 4 90000000]"), 1)},
			msg:  "field width",
		},
		{
			name: "pdf cyclic page tree",
			doc: Document{Name: "cycle.pdf", ContentType: TypePDF, Data: buildPDF(
				pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"},
				pdfObject{body: "<</Type/Pages /Kids [2 0 R] /Count 5>>"},
			)},
			msg: "cyclic",
		},
		{
			name: "pdf page tree DAG: 10 kids per level, 8 levels, no leaves",
			doc:  Document{Name: "dag.pdf", ContentType: TypePDF, Data: pageDAG(8, 10)},
			msg:  "cyclic",
		},
		{
			name: "pdf malformed page tree object",
			doc: Document{Name: "badobj.pdf", ContentType: TypePDF, Data: bytes.Replace(
				onePagePDF(tb, []byte("BT /F1 12 Tf (hi) Tj ET"), false), []byte("2 0 obj"), []byte("2 0 xbj"), 1)},
			msg: "parser failed",
		},
		{
			name: "pdf page tree with 2001 pages",
			doc: Document{Name: "wide.pdf", ContentType: TypePDF, Data: buildPDF(
				pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"},
				pdfObject{body: "<</Type/Pages /Kids [" + strings.Join(manyKids, " ") + "] /Count 2001>>"},
				pdfObject{body: "<</Type/Page /Parent 2 0 R>>"},
			)},
			msg: "more than 2000 pages",
		},
		{
			name: "pdf flate bomb content stream",
			doc:  Document{Name: "bomb.pdf", ContentType: TypePDF, Data: onePagePDF(tb, bytes.Repeat([]byte(" "), 3<<20), true)},
			lim:  Limits{MaxExpandedBytes: 1 << 20},
			msg:  "over 1048576 bytes",
		},
		{
			name:     "pdf deeply nested arrays",
			doc:      Document{Name: "nest.pdf", ContentType: TypePDF, Data: onePagePDF(tb, []byte(strings.Repeat("[", 100_000)+" (x) Tj"), false)},
			readable: true, // the library caps object depth and skips the operand
		},
		{
			name: "pdf unknown filter",
			doc:  Document{Name: "filter.pdf", ContentType: TypePDF, Data: bytes.Replace(onePagePDF(tb, []byte("BT /F1 12 Tf (hi) Tj ET"), true), []byte("FlateDecode"), []byte("JBIG2Decode"), 1)},
		},
		{
			name: "pdf with no page tree",
			doc:  Document{Name: "nopages.pdf", ContentType: TypePDF, Data: buildPDF(pdfObject{body: "<</Type/Catalog>>"})},
			msg:  "no page tree",
		},
		{
			name: "pdf garbage after header",
			doc:  Document{Name: "garbage.pdf", ContentType: TypePDF, Data: append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 1<<18)...)},
		},
		{
			name: "docx zip bomb",
			doc:  Document{Name: "bomb.docx", ContentType: TypeDOCX, Data: makeDOCX(tb, documentXML(strings.Repeat("z", 3<<20)), false)},
			lim:  Limits{MaxExpandedBytes: 1 << 20},
			msg:  "over the",
		},
		{
			name: "docx too many entries",
			doc:  Document{Name: "many.docx", ContentType: TypeDOCX, Data: makeZip(tb, entries...)},
			msg:  "more than 1000",
		},
		{
			name: "docx 10k-deep XML",
			doc: Document{Name: "deep.docx", ContentType: TypeDOCX, Data: makeDOCX(tb,
				documentXML(strings.Repeat("<w:r>", 10_000)+strings.Repeat("</w:r>", 10_000)), false)},
			msg: "nested deeper than 256",
		},
		{
			name: "html 10k-deep nesting",
			doc:  Document{Name: "deep.html", ContentType: TypeHTML, Data: []byte(strings.Repeat("<div>", 10_000) + "x" + strings.Repeat("</div>", 10_000))},
			msg:  "nested too deep",
		},
		{
			name: "html 10k-deep unclosed formatting tags",
			doc:  Document{Name: "deep-b.html", ContentType: TypeHTML, Data: []byte("<body>" + strings.Repeat("<b><i><span>", 3_400))},
			msg:  "nested too deep",
		},
		{
			name: "html 300-deep nesting (under the parser's limit, over MaxDepth)",
			doc:  Document{Name: "deep300.html", ContentType: TypeHTML, Data: []byte(strings.Repeat("<div>", 300) + "x")},
			msg:  "nested deeper than 256",
		},
		{
			name: "html too many elements",
			doc:  Document{Name: "many.html", ContentType: TypeHTML, Data: []byte("<body>" + strings.Repeat("<br>", 150_000))},
			msg:  "more than 100000 HTML elements",
		},
	}
}

func TestHostileFilesUnreadable(t *testing.T) {
	for _, tt := range hostileCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(t.Context(), tt.doc, tt.lim)
			if tt.readable {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnreadable)
			assert.Contains(t, err.Error(), tt.doc.Name)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestHostileFilesBounded holds that each hostile file is answered by the
// extractor's own limits, not by the extraction deadline: the context here
// has no deadline at all, so a file that only a timeout would stop hangs the
// test instead of passing it. How long each takes is a benchmark's business
// (BenchmarkHostile), not a test's.
func TestHostileFilesBounded(t *testing.T) {
	for _, tt := range hostileCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(context.Background(), tt.doc, tt.lim)
			if !tt.readable {
				require.Error(t, err)
				assert.NotErrorIs(t, err, context.DeadlineExceeded)
			}
		})
	}
}

// BenchmarkHostile reports the time and memory to answer each hostile file,
// the one-huge-token files included (TestHugeTokensBounded checks those).
func BenchmarkHostile(b *testing.B) {
	for _, tt := range append(hostileCases(b), hugeCases()...) {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := Extract(b.Context(), tt.doc, tt.lim)
				if err == nil && !tt.readable {
					b.Fatal("hostile file accepted")
				}
			}
		})
	}
}

// pageDAG is a page tree where every Pages node lists the next level's node
// kids times and the last level has no pages: kids^levels visits for a
// naive walk, with no cycle and no depth to stop it.
func pageDAG(levels, kids int) []byte {
	objs := []pdfObject{{body: "<</Type/Catalog /Pages 2 0 R>>"}}
	for l := range levels {
		ref := fmt.Sprintf("%d 0 R ", l+3)
		body := "<</Type/Pages /Kids [" + strings.Repeat(ref, kids) + "] /Count 0>>"
		if l == levels-1 {
			body = "<</Type/Pages /Kids [] /Count 0>>"
		}
		objs = append(objs, pdfObject{body: body})
	}
	return buildPDF(objs...)
}
