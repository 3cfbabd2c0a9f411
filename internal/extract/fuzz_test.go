package extract

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzLimits keeps each fuzz input's work small.
func fuzzLimits() Limits {
	return Limits{MaxExpandedBytes: 4 << 20, MaxEntries: 64, MaxPages: 32, MaxDepth: 64, MaxTextBytes: 64 << 10}
}

// checkFuzz runs one extraction under a deadline and checks the contract:
// no panic escapes, the error is one of the documented classes, and a
// result respects the text cap and is valid UTF-8.
func checkFuzz(t *testing.T, contentType string, data []byte) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	lim := fuzzLimits()
	res, err := Extract(ctx, Document{Name: "fuzz", ContentType: contentType, Data: data}, lim)
	if err != nil {
		if !errors.Is(err, ErrUnreadable) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error outside the contract: %v", err)
		}
		return
	}
	if len(res.Text) > lim.MaxTextBytes {
		t.Fatalf("text of %d bytes over the cap", len(res.Text))
	}
	if !utf8.ValidString(res.Text) {
		t.Fatal("text is not valid UTF-8")
	}
}

func FuzzExtractPDF(f *testing.F) {
	good := makePDF(f, true, []string{"fuzz seed", "second line"}, []string{"page two"})
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(makePDF(f, false, []string{"uncompressed"}))
	f.Add(onePagePDF(f, []byte("BT /F1 12 Tf 72 700 Td (Hello) Tj [(W) -300 (orld)] TJ ET"), false))
	f.Add(onePagePDF(f, []byte("BT /F1 12 Tf (a) ' 1 2 (b) \" ET"), true))
	f.Add(buildPDF(pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"}, pdfObject{body: "<</Type/Pages /Kids [2 0 R] /Count 1>>"}))
	f.Add([]byte("%PDF-1.7\n%%EOF"))
	f.Add(hugeStringPDF())
	f.Add(hugeStreamPDF())
	f.Add(hugeOperandsPDF())
	f.Fuzz(func(t *testing.T, data []byte) { checkFuzz(t, TypePDF, data) })
}

func FuzzExtractDOCX(f *testing.F) {
	f.Add(makeDOCX(f, documentXML("fuzz seed", "tab\tand more"), false))
	f.Add(makeDOCX(f, documentXML("stored"), true))
	f.Add(makeDOCX(f, "<w:document><w:body><w:p><w:r><w:t>unclosed", true))
	f.Add(makeZip(f, zipEntry{name: "word/document.xml", data: []byte("<a><b><c/></b></a>"), store: true}))
	f.Add([]byte("PK\x03\x04"))
	f.Add(hugeRunDOCX())
	f.Add(hugeAttrDOCX())
	f.Add(makeDOCX(f, documentXML("<![CDATA[cdata <text>]]> &amp; &#x263A; &bogus;"), false))
	f.Fuzz(func(t *testing.T, data []byte) { checkFuzz(t, TypeDOCX, data) })
}

func FuzzExtractHTML(f *testing.F) {
	f.Add([]byte(articleHTML))
	f.Add([]byte("<p>a<p>b<li>c<table><tr><td>d</table>"))
	f.Add([]byte(strings.Repeat("<div>", 300)))
	f.Add([]byte("<html><body><script>var x = '<div>';</script><b><i>x</b></i>"))
	// The huge text node and attribute, at 1 MiB (a fuzz input is held
	// whole; the 10 MiB forms are in the hostile corpus).
	f.Add([]byte("<html><body><p>" + strings.Repeat("a", 1<<20) + "</p></body></html>"))
	f.Add([]byte(`<html><body><div data-x="` + strings.Repeat("a", 1<<20) + `"><p>after</p></div></body></html>`))
	f.Fuzz(func(t *testing.T, data []byte) { checkFuzz(t, TypeHTML, data) })
}

func FuzzExtractText(f *testing.F) {
	f.Add([]byte("plain text"), "text/plain")
	f.Add([]byte("\xFF\xFEh\x00i\x00"), "text/plain")
	f.Add([]byte("# md\n\xff\xfe bad utf8"), "text/markdown")
	f.Add([]byte("%PDF-1.4"), "")
	f.Fuzz(func(t *testing.T, data []byte, contentType string) { checkFuzz(t, contentType, data) })
}
