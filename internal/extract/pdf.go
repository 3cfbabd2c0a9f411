package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
)

// errTooBig marks a stream or part that expands past MaxExpandedBytes.
var errTooBig = errors.New("expands past the limit")

// maxPageTreeDepth bounds the recursion over a PDF page tree; real files
// nest a handful of levels.
const maxPageTreeDepth = 64

// pdf extracts the text of every page, in order, until the text cap. The
// library (github.com/ledongthuc/pdf) is synchronous, cannot be cancelled,
// and panics on malformed input; its work is bounded here in four ways:
// checkXref refuses cross-reference numbers that would make it allocate
// without bound before reading anything; every byte it reads comes through
// ctxReaderAt, which fails once ctx ends (so a long decompression stops at
// its next read); the page tree is walked here with a depth and node cap
// (the library's own Page(i) loops forever on a cyclic tree); and the
// content and ToUnicode streams of each page are decompressed once through
// a counter before they are interpreted, so a flate bomb is refused before
// the library buffers it. Its panics are recovered per page, and around the
// whole call by Extract.
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

// errFull stops the page walk once the text cap is reached.
var errFull = errors.New("text cap reached")

// pageWalk reads the page tree in document order, extracting each page as
// it is reached, so that reading stops at the text cap without walking the
// rest of a long document.
type pageWalk struct {
	x         *extractor
	ctx       context.Context
	out       *sink
	nodesLeft int   // page tree nodes left to visit: a cycle guard
	expanded  int64 // decompressed stream bytes left
	pages     int   // pages reached
	read      int   // pages that gave text without error
	failed    error // the last page error
}

// walk visits node and its kids. res is the Resources dictionary inherited
// from the ancestors, carried down here: the library's own lookup climbs
// /Parent and re-parses the parent (with its whole Kids array) for every
// page, which is quadratic in a flat tree of thousands of pages.
func (w *pageWalk) walk(node pdf.Value, depth int, res pdf.Value) error {
	if err := w.x.check(w.ctx); err != nil {
		return err
	}
	w.nodesLeft--
	if w.nodesLeft < 0 || depth > maxPageTreeDepth {
		return fmt.Errorf("%w: page tree is cyclic or too deep", ErrUnreadable)
	}
	if own := node.Key("Resources"); own.Kind() == pdf.Dict {
		res = own
	}
	switch node.Key("Type").Name() {
	case "Page":
		if w.out.full() {
			return errFull
		}
		if w.pages++; w.pages > w.x.lim.MaxPages {
			return fmt.Errorf("%w: more than %d pages", ErrUnreadable, w.x.lim.MaxPages)
		}
		if err := w.x.pageText(w.ctx, node, res, &w.expanded, w.out); err != nil {
			if errors.Is(err, errTooBig) || w.ctx.Err() != nil {
				return err
			}
			// One bad page does not spoil the others; a file where no
			// page reads is unreadable.
			w.failed = err
			return nil
		}
		w.read++
		return nil
	case "Pages":
		kids := node.Key("Kids")
		for i := range kids.Len() {
			if err := w.walk(kids.Index(i), depth+1, res); err != nil {
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

// checkXref refuses cross-reference numbers that no file of this size can
// mean. The library allocates its object table from them before reading a
// single object ("90000000 6" in a 1 KB file cost it 11 s and gigabytes, in
// a loop no context reaches), so they are bounded here instead: a file
// cannot hold more objects than half its bytes (plus slack for object
// streams), and no xref stream field is wider than 8 bytes. The numbers
// checked are the subsection headers of classic xref tables, and /Size,
// /Index and /W wherever they appear. A plain byte scan, which a regexp
// over a file of megabytes is many times slower than.
func checkXref(data []byte) error {
	maxObjects := uint64(len(data))/2 + 1024
	tooMany := func(nums ...uint64) bool {
		var sum uint64
		for _, v := range nums {
			if v > maxObjects {
				return true
			}
			sum += v
		}
		return sum > maxObjects
	}
	// Classic tables: "xref", then lines of "start count" headers and
	// "offset gen f|n" entries, up to "trailer".
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("xref"))
		if i < 0 {
			break
		}
		off += i + len("xref")
		if i := off - len("startxref"); i >= 0 && string(data[i:i+5]) == "start" {
			continue
		}
		_, rest := nextLine(data[off:]) // the rest of the "xref" line
		for line, rest := nextLine(rest); ; line, rest = nextLine(rest) {
			f := bytes.Fields(line)
			if len(f) == 3 {
				continue // an entry
			}
			if len(f) != 2 {
				break // "trailer", or the end of a broken table
			}
			a, err1 := strconv.ParseUint(string(f[0]), 10, 64)
			b, err2 := strconv.ParseUint(string(f[1]), 10, 64)
			if err1 != nil || err2 != nil {
				break
			}
			if tooMany(a, b) {
				return fmt.Errorf("%w: xref subsection %d %d does not fit a %d-byte file", ErrUnreadable, a, b, len(data))
			}
		}
	}
	// Xref streams: /Size, /Index and /W of each dictionary that says
	// /Type /XRef (the same names mean other things elsewhere: the size of
	// an embedded file, the widths of a CID font).
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("/XRef"))
		if i < 0 {
			break
		}
		at := off + i
		off = at + len("/XRef")
		from := max(bytes.LastIndex(data[:at], []byte("obj")), 0)
		to := len(data)
		if j := bytes.Index(data[at:], []byte("stream")); j >= 0 {
			to = at + j
		}
		if err := checkXrefDict(data[from:to], tooMany, len(data)); err != nil {
			return err
		}
	}
	return nil
}

// checkXrefDict checks the numbers of one xref stream dictionary.
func checkXrefDict(dict []byte, tooMany func(...uint64) bool, size int) error {
	for _, key := range []string{"/Size", "/Index", "/W"} {
		for off := 0; ; {
			i := bytes.Index(dict[off:], []byte(key))
			if i < 0 {
				break
			}
			off += i + len(key)
			if off < len(dict) && isRegular(dict[off]) {
				continue // a longer name
			}
			nums := leadingNumbers(dict[off:], key != "/Size")
			switch key {
			case "/Size":
				if len(nums) > 0 && tooMany(nums[0]) {
					return fmt.Errorf("%w: /Size %d does not fit a %d-byte file", ErrUnreadable, nums[0], size)
				}
			case "/Index":
				for i := 0; i+1 < len(nums); i += 2 {
					if tooMany(nums[i], nums[i+1]) {
						return fmt.Errorf("%w: /Index does not fit a %d-byte file", ErrUnreadable, size)
					}
				}
			case "/W":
				for _, w := range nums {
					if w > 8 {
						return fmt.Errorf("%w: xref stream field width %d", ErrUnreadable, w)
					}
				}
			}
		}
	}
	return nil
}

// nextLine splits data at its first end of line (CR, LF or CRLF).
func nextLine(data []byte) (line, rest []byte) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil
	}
	line, rest = data[:i], data[i+1:]
	if data[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return line, rest
}

// isRegular reports whether c may continue a PDF name (ISO 32000-1, 7.2.2:
// not white space, not a delimiter).
func isRegular(c byte) bool {
	return !strings.ContainsRune(" \t\r\n\f\x00()<>[]{}/%", rune(c))
}

// leadingNumbers parses the unsigned integers that follow a key: one
// number, or with array set the numbers of a flat array "[n n ...]" (an
// array holding anything else gives nil). A number too large to parse
// counts as the largest.
func leadingNumbers(data []byte, array bool) []uint64 {
	data = bytes.TrimLeft(data, " \t\r\n")
	if array {
		end := bytes.IndexByte(data, ']')
		if len(data) == 0 || data[0] != '[' || end < 0 {
			return nil
		}
		var nums []uint64
		for _, f := range bytes.Fields(data[1:end]) {
			v, ok := parseCount(f)
			if !ok {
				return nil
			}
			nums = append(nums, v)
		}
		return nums
	}
	j := 0
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if v, ok := parseCount(data[:j]); ok {
		return []uint64{v}
	}
	return nil
}

// parseCount parses a run of digits, saturating at the largest uint64.
func parseCount(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		v = ^uint64(0)
	}
	return v, true
}

// pageText writes one page's text to out. Panics inside the library for this
// page are recovered into an error.
func (x *extractor) pageText(ctx context.Context, page, res pdf.Value, expanded *int64, out *sink) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == errFull {
				return
			}
			if e, ok := r.(error); ok && (errors.Is(e, errTooBig) || errors.Is(e, ctx.Err())) {
				err = e
				return
			}
			err = fmt.Errorf("%w: page: %v", ErrUnreadable, r)
		}
	}()
	contents := page.Key("Contents")
	fonts := map[string]*pdf.Font{}
	fontDict := res.Key("Font")
	for _, name := range fontDict.Keys() {
		f := pdf.Font{V: fontDict.Key(name)}
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
		if out.full() {
			panic(errFull) // the text cap is reached: read no further
		}
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

// drain decompresses stream v once, counting its bytes against expanded,
// checking ctx every chunk and following its tokens with a contentGuard, so
// that Interpret later reads a stream whose size and tokens are known to be
// within the limits. A value that is not a stream is
// skipped.
func (x *extractor) drain(ctx context.Context, v pdf.Value, expanded *int64) error {
	if v.Kind() != pdf.Stream {
		return nil
	}
	rc := v.Reader()
	defer rc.Close()
	buf := make([]byte, 32<<10)
	var guard contentGuard
	for {
		if err := x.check(ctx); err != nil {
			return err
		}
		n, err := rc.Read(buf)
		*expanded -= int64(n)
		if *expanded < 0 {
			return fmt.Errorf("%w: %w: PDF streams over %d bytes", ErrUnreadable, errTooBig, x.lim.MaxExpandedBytes)
		}
		if gerr := guard.write(buf[:n]); gerr != nil {
			return gerr
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
