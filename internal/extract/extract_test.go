package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractRealFiles(t *testing.T) {
	tests := []struct {
		name      string
		doc       Document
		want      []string // substrings of the text
		notWant   []string
		wantPages int
	}{
		{
			name: "pdf two pages",
			doc: Document{Name: "report.pdf", ContentType: "application/pdf", Data: makePDF(t, true,
				[]string{"Quarterly report", "Revenue grew by 12 percent."},
				[]string{"Second page: outlook"})},
			want:      []string{"Quarterly report", "Revenue grew by 12 percent.", "Second page: outlook"},
			wantPages: 2,
		},
		{
			name:      "pdf uncompressed, content type with parameters",
			doc:       Document{Name: "plain.pdf", ContentType: "Application/PDF; qs=1", Data: makePDF(t, false, []string{"Hello from an uncompressed PDF"})},
			want:      []string{"Hello from an uncompressed PDF"},
			wantPages: 1,
		},
		{
			name: "docx",
			doc: Document{Name: "memo.docx", ContentType: TypeDOCX,
				Data: makeDOCX(t, documentXML("Memo to the team", "Deadlines &amp; budgets are ready."), false)},
			want: []string{"Memo to the team\nDeadlines & budgets are ready.\n"},
		},
		{
			name:    "html article",
			doc:     Document{Name: "page.html", ContentType: "text/html; charset=utf-8", Data: []byte(articleHTML)},
			want:    []string{"Deadlines for large requests", "Large requests are the ones that fail slowly", "Documents are extracted under caps"},
			notWant: []string{"Buy our product", "Sign in"},
		},
		{
			name: "html without an article falls back to the body",
			doc:  Document{Name: "short.html", ContentType: "text/html", Data: []byte(`<html><body><p>Just a line.</p></body></html>`)},
			want: []string{"Just a line."},
		},
		{
			name: "plain text",
			doc:  Document{Name: "notes.txt", ContentType: "text/plain", Data: []byte("line one\nline two — ünïcode\n")},
			want: []string{"line one\nline two — ünïcode\n"},
		},
		{
			name: "markdown",
			doc:  Document{Name: "README.md", ContentType: "text/markdown", Data: []byte("# Title\n\n- item *one*\n")},
			want: []string{"# Title\n\n- item *one*\n"},
		},
		{
			name: "utf-16 text with BOM",
			doc:  Document{Name: "win.txt", ContentType: "text/plain", Data: []byte("\xFF\xFEh\x00i\x00")},
			want: []string{"hi"},
		},
		{
			name:      "pdf with xref stream and inherited resources",
			doc:       Document{Name: "xs.pdf", ContentType: TypePDF, Data: onePagePDFXrefStream(t)},
			want:      []string{"Cross-reference stream"},
			wantPages: 1,
		},
		{
			name: "pdf 2.0 with bytes before the header and after %%EOF",
			doc: Document{Name: "padded.pdf", ContentType: TypePDF, Data: append(append([]byte("\xEF\xBB\xBFjunk\n"),
				bytes.Replace(makePDF(t, true, []string{"Padded"}), []byte("%PDF-1.3"), []byte("%PDF-2.0"), 1)...), "\x00\x00\r\n"...)},
			want:      []string{"Padded"},
			wantPages: 1,
		},
		{
			name:      "sniffed pdf",
			doc:       Document{Name: "noext", Data: makePDF(t, true, []string{"Sniffed"})},
			want:      []string{"Sniffed"},
			wantPages: 1,
		},
		{
			name: "sniffed docx",
			doc:  Document{Name: "noext", ContentType: "application/octet-stream", Data: makeDOCX(t, documentXML("Sniffed docx"), false)},
			want: []string{"Sniffed docx"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Extract(t.Context(), tt.doc, Limits{})
			require.NoError(t, err)
			for _, w := range tt.want {
				assert.Contains(t, res.Text, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, res.Text, w)
			}
			assert.False(t, res.Truncated)
			assert.Equal(t, tt.wantPages, res.Pages)
		})
	}
}

// TestExtractRefusals: each file is refused with the right class, naming the
// document (a row without want is a near miss that must be read).
func TestExtractRefusals(t *testing.T) {
	pdfDoc := makePDF(t, true, []string{"Some text that is long enough to matter"})
	deep := strings.Repeat("<div>", 10_000) + "deep" + strings.Repeat("</div>", 10_000)
	deepXML := documentXML() // replaced below with nested runs
	deepXML = strings.Replace(deepXML, "<w:sectPr/>", strings.Repeat("<w:p>", 5000)+strings.Repeat("</w:p>", 5000)+"<w:sectPr/>", 1)
	manyEntries := []zipEntry{
		{name: "[Content_Types].xml", data: []byte(contentTypesXML)},
		{name: "word/document.xml", data: []byte(documentXML("x"))},
	}
	for i := range 1200 {
		manyEntries = append(manyEntries, zipEntry{name: fmt.Sprintf("word/media/%d.bin", i), data: []byte{1}})
	}
	// A zip bomb: a document part of 3 MiB of one repeated paragraph,
	// deflated to about 3 KiB, against a 1 MiB limit.
	bombXML := documentXML(strings.Repeat("a", 3<<20))

	tests := []struct {
		name string
		doc  Document
		lim  Limits
		want error
		msg  string // substring of the error
	}{
		{name: "unknown type", doc: Document{Name: "x.xlsx", ContentType: "application/vnd.ms-excel", Data: []byte("PK\x03\x04")}, want: ErrUnsupported},
		{name: "image", doc: Document{Name: "x.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}, want: ErrUnsupported},
		{name: "sniffed binary", doc: Document{Name: "x.bin", Data: []byte{0, 1, 2, 3, 0xff}}, want: ErrUnsupported},
		{name: "garbage pdf", doc: Document{Name: "fake.pdf", ContentType: TypePDF, Data: []byte("this is not a pdf at all")}, want: ErrUnreadable, msg: "%PDF-"},
		{name: "pdf with a user password", doc: Document{Name: "locked.pdf", ContentType: TypePDF, Data: encryptedPDF(t, "user-secret", "owner-secret")}, want: ErrUnreadable, msg: "password"},
		{name: "pdf header only", doc: Document{Name: "hdr.pdf", ContentType: TypePDF, Data: []byte("%PDF-1.7\n%%EOF\n")}, want: ErrUnreadable},
		{name: "truncated pdf", doc: Document{Name: "cut.pdf", ContentType: TypePDF, Data: pdfDoc[:len(pdfDoc)/2]}, want: ErrUnreadable},
		{name: "pdf with too many pages", doc: Document{Name: "long.pdf", ContentType: TypePDF, Data: makePDF(t, true, []string{"a"}, []string{"b"}, []string{"c"})}, lim: Limits{MaxPages: 2}, want: ErrUnreadable, msg: "more than 2 pages"},
		{name: "docx that is not a zip", doc: Document{Name: "x.docx", ContentType: TypeDOCX, Data: []byte("hello")}, want: ErrUnreadable},
		{name: "docx truncated zip", doc: Document{Name: "x.docx", ContentType: TypeDOCX, Data: makeDOCX(t, documentXML("hi"), false)[:40]}, want: ErrUnreadable},
		{name: "docx without document part", doc: Document{Name: "x.docx", ContentType: TypeDOCX, Data: makeZip(t, zipEntry{name: "a.txt", data: []byte("x")})}, want: ErrUnreadable, msg: "no main document"},
		{name: "docx zip bomb", doc: Document{Name: "bomb.docx", ContentType: TypeDOCX, Data: makeDOCX(t, bombXML, false)}, lim: Limits{MaxExpandedBytes: 1 << 20}, want: ErrUnreadable, msg: "over the"},
		{name: "docx too many entries", doc: Document{Name: "many.docx", ContentType: TypeDOCX, Data: makeZip(t, manyEntries...)}, want: ErrUnreadable, msg: "zip entries"},
		{name: "docx deeply nested XML", doc: Document{Name: "deep.docx", ContentType: TypeDOCX, Data: makeDOCX(t, deepXML, false)}, want: ErrUnreadable, msg: "nested deeper"},
		{name: "docx malformed XML", doc: Document{Name: "bad.docx", ContentType: TypeDOCX, Data: makeDOCX(t, "<w:document><w:body><w:p>", false)}, want: ErrUnreadable},
		{name: "html 10k deep", doc: Document{Name: "deep.html", ContentType: TypeHTML, Data: []byte(deep)}, want: ErrUnreadable, msg: "nested too deep"},
		{name: "html 600 unclosed links are shallow", doc: Document{Name: "links.html", ContentType: TypeHTML, Data: []byte("<body>" + strings.Repeat("<a href=x>link ", 600))}},
		{name: "html declared but binary", doc: Document{Name: "x.html", ContentType: TypeHTML, Data: pdfDoc}, want: ErrUnreadable},
		{name: "text declared but a zip", doc: Document{Name: "x.txt", ContentType: TypeText, Data: makeDOCX(t, documentXML("x"), false)}, want: ErrUnreadable},
		{name: "empty text", doc: Document{Name: "empty.txt", ContentType: TypeText, Data: []byte("  \n")}, want: ErrUnreadable, msg: "no text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(t.Context(), tt.doc, tt.lim)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.doc.Name, e.Name)
			assert.Contains(t, err.Error(), tt.doc.Name)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestZipBombLyingHeader: a zip entry that claims 10 bytes but inflates to
// far more is refused (archive/zip itself stops at the declared size; the
// capped reader is the second line).
func TestZipBombLyingHeader(t *testing.T) {
	data := makeDOCX(t, documentXML(strings.Repeat("b", 4<<20)), false)
	// Patch the uncompressed sizes of word/document.xml in the local
	// header and the central directory to 10.
	patched := lieAboutSize(t, data, "word/document.xml", 10)
	_, err := Extract(t.Context(), Document{Name: "liar.docx", ContentType: TypeDOCX, Data: patched}, Limits{MaxExpandedBytes: 1 << 20})
	require.ErrorIs(t, err, ErrUnreadable)
}

func TestTruncatedText(t *testing.T) {
	text := strings.Repeat("é", 100) // 200 bytes
	res, err := Extract(t.Context(), Document{Name: "t.txt", ContentType: TypeText, Data: []byte(text)}, Limits{MaxTextBytes: 51})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Equal(t, strings.Repeat("é", 25), res.Text, "cut on a rune boundary")

	res, err = Extract(t.Context(), Document{Name: "m.docx", ContentType: TypeDOCX,
		Data: makeDOCX(t, documentXML(strings.Repeat("para ", 1000), "second"), false)}, Limits{MaxTextBytes: 100})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Len(t, res.Text, 100)

	// A part over the expanded-bytes cap at an ordinary ratio, where the
	// text cap does not end the reading first, meets the capped reader.
	_, err = Extract(t.Context(), Document{Name: "stored.docx", ContentType: TypeDOCX,
		Data: makeDOCX(t, documentXML(textLines(0, 30_000)...), true)}, Limits{MaxExpandedBytes: 1 << 20})
	require.ErrorIs(t, err, ErrUnreadable)
	assert.Contains(t, err.Error(), "more than 1048576 bytes decompressed")

	// A large honest document over the expanded-bytes cap is read up to
	// the text cap, not refused as a bomb.
	res, err = Extract(t.Context(), Document{Name: "big.docx", ContentType: TypeDOCX,
		Data: makeDOCX(t, documentXML(textLines(0, 30_000)...), true)}, Limits{MaxExpandedBytes: 1 << 20, MaxTextBytes: 64 << 10})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Len(t, res.Text, 64<<10)
}

// TestExtractDeadlineVirtualTime: a slow extraction ends exactly at its
// deadline in virtual time. The test's step hook makes every checkpoint a
// unit of work that takes one (virtual) second and honours ctx, as a real
// page or chunk does; with 60 pages and a 15 s deadline the extraction must
// give up at 15 s, naming the document.
func TestExtractDeadlineVirtualTime(t *testing.T) {
	pages := make([][]string, 60)
	for i := range pages {
		pages[i] = []string{fmt.Sprintf("page %d", i)}
	}
	data := makePDF(t, true, pages...)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		x := extractor{lim: Limits{}.withDefaults(), step: func(ctx context.Context) {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}}
		start := time.Now()
		_, err := x.extract(ctx, Document{Name: "slow.pdf", ContentType: TypePDF, Data: data})
		assert.Equal(t, 15*time.Second, time.Since(start))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, ErrUnreadable)
		assert.Contains(t, err.Error(), "slow.pdf")
	})
}

// pollCtx is a context whose deadline passes after a given number of Err
// calls: a deterministic stand-in for "the deadline passes while the
// extractor is busy", which virtual time cannot express for CPU-bound work.
type pollCtx struct {
	context.Context
	left  int
	polls int // polls after expiry
	done  chan struct{}
}

func newPollCtx(n int) *pollCtx {
	return &pollCtx{Context: context.Background(), left: n, done: make(chan struct{})}
}

func (c *pollCtx) Err() error {
	if c.left > 0 {
		c.left--
		if c.left == 0 {
			close(c.done)
		}
		return nil
	}
	c.polls++
	return context.DeadlineExceeded
}

func (c *pollCtx) Done() <-chan struct{} { return c.done }

// TestExtractorsCheckContext: every extractor polls ctx while it works and
// stops at the first poll after the deadline, on inputs big enough to need
// many units of work.
func TestExtractorsCheckContext(t *testing.T) {
	pages := make([][]string, 40)
	for i := range pages {
		pages[i] = []string{"text on a page", "more text"}
	}
	var paras []string
	for range 20_000 {
		paras = append(paras, "paragraph")
	}
	tests := []struct {
		name string
		doc  Document
	}{
		{name: "pdf", doc: Document{Name: "a.pdf", ContentType: TypePDF, Data: makePDF(t, true, pages...)}},
		{name: "docx", doc: Document{Name: "a.docx", ContentType: TypeDOCX, Data: makeDOCX(t, documentXML(paras...), false)}},
		{name: "html", doc: Document{Name: "a.html", ContentType: TypeHTML, Data: []byte("<html><body>" + strings.Repeat("<p>para</p>", 20_000) + "</body></html>")}},
		{name: "text", doc: Document{Name: "a.txt", ContentType: TypeText, Data: bytes.Repeat([]byte("text "), 1<<20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newPollCtx(3)
			_, err := Extract(ctx, tt.doc, Limits{})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), tt.doc.Name)
			assert.False(t, errors.Is(err, ErrUnreadable))
		})
	}
}
