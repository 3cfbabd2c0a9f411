package extract

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"
)

// Builders of small real documents, made in the test so their origin is
// plain: fpdf writes PDFs, archive/zip writes DOCX packages.

// makePDF writes a PDF with one page per entry of pages, each line of a
// page a text line in Helvetica.
func makePDF(tb testing.TB, compress bool, pages ...[]string) []byte {
	tb.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCompression(compress)
	p.SetFont("Helvetica", "", 10)
	for _, lines := range pages {
		p.AddPage()
		for _, l := range lines {
			p.Cell(0, 4, l)
			p.Ln(4)
		}
	}
	var buf bytes.Buffer
	require.NoError(tb, p.Output(&buf))
	return buf.Bytes()
}

const contentTypesXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`

const relsXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`

// documentXML wraps paragraphs in a WordprocessingML body, each paragraph
// one run of text.
func documentXML(paragraphs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for _, p := range paragraphs {
		fmt.Fprintf(&b, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, p)
	}
	b.WriteString(`<w:sectPr/></w:body></w:document>`)
	return b.String()
}

// zipEntry is one file of a zip built by makeZip.
type zipEntry struct {
	name string
	data []byte
	// store writes the entry uncompressed.
	store bool
}

func makeZip(tb testing.TB, entries ...zipEntry) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		method := zip.Deflate
		if e.store {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: method})
		require.NoError(tb, err)
		_, err = w.Write(e.data)
		require.NoError(tb, err)
	}
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

// makeDOCX builds a minimal valid DOCX package around a document part.
func makeDOCX(tb testing.TB, document string, store bool) []byte {
	tb.Helper()
	return makeZip(tb,
		zipEntry{name: "[Content_Types].xml", data: []byte(contentTypesXML)},
		zipEntry{name: "_rels/.rels", data: []byte(relsXML)},
		zipEntry{name: "word/document.xml", data: []byte(document), store: store},
	)
}

// articleHTML is a page with navigation clutter around an article, as a
// news site serves it.
const articleHTML = `<!DOCTYPE html>
<html><head><title>Deadlines for large requests</title></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/login">Sign in</a></nav>
<div class="sidebar ad">Buy our product now! Limited offer.</div>
<article>
<h1>Deadlines for large requests</h1>
<p>Large requests are the ones that fail slowly: long documents, many retrieved sources, and pages fetched on the way. Each step gets its own deadline so that the server answers before the caller gives up.</p>
<p>A gateway that times out after two hundred and thirty seconds answers with a 502, and clients that retry a 502 multiply a slow failure by three. The budget answers 500 instead, which clients do not retry, and explains why.</p>
<p>Documents are extracted under caps: decompressed bytes, zip entries, pages and nesting depth. A hostile file fails fast with a clear error instead of a crash or a hang.</p>
</article>
<footer>Copyright 2026. Cookie settings. Privacy.</footer>
</body></html>`

// lieAboutSize rewrites the uncompressed size of one entry in the zip's
// central directory, which is what readers trust.
func lieAboutSize(tb testing.TB, data []byte, name string, size uint32) []byte {
	tb.Helper()
	out := bytes.Clone(data)
	sig := []byte("PK\x01\x02")
	for i := bytes.Index(out, sig); i >= 0; {
		nameLen := int(out[i+28]) | int(out[i+29])<<8
		if string(out[i+46:i+46+nameLen]) == name {
			out[i+24], out[i+25], out[i+26], out[i+27] = byte(size), byte(size>>8), byte(size>>16), byte(size>>24)
			return out
		}
		j := bytes.Index(out[i+4:], sig)
		if j < 0 {
			break
		}
		i += 4 + j
	}
	tb.Fatalf("entry %s not found", name)
	return nil
}

// pdfObject is one indirect object of a hand-built PDF: a body, or a stream
// dictionary and its (already encoded) data.
type pdfObject struct {
	body   string
	dict   string
	stream []byte
}

// buildPDF writes objects 1..n with a correct cross-reference table and a
// trailer whose Root is object 1, so that hostile structures reach the
// parser instead of failing at the xref.
func buildPDF(objs ...pdfObject) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		writeObject(&b, i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<</Size %d /Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// writeObject writes o as indirect object n: its body, or its dictionary
// with the stream's /Length and the stream.
func writeObject(b *bytes.Buffer, n int, o pdfObject) {
	fmt.Fprintf(b, "%d 0 obj\n", n)
	if o.stream != nil {
		fmt.Fprintf(b, "<<%s /Length %d>>\nstream\n", o.dict, len(o.stream))
		b.Write(o.stream)
		b.WriteString("\nendstream\n")
	} else {
		b.WriteString(o.body + "\n")
	}
	b.WriteString("endobj\n")
}

// deflate zlib-compresses data, as a PDF FlateDecode stream holds it.
func deflate(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	require.NoError(tb, err)
	_, err = zw.Write(data)
	require.NoError(tb, err)
	require.NoError(tb, zw.Close())
	return b.Bytes()
}

const helvetica = "<</Type/Font /Subtype/Type1 /BaseFont/Helvetica /Encoding/WinAnsiEncoding>>"

// onePagePDF is a hand-built one-page PDF showing content.
func onePagePDF(tb testing.TB, content []byte, compress bool) []byte {
	tb.Helper()
	contents := pdfObject{stream: content}
	if compress {
		contents = pdfObject{dict: "/Filter /FlateDecode", stream: deflate(tb, content)}
	}
	return buildPDF(
		pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"},
		pdfObject{body: "<</Type/Pages /Kids [3 0 R] /Count 1>>"},
		pdfObject{body: "<</Type/Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources <</Font <</F1 5 0 R>>>> /Contents 4 0 R>>"},
		contents,
		pdfObject{body: helvetica},
	)
}

// buildPDFXrefStream is buildPDF with a cross-reference stream (PDF 1.5)
// instead of a table: object n+1 is the /Type /XRef stream, fields 1 4 2
// bytes wide, stored unfiltered.
func buildPDFXrefStream(objs ...pdfObject) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		writeObject(&b, i+1, o)
	}
	xref := b.Len()
	var rows []byte
	row := func(typ byte, off uint32, gen uint16) {
		rows = append(rows, typ, byte(off>>24), byte(off>>16), byte(off>>8), byte(off), byte(gen>>8), byte(gen))
	}
	row(0, 0, 65535)
	for _, off := range offsets {
		row(1, uint32(off), 0)
	}
	row(1, uint32(xref), 0)
	n := len(objs) + 2
	writeObject(&b, len(objs)+1, pdfObject{dict: fmt.Sprintf("/Type /XRef /Size %d /W [1 4 2] /Root 1 0 R", n), stream: rows})
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// onePagePDFXrefStream is onePagePDF with a cross-reference stream.
func onePagePDFXrefStream(tb testing.TB) []byte {
	tb.Helper()
	return buildPDFXrefStream(
		pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"},
		pdfObject{body: "<</Type/Pages /Kids [3 0 R] /Count 1 /Resources <</Font <</F1 5 0 R>>>>>>"},
		pdfObject{body: "<</Type/Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R>>"},
		pdfObject{dict: "/Filter /FlateDecode", stream: deflate(tb, []byte("BT /F1 12 Tf 72 700 Td (Cross-reference stream) Tj ET"))},
		pdfObject{body: helvetica},
	)
}

// encryptedPDF writes a one-page PDF protected with the given passwords.
func encryptedPDF(tb testing.TB, user, owner string) []byte {
	tb.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetProtection(fpdf.CnProtectPrint, user, owner)
	p.SetFont("Helvetica", "", 10)
	p.AddPage()
	p.Cell(0, 4, "Protected text")
	var buf bytes.Buffer
	require.NoError(tb, p.Output(&buf))
	return buf.Bytes()
}
