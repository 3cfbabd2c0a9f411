// Package extract turns an uploaded document (PDF, DOCX, HTML, plain text or
// Markdown) into plain text for a prompt, under caps that make hostile files
// fail fast: decompressed bytes and entry count for DOCX zips, pages for PDF,
// nesting depth for XML and HTML, and the size of the text produced. No
// format holds more than a small fixed amount per token or element, however
// far a document expands: DOCX XML is read as a stream in 32 KiB chunks,
// PDF content streams are refused when one token is over 256 KiB, and HTML
// is parsed from a copy without over-long attributes or text nodes.
//
// Extract honours its context: every extractor checks it between units of
// work (pages, stream chunks, XML tokens, HTML tokens), and the PDF reader
// reads the file through an io.ReaderAt that fails once the context ends, so
// even a decompression inside the PDF library stops at the next read. No
// goroutine is started, so none outlives the call.
package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The MIME types Extract accepts, after parameters are stripped and the type
// is lowercased.
const (
	TypePDF      = "application/pdf"
	TypeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	TypeHTML     = "text/html"
	TypeXHTML    = "application/xhtml+xml"
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
)

// ErrUnsupported is returned (wrapped in *Error) when the document's content
// type is not one Extract reads. The API answers it with 415
// unsupported_document.
var ErrUnsupported = errors.New("unsupported document type")

// ErrUnreadable is returned (wrapped in *Error, with the reason) when the
// document is corrupt, hostile, not what its content type says, over a
// limit once expanded, or holds no text. The API answers it with 422
// document_unreadable.
var ErrUnreadable = errors.New("document unreadable")

// errTooBig marks a stream or part that expands past MaxExpandedBytes; it
// is wrapped with ErrUnreadable, and ends the extraction at once rather than
// spoiling one page.
var errTooBig = errors.New("expands past the limit")

// Error is the error Extract returns: the document's name and the cause,
// which wraps ErrUnsupported, ErrUnreadable or the context's error
// (context.DeadlineExceeded when the extraction ran out of time).
type Error struct {
	Name string // the document's name, as the caller gave it
	Err  error  // the cause; use errors.Is to classify
}

// Error names the document and the cause.
func (e *Error) Error() string { return fmt.Sprintf("extract %q: %v", e.Name, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Document is one uploaded file: its name (used in errors only), its
// declared MIME type (parameters such as charset are ignored; empty or
// application/octet-stream means "sniff it from the bytes") and its bytes.
type Document struct {
	Name, ContentType string
	Data              []byte
}

// Limits caps the work one extraction may do. A zero field takes the default
// named beside it. Reading stops once MaxTextBytes of text are out, so a
// large but honest document is truncated, not refused; the other caps are
// for files whose structure is hostile.
type Limits struct {
	// MaxExpandedBytes caps the decompressed bytes read: the XML parts of a
	// DOCX zip, and the content and ToUnicode streams of a PDF. Default
	// 64 MiB. Over it: ErrUnreadable.
	MaxExpandedBytes int64
	// MaxEntries caps the number of entries in a DOCX zip. Default 1000.
	MaxEntries int
	// MaxPages caps the pages of a PDF. Default 2000 (walking the page
	// tree is cheap; the text cap bounds the real work). Over it:
	// ErrUnreadable.
	MaxPages int
	// MaxDepth caps element nesting in DOCX XML and HTML. Default 256.
	MaxDepth int
	// MaxTextBytes caps the text returned; more is cut at a UTF-8 boundary
	// and Result.Truncated is set. Default 2 MiB.
	MaxTextBytes int
}

// Default limits, used for zero fields of Limits.
const (
	DefaultMaxExpandedBytes = 64 << 20
	DefaultMaxEntries       = 1000
	DefaultMaxPages         = 2000
	DefaultMaxDepth         = 256
	DefaultMaxTextBytes     = 2 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxExpandedBytes <= 0 {
		l.MaxExpandedBytes = DefaultMaxExpandedBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxPages <= 0 {
		l.MaxPages = DefaultMaxPages
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	return l
}

// Result is the extracted text. Truncated reports that the text was cut at
// Limits.MaxTextBytes. Pages is the number of PDF pages read (all of them
// unless Truncated), 0 for other types.
type Result struct {
	Text      string
	Truncated bool
	Pages     int
}

// Extract returns the plain text of d. The content type is checked against
// the bytes (a "PDF" that does not start with %PDF- is unreadable). Errors
// are *Error wrapping ErrUnsupported, ErrUnreadable, or ctx.Err() when ctx
// ended first; a panic inside a parser is recovered as ErrUnreadable.
func Extract(ctx context.Context, d Document, lim Limits) (Result, error) {
	x := extractor{lim: lim.withDefaults()}
	return x.extract(ctx, d)
}

// Extractor is Extract with its Limits fixed: the extractor the handler
// uses. The zero value extracts with the default limits.
type Extractor struct{ Limits Limits }

// Extract is Extract(ctx, d, e.Limits).
func (e Extractor) Extract(ctx context.Context, d Document) (Result, error) {
	return Extract(ctx, d, e.Limits)
}

// extractor holds one extraction's limits and, for tests only, a step hook
// that runs at every checkpoint (so a test can make each unit of work take
// virtual time).
type extractor struct {
	lim  Limits
	step func(ctx context.Context)
}

// check is the checkpoint every extractor calls between units of work.
func (x *extractor) check(ctx context.Context) error {
	if x.step != nil {
		x.step(ctx)
	}
	return ctx.Err()
}

func (x *extractor) extract(ctx context.Context, d Document) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = Result{}
			err = fmt.Errorf("%w: parser failed: %v", ErrUnreadable, r)
		}
		if err != nil {
			// Running out of time wins over whatever the parser made of
			// its failed reads.
			if cerr := ctx.Err(); cerr != nil {
				err = cerr
			}
			err = &Error{Name: d.Name, Err: err}
		}
	}()
	if err := x.check(ctx); err != nil {
		return Result{}, err
	}
	kind, err := classify(d)
	if err != nil {
		return Result{}, err
	}
	out := newSink(x.lim.MaxTextBytes)
	switch kind {
	case TypePDF:
		res.Pages, err = x.pdf(ctx, d.Data, out)
	case TypeDOCX:
		err = x.docx(ctx, d.Data, out)
	case TypeHTML:
		err = x.html(ctx, d.Data, out)
	default:
		err = x.text(ctx, d.Data, out)
	}
	if err != nil {
		return Result{}, err
	}
	res.Text, res.Truncated = out.result()
	if kind == TypePDF {
		res.Text = blankLines().ReplaceAllString(strings.TrimSpace(res.Text), "\n\n")
	}
	if strings.TrimSpace(res.Text) == "" {
		return Result{}, fmt.Errorf("%w: no text found", ErrUnreadable)
	}
	return res, nil
}

// blankLines matches the runs of empty lines that PDF text objects leave. It
// is compiled on the first PDF read: package init runs at every start of
// the handler, whether or not it ever reads a PDF.
var blankLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n[ \t]*\n(?:[ \t]*\n)+`) })

// classify maps the declared type to an extractor and checks it against the
// bytes.
func classify(d Document) (string, error) {
	declared := strings.TrimSpace(d.ContentType)
	if declared != "" {
		mt, _, err := mime.ParseMediaType(declared)
		if err != nil {
			return "", fmt.Errorf("%w: content type %q", ErrUnsupported, declared)
		}
		declared = strings.ToLower(mt)
	}
	switch declared {
	case "", "application/octet-stream":
		return sniff(d.Data)
	case TypePDF:
		if !isPDF(d.Data) {
			return "", fmt.Errorf("%w: declared PDF but does not start with %%PDF-", ErrUnreadable)
		}
		return TypePDF, nil
	case TypeDOCX:
		if !bytes.HasPrefix(d.Data, []byte("PK\x03\x04")) {
			return "", fmt.Errorf("%w: declared DOCX but is not a zip archive", ErrUnreadable)
		}
		return TypeDOCX, nil
	case TypeHTML, TypeXHTML:
		if err := checkText(d.Data); err != nil {
			return "", err
		}
		return TypeHTML, nil
	case TypeText, TypeMarkdown, "text/x-markdown":
		if err := checkText(d.Data); err != nil {
			return "", err
		}
		return TypeText, nil
	}
	return "", fmt.Errorf("%w: %s", ErrUnsupported, declared)
}

// sniff guesses the type of an undeclared document from its bytes.
func sniff(data []byte) (string, error) {
	switch {
	case isPDF(data):
		return TypePDF, nil
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return TypeDOCX, nil
	}
	ct, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	switch ct {
	case "text/html":
		return TypeHTML, nil
	case "text/plain":
		return TypeText, nil
	}
	return "", fmt.Errorf("%w: sniffed %s", ErrUnsupported, ct)
}

// isPDF reports whether the PDF header is within the first 1024 bytes, where
// readers look for it (ISO 32000-1, annex H.3).
func isPDF(data []byte) bool {
	return bytes.Contains(data[:min(len(data), 1024)], []byte("%PDF-"))
}

// checkText refuses bytes that declare themselves text but are binary.
func checkText(data []byte) error {
	ct, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	if strings.HasPrefix(ct, "text/") {
		return nil
	}
	return fmt.Errorf("%w: declared text but looks like %s", ErrUnreadable, ct)
}

// sink collects text up to a cap and remembers whether it had to cut.
type sink struct {
	buf       strings.Builder
	max       int
	truncated bool
}

func newSink(max int) *sink { return &sink{max: max} }

// full reports that the cap was reached: extractors stop early.
func (s *sink) full() bool { return s.truncated }

// WriteString appends str, invalid UTF-8 replaced by U+FFFD, cutting at the
// cap on a rune boundary.
func (s *sink) WriteString(str string) {
	if s.truncated {
		return
	}
	if !utf8.ValidString(str) {
		str = strings.ToValidUTF8(str, "\uFFFD")
	}
	room := s.max - s.buf.Len()
	if len(str) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(str[cut]) {
			cut--
		}
		str = str[:cut]
		s.truncated = true
	}
	s.buf.WriteString(str)
}

// separate writes sep unless the text is empty or already ends in white
// space, so that operators that each imply a break do not stack them up.
func (s *sink) separate(sep string) {
	str := s.buf.String()
	if str == "" {
		return
	}
	switch str[len(str)-1] {
	case '\n':
		return
	case ' ', '\t':
		if sep == " " {
			return
		}
	}
	s.WriteString(sep)
}

func (s *sink) result() (string, bool) {
	return s.buf.String(), s.truncated
}

// text extracts plain text and Markdown as they are, checking ctx every
// chunk.
func (x *extractor) text(ctx context.Context, data []byte, out *sink) error {
	const chunk = 256 << 10
	data = toUTF8(data)
	for len(data) > 0 && !out.full() {
		if err := x.check(ctx); err != nil {
			return err
		}
		n := min(len(data), chunk)
		// Do not split a rune across chunks.
		for n < len(data) && n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
		out.WriteString(string(data[:n]))
		data = data[n:]
	}
	return nil
}

// toUTF8 drops a UTF-8 byte order mark and decodes UTF-16 text that starts
// with its byte order mark (as Windows Notepad writes it); anything else is
// taken as UTF-8, invalid bytes becoming U+FFFD later.
func toUTF8(data []byte) []byte {
	var order func([]byte) uint16
	switch {
	case bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")):
		return data[3:]
	case bytes.HasPrefix(data, []byte("\xFE\xFF")):
		order = func(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }
	case bytes.HasPrefix(data, []byte("\xFF\xFE")):
		order = func(b []byte) uint16 { return uint16(b[1])<<8 | uint16(b[0]) }
	default:
		return data
	}
	data = data[2:]
	units := make([]uint16, 0, len(data)/2)
	for ; len(data) >= 2; data = data[2:] {
		units = append(units, order(data))
	}
	return []byte(string(utf16.Decode(units)))
}
