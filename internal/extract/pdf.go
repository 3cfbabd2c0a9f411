package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ledongthuc/pdf"
)

// pdf extracts the text of every page, in order, until the text cap. The
// library (github.com/ledongthuc/pdf) is synchronous, cannot be cancelled,
// and panics on malformed input; its work is bounded in four ways, one a
// file: checkXref (pdfxref.go) refuses cross-reference numbers that would
// make it allocate without bound before reading anything; every byte it
// reads comes through ctxReaderAt (below), which fails once ctx ends, so a
// long decompression stops at its next read; pageWalk (pdfpages.go) walks
// the page tree with a depth and node cap, because the library's own
// Page(i) loops forever on a cyclic tree; and pageText (pdftext.go)
// decompresses the content and ToUnicode streams of each page once, through
// a byte counter and the token guard of pdfguard.go, before they are
// interpreted, so a flate bomb is refused before the library buffers it.
// Its panics are recovered per page, and around the whole call by Extract.
func (x *extractor) pdf(ctx context.Context, data []byte, out *sink) (int, error) {
	data = trimPDF(data)
	if err := checkXref(data); err != nil {
		return 0, err
	}
	r, err := pdf.NewReader(&ctxReaderAt{ctx: ctx, data: data}, int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	w := pageWalk{x: x, ctx: ctx, out: out, nodesLeft: 4*x.lim.MaxPages + 16, expanded: x.lim.MaxExpandedBytes}
	err = w.walk(r.Trailer().Key("Root").Key("Pages"), 0, pdf.Value{})
	if errors.Is(err, errFull) {
		err = nil
	}
	if err != nil {
		return w.pages, err
	}
	if w.read == 0 && w.failed != nil {
		return w.pages, w.failed
	}
	return w.pages, nil
}

// trimPDF starts data at its %PDF- header and ends it at its last %%EOF, and
// presents a PDF 2.0 header as 1.7: the library wants "%PDF-1.x" at offset 0
// and %%EOF in the last 100 bytes, and producers often pad either end.
func trimPDF(data []byte) []byte {
	if i := bytes.Index(data[:min(len(data), 1024)], []byte("%PDF-")); i > 0 {
		data = data[i:]
	}
	if i := bytes.LastIndex(data, []byte("%%EOF")); i >= 0 {
		data = data[:i+len("%%EOF")]
	}
	if bytes.HasPrefix(data, []byte("%PDF-2.")) && len(data) > 8 {
		patched := make([]byte, len(data))
		copy(patched, data)
		copy(patched[5:8], "1.7")
		data = patched
	}
	return data
}

// ctxReaderAt serves the PDF's bytes and fails every read once ctx has
// ended, which stops the library at its next read of the file.
type ctxReaderAt struct {
	ctx  context.Context
	data []byte
}

func (r *ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if off < 0 || off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
