package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/ledongthuc/pdf"
)

// errTooBig marks a stream or part that expands past MaxExpandedBytes.
var errTooBig = errors.New("expands past the limit")

// maxPageTreeDepth bounds the recursion over a PDF page tree; real files
// nest a handful of levels.
const maxPageTreeDepth = 64

// pdf extracts the text of every page, in order. The library
// (github.com/ledongthuc/pdf) is synchronous and panics on malformed input;
// its work is bounded here in three ways: every byte it reads comes through
// ctxReaderAt, which fails once ctx ends (so a long decompression stops at
// its next read); the page tree is walked here with a depth and node cap
// (the library's own Page(i) walk loops forever on a cyclic tree); and the
// content and ToUnicode streams of each page are decompressed once through
// a counting reader before they are interpreted, so a flate bomb is refused
// before the library buffers it.
func (x *extractor) pdf(ctx context.Context, data []byte, out *sink) (int, error) {
	data = trimPDF(data)
	if err := checkXref(data); err != nil {
		return 0, err
	}
	r, err := pdf.NewReader(&ctxReaderAt{ctx: ctx, data: data}, int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	var pages []pdf.Page
	budget := 4*x.lim.MaxPages + 16 // page tree nodes visited, a cycle guard
	if err := x.collectPages(ctx, r.Trailer().Key("Root").Key("Pages"), 0, &budget, &pages); err != nil {
		return 0, err
	}
	expanded := x.lim.MaxExpandedBytes
	var failed error
	read := 0
	for _, p := range pages {
		if out.full() {
			break
		}
		if err := x.check(ctx); err != nil {
			return len(pages), err
		}
		if err := x.pageText(ctx, p, &expanded, out); err != nil {
			if errors.Is(err, errTooBig) || ctx.Err() != nil {
				return len(pages), err
			}
			// One bad page does not spoil the others; a file where no
			// page reads is unreadable.
			failed = err
			continue
		}
		read++
	}
	if read == 0 && failed != nil {
		return len(pages), failed
	}
	return len(pages), nil
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

// Patterns for the numbers in a PDF that size the library's cross-reference
// table: subsection headers of a classic xref table ("start count" alone on
// a line), and /Size, /Index and /W of a trailer or xref stream.
var (
	xrefSubsection = regexp.MustCompile(`(?m)^[ \t]*(\d{1,19})[ \t]+(\d{1,19})[ \t]*\r?$`)
	xrefSize       = regexp.MustCompile(`/Size\s+(\d{1,19})`)
	xrefIndex      = regexp.MustCompile(`/Index\s*\[([\d\s]*)\]`)
	xrefW          = regexp.MustCompile(`/W\s*\[\s*(\d{1,19})\s+(\d{1,19})\s+(\d{1,19})`)
)

// checkXref refuses cross-reference numbers that no file of this size can
// mean. The library allocates its object table from them before reading a
// single object ("90000000 6" in a 1 KB file costs it seconds and gigabytes,
// and no context reaches that loop), so they are bounded here instead: a
// file cannot hold more objects than half its bytes (plus slack for object
// streams), and no xref stream field is wider than 8 bytes.
func checkXref(data []byte) error {
	maxObjects := uint64(len(data))/2 + 1024
	tooMany := func(nums ...[]byte) bool {
		var sum uint64
		for _, n := range nums {
			v, err := strconv.ParseUint(string(n), 10, 64)
			if err != nil || v > maxObjects {
				return true
			}
			sum += v
		}
		return sum > maxObjects
	}
	for _, m := range xrefSubsection.FindAllSubmatch(data, -1) {
		if tooMany(m[1], m[2]) {
			return fmt.Errorf("%w: xref subsection %s %s does not fit a %d-byte file", ErrUnreadable, m[1], m[2], len(data))
		}
	}
	for _, m := range xrefSize.FindAllSubmatch(data, -1) {
		if tooMany(m[1]) {
			return fmt.Errorf("%w: /Size %s does not fit a %d-byte file", ErrUnreadable, m[1], len(data))
		}
	}
	for _, m := range xrefIndex.FindAllSubmatch(data, -1) {
		nums := bytes.Fields(m[1])
		for i := 0; i+1 < len(nums); i += 2 {
			if tooMany(nums[i], nums[i+1]) {
				return fmt.Errorf("%w: /Index does not fit a %d-byte file", ErrUnreadable, len(data))
			}
		}
	}
	for _, m := range xrefW.FindAllSubmatch(data, -1) {
		for _, w := range m[1:] {
			if v, err := strconv.Atoi(string(w)); err != nil || v > 8 {
				return fmt.Errorf("%w: xref stream field width %s", ErrUnreadable, w)
			}
		}
	}
	return nil
}

// collectPages walks the page tree in document order.
func (x *extractor) collectPages(ctx context.Context, node pdf.Value, depth int, budget *int, pages *[]pdf.Page) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	*budget--
	if *budget < 0 || depth > maxPageTreeDepth {
		return fmt.Errorf("%w: page tree is cyclic or too deep", ErrUnreadable)
	}
	switch node.Key("Type").Name() {
	case "Page":
		if len(*pages) >= x.lim.MaxPages {
			return fmt.Errorf("%w: more than %d pages", ErrUnreadable, x.lim.MaxPages)
		}
		*pages = append(*pages, pdf.Page{V: node})
		return nil
	case "Pages":
		kids := node.Key("Kids")
		for i := range kids.Len() {
			if err := x.collectPages(ctx, kids.Index(i), depth+1, budget, pages); err != nil {
				return err
			}
		}
		return nil
	}
	if depth == 0 {
		return fmt.Errorf("%w: no page tree", ErrUnreadable)
	}
	return nil // a stray node in Kids: skip it
}

// pageText writes one page's text to out. Panics inside the library for this
// page are recovered into an error.
func (x *extractor) pageText(ctx context.Context, p pdf.Page, expanded *int64, out *sink) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && (errors.Is(e, errTooBig) || errors.Is(e, ctx.Err())) {
				err = e
				return
			}
			err = fmt.Errorf("%w: page: %v", ErrUnreadable, r)
		}
	}()
	contents := p.V.Key("Contents")
	fonts := map[string]*pdf.Font{}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		fonts[name] = &f
		if err := x.drain(ctx, f.V.Key("ToUnicode"), expanded); err != nil {
			return err
		}
	}
	if contents.Kind() == pdf.Array {
		for i := range contents.Len() {
			if err := x.drain(ctx, contents.Index(i), expanded); err != nil {
				return err
			}
		}
	} else if err := x.drain(ctx, contents, expanded); err != nil {
		return err
	}
	if contents.IsNull() {
		return nil
	}

	// The operators below are the text-showing subset of ISO 32000-1,
	// 9.4, as the library's own Page.GetPlainText handles them; it is
	// re-done here so that ctx is checked between operators.
	var enc pdf.TextEncoding = nopEncoding{}
	ops := 0
	out.separate("\n")
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		ops++
		if ops%4096 == 0 {
			if err := x.check(ctx); err != nil {
				panic(err)
			}
		}
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT", "T*", "Tm":
			out.separate("\n")
		case "Td", "TD":
			// A move down starts a line; a move along the line is
			// usually a word or a column.
			if len(args) == 2 && args[1].Float64() != 0 {
				out.separate("\n")
			} else {
				out.separate(" ")
			}
		case "Tf":
			enc = nopEncoding{}
			if len(args) == 2 {
				if f, ok := fonts[args[0].Name()]; ok {
					enc = f.Encoder()
				}
			}
		case "Tj", "'", "\"":
			if op != "Tj" {
				out.separate("\n")
			}
			if len(args) > 0 {
				out.WriteString(enc.Decode(args[len(args)-1].RawString()))
			}
		case "TJ":
			if len(args) == 1 {
				for i := range args[0].Len() {
					if v := args[0].Index(i); v.Kind() == pdf.String {
						out.WriteString(enc.Decode(v.RawString()))
					} else if v.Float64() < -200 {
						// A wide negative adjustment is how many
						// producers set a word space.
						out.WriteString(" ")
					}
				}
			}
		}
	})
	return nil
}

// drain decompresses stream v once, counting its bytes against expanded and
// checking ctx every chunk, so that Interpret later reads a stream whose
// size is known to be within the limit. A value that is not a stream is
// skipped.
func (x *extractor) drain(ctx context.Context, v pdf.Value, expanded *int64) error {
	if v.Kind() != pdf.Stream {
		return nil
	}
	rc := v.Reader()
	defer rc.Close()
	buf := make([]byte, 32<<10)
	for {
		if err := x.check(ctx); err != nil {
			return err
		}
		n, err := rc.Read(buf)
		*expanded -= int64(n)
		if *expanded < 0 {
			return fmt.Errorf("%w: %w: PDF streams over %d bytes", ErrUnreadable, errTooBig, x.lim.MaxExpandedBytes)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: stream: %v", ErrUnreadable, err)
		}
	}
}

// nopEncoding passes font codes through as bytes, for text shown before any
// font is set or in a font the page does not declare.
type nopEncoding struct{}

func (nopEncoding) Decode(raw string) string { return raw }

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
