package extract

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files that are small on the wire and huge once read: one token or element
// of 60 MiB, under the 64 MiB expansion cap. They are generated here, so
// that the repository does not hold them, and built once per test binary.

const hugeSize = 60 << 20

// deflated is head, then size bytes of the repeated chunk, then tail, as a
// raw DEFLATE stream.
type deflated struct {
	raw               []byte
	head, chunk, tail []byte
	size              int // of the repeated part
}

// deflateRepeat builds a deflated without compressing 60 MiB (minutes under
// the race detector): it compresses one 1 MiB chunk of the fill and repeats
// the encoding. A chunk compressed by a fresh writer refers to nothing
// before it, and a sync flush ends it on a byte boundary in a block that is
// not the last, so its copies inflate to copies of the chunk.
func deflateRepeat(head, fill, tail string, size int) deflated {
	d := deflated{head: []byte(head), chunk: bytes.Repeat([]byte(fill), (1<<20)/len(fill)), tail: []byte(tail), size: size}
	piece := func(p []byte, last bool) []byte {
		var b bytes.Buffer
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		if err != nil {
			panic(err)
		}
		_, _ = fw.Write(p)
		if last {
			err = fw.Close()
		} else {
			err = fw.Flush()
		}
		if err != nil {
			panic(err)
		}
		return b.Bytes()
	}
	var raw bytes.Buffer
	raw.Write(piece(d.head, false))
	full := piece(d.chunk, false)
	for range size / len(d.chunk) {
		raw.Write(full)
	}
	raw.Write(piece(d.chunk[:size%len(d.chunk)], false))
	raw.Write(piece(d.tail, true))
	d.raw = raw.Bytes()
	return d
}

// inflatedSize is the length of what d inflates to.
func (d deflated) inflatedSize() int { return len(d.head) + d.size + len(d.tail) }

// sum is h's check sum of what d inflates to, which readers verify at the
// end of the stream (zip's CRC-32, zlib's Adler-32).
func (d deflated) sum(h hash.Hash32) uint32 {
	_, _ = h.Write(d.head)
	for left := d.size; left > 0; left -= len(d.chunk) {
		_, _ = h.Write(d.chunk[:min(len(d.chunk), left)])
	}
	_, _ = h.Write(d.tail)
	return h.Sum32()
}

// zlibBytes wraps d as a zlib stream, as a PDF FlateDecode stream holds it.
func (d deflated) zlibBytes() []byte {
	out := append([]byte{0x78, 0x9c}, d.raw...) // deflate, 32 KiB window, default level, no dictionary
	return binary.BigEndian.AppendUint32(out, d.sum(adler32.New()))
}

// hugeDOCX is a DOCX whose document part is head, then size bytes of the
// repeated fill, then tail.
func hugeDOCX(head, fill, tail string, size int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range []struct{ name, data string }{{"[Content_Types].xml", contentTypesXML}, {"_rels/.rels", relsXML}} {
		w, err := zw.Create(e.name)
		if err != nil {
			panic(err)
		}
		_, _ = io.WriteString(w, e.data)
	}
	d := deflateRepeat(head, fill, tail, size)
	w, err := zw.CreateRaw(&zip.FileHeader{
		Name: "word/document.xml", Method: zip.Deflate, CRC32: d.sum(crc32.NewIEEE()),
		CompressedSize64: uint64(len(d.raw)), UncompressedSize64: uint64(d.inflatedSize()),
	})
	if err != nil {
		panic(err)
	}
	_, _ = w.Write(d.raw)
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// hugePDF is a one-page PDF whose content stream (deflated) is head, then
// size bytes of the repeated fill, then tail.
func hugePDF(head, fill, tail string, size int) []byte {
	return buildPDF(
		pdfObject{body: "<</Type/Catalog /Pages 2 0 R>>"},
		pdfObject{body: "<</Type/Pages /Kids [3 0 R] /Count 1>>"},
		pdfObject{body: "<</Type/Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources <</Font <</F1 5 0 R>>>> /Contents 4 0 R>>"},
		pdfObject{dict: "/Filter /FlateDecode", stream: deflateRepeat(head, fill, tail, size).zlibBytes()},
		pdfObject{body: helvetica},
	)
}

const docHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`

var (
	// The file: one <w:t> run of 60 MiB, 61 KB compressed.
	hugeRunDOCX = sync.OnceValue(func() []byte {
		return hugeDOCX(docHead+`<w:p><w:r><w:t>`, "a", `</w:t></w:r></w:p></w:body></w:document>`, hugeSize)
	})
	// One attribute of 60 MiB on a paragraph, then a short run.
	hugeAttrDOCX = sync.OnceValue(func() []byte {
		return hugeDOCX(docHead+`<w:p w:rsidR="`, "a", `"><w:r><w:t>after the attribute</w:t></w:r></w:p></w:body></w:document>`, hugeSize)
	})
	// One string of 60 MiB shown with Tj.
	hugeStringPDF = sync.OnceValue(func() []byte {
		return hugePDF("BT /F1 12 Tf 72 700 Td (", "a", ") Tj ET", hugeSize)
	})
	// One content stream of 60 MiB of short strings: readable, cut at the
	// text cap.
	hugeStreamPDF = sync.OnceValue(func() []byte {
		return hugePDF("BT /F1 12 Tf 72 700 Td ", "(hello world) Tj ", " ET", hugeSize)
	})
	// 60 MiB of operands and no operator.
	hugeOperandsPDF = sync.OnceValue(func() []byte {
		return hugePDF("BT ", "1 ", " ET", hugeSize)
	})
)

// HTML is not compressed: its hostile forms are as large as a document may
// be (10 MiB, the API's MaxDocumentBytes).
const hugeHTMLSize = 10 << 20

var (
	hugeTextHTML = sync.OnceValue(func() []byte {
		return []byte("<html><body><p>" + strings.Repeat("a", hugeHTMLSize) + "</p></body></html>")
	})
	hugeAttrHTML = sync.OnceValue(func() []byte {
		return []byte(`<html><body><div data-x="` + strings.Repeat("a", hugeHTMLSize) + `"><p>after the attribute</p></div></body></html>`)
	})
)

// hugeCases are the one-huge-token files: each is answered (read up to the
// text cap, or refused) without holding the token.
func hugeCases() []hostileCase {
	return []hostileCase{
		{name: "docx one 60 MiB text run", doc: Document{Name: "run.docx", ContentType: TypeDOCX, Data: hugeRunDOCX()}, readable: true},
		{name: "docx one 60 MiB attribute", doc: Document{Name: "attr.docx", ContentType: TypeDOCX, Data: hugeAttrDOCX()}, readable: true},
		{name: "pdf one 60 MiB string", doc: Document{Name: "string.pdf", ContentType: TypePDF, Data: hugeStringPDF()}, msg: "longer than 262144 bytes"},
		{name: "pdf one 60 MiB content stream", doc: Document{Name: "stream.pdf", ContentType: TypePDF, Data: hugeStreamPDF()}, readable: true},
		{name: "pdf 60 MiB of operands", doc: Document{Name: "operands.pdf", ContentType: TypePDF, Data: hugeOperandsPDF()}, msg: "operands without an operator"},
		{name: "html one 10 MiB text node", doc: Document{Name: "text.html", ContentType: TypeHTML, Data: hugeTextHTML()}, readable: true},
		{name: "html one 10 MiB attribute", doc: Document{Name: "attr.html", ContentType: TypeHTML, Data: hugeAttrHTML()}, readable: true},
	}
}

// maxExtractAlloc bounds the bytes one extraction of a huge file may
// allocate in all (not only hold at once): the 2 MiB text cap and its
// copies, the decompressor's window, the parsers' fixed buffers, and the PDF
// library's garbage per operator up to the text cap. HTML documents are
// not compressed and the tokenizer holds one raw token whole, so for them
// three times the document's size is allowed on top (the document is in
// memory already). Before the bounds, the 60 MiB run allocated over 200 MiB
// per document and the 10 MiB HTML text node 88 MiB.
func maxExtractAlloc(d Document) uint64 {
	const fixed = 48 << 20
	if d.ContentType == TypeHTML {
		return fixed + 3*uint64(len(d.Data))
	}
	return fixed
}

// TestHugeTokensBounded: every huge file is answered, with the text cut at
// the cap, and allocates no more than maxExtractAlloc: nothing holds the
// huge token.
func TestHugeTokensBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 60 MiB files")
	}
	for _, tt := range hugeCases() {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := Extract(t.Context(), tt.doc, tt.lim)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d KiB allocated, %d bytes of text", alloc>>10, len(res.Text))
			if tt.readable {
				require.NoError(t, err)
				assert.LessOrEqual(t, len(res.Text), DefaultMaxTextBytes)
				assert.NotEmpty(t, strings.TrimSpace(res.Text))
			} else {
				require.ErrorIs(t, err, ErrUnreadable)
				assert.Contains(t, err.Error(), tt.msg)
			}
			assert.Less(t, alloc, maxExtractAlloc(tt.doc))
		})
	}
}

// TestHugeRunText: the text of the 60 MiB run is its first MaxTextBytes,
// marked truncated, and the text after a huge attribute is read.
func TestHugeRunText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 60 MiB files")
	}
	res, err := Extract(t.Context(), Document{Name: "run.docx", ContentType: TypeDOCX, Data: hugeRunDOCX()}, Limits{})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Equal(t, strings.Repeat("a", DefaultMaxTextBytes), res.Text)
	res, err = Extract(t.Context(), Document{Name: "attr.docx", ContentType: TypeDOCX, Data: hugeAttrDOCX()}, Limits{})
	require.NoError(t, err)
	assert.Equal(t, "after the attribute", strings.TrimSpace(res.Text))
	res, err = Extract(t.Context(), Document{Name: "attr.html", ContentType: TypeHTML, Data: hugeAttrHTML()}, Limits{})
	require.NoError(t, err)
	assert.Equal(t, "after the attribute", strings.TrimSpace(res.Text))
}
