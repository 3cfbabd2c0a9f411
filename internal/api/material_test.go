package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/extract"
)

type doc struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Data        string `json:"data"`
}

func chatWith(question string, docs []doc, urls []string) string {
	b, _ := json.Marshal(map[string]any{
		"messages":  []map[string]string{{"role": "user", "content": question}},
		"documents": docs,
		"urls":      urls,
	})
	return string(b)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// docx builds a minimal real Word document.
func docx(t *testing.T, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"word/document.xml":   `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>` + text + `</w:t></w:r></w:p></w:body></w:document>`,
	}
	for name, body := range files {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = io.WriteString(w, body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// manyEntries is a DOCX-looking zip with n tiny parts.
func manyEntries(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		w, err := zw.Create("word/part" + strconv.Itoa(i) + ".xml")
		require.NoError(t, err)
		_, err = io.WriteString(w, "<x/>")
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestDocumentsAndPagesReachThePrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		page := "<html><head><title>Travel</title></head><body><article><h1>Travel policy</h1><p>" +
			strings.Repeat("Trains are preferred for journeys under five hours. ", 40) + "</p></article></body></html>"
		web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, page)
		})
		h := newHarness(t, nil, aoaitest.Options{}, withWeb(web))
		base := decodeOK(t, h.do(chatRequest(ask("What does the policy say?"))))

		body := chatWith("What does the policy say?", []doc{
			{Name: "policy.docx", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: b64(docx(t, strings.Repeat("Expenses need a receipt. ", 50)))},
			{Name: "notes.md", ContentType: "text/markdown", Data: b64([]byte("# Notes\n\n" + strings.Repeat("Book early. ", 50)))},
		}, []string{"http://intranet.contoso.example/travel"})
		resp := decodeOK(t, h.do(chatRequest(body)))
		assert.Greater(t, resp.Usage.PromptTokens, base.Usage.PromptTokens+500, "the documents and the page were sent")
		assert.False(t, resp.Truncated)
		lines := h.logLines()
		require.Len(t, lines, 2)
		assert.EqualValues(t, resp.Usage.PromptTokens, lines[1]["promptTokens"], "the server's count agrees with the simulator's")
	})
}

func TestMaterialErrors(t *testing.T) {
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	tests := []struct {
		name       string
		body       string
		headers    []string
		web        http.Handler
		extractor  slowExtractor
		wantStatus int
		wantCode   string
		wantIn     string
		wantAfter  time.Duration
	}{
		{name: "unsupported document", body: chatWith("q", []doc{{Name: "photo.png", ContentType: "image/png", Data: b64([]byte("\x89PNG\r\n\x1a\n"))}}, nil),
			wantStatus: 415, wantCode: "unsupported_document", wantIn: "photo.png"},
		{name: "corrupt PDF", body: chatWith("q", []doc{{Name: "report.pdf", ContentType: "application/pdf", Data: b64([]byte("%PDF-1.7\n1 0 obj\n<< /Type /Catalog"))}}, nil),
			wantStatus: 422, wantCode: "document_unreadable", wantIn: "report.pdf"},
		{name: "a PDF that is not one", body: chatWith("q", []doc{{Name: "fake.pdf", ContentType: "application/pdf", Data: b64([]byte("hello"))}}, nil),
			wantStatus: 422, wantCode: "document_unreadable", wantIn: "fake.pdf"},
		{name: "DOCX with too many parts", body: chatWith("q", []doc{{Name: "parts.docx", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: b64(manyEntries(t, 1500))}}, nil),
			wantStatus: 422, wantCode: "document_unreadable", wantIn: "parts.docx"},
		{name: "HTML nested 10k deep", body: chatWith("q", []doc{{Name: "deep.html", ContentType: "text/html", Data: b64([]byte(strings.Repeat("<div>", 10000) + "x" + strings.Repeat("</div>", 10000)))}}, nil),
			wantStatus: 422, wantCode: "document_unreadable", wantIn: "deep.html"},
		{name: "bad base64", body: `{"messages":[{"role":"user","content":"q"}],"documents":[{"name":"a.txt","contentType":"text/plain","data":"***"}]}`,
			wantStatus: 400, wantCode: "invalid_request", wantIn: "base64"},
		{name: "too many documents", body: chatWith("q", make([]doc, 6), nil), wantStatus: 400, wantCode: "invalid_request"},
		{name: "too many urls", body: chatWith("q", nil, []string{"https://a.example/", "https://a.example/", "https://a.example/", "https://a.example/", "https://a.example/", "https://a.example/"}),
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "loopback page", body: chatWith("q", nil, []string{"http://127.0.0.1:7071/api/health?sig=SECRET"}), wantStatus: 422, wantCode: "url_blocked", wantIn: "127.0.0.1"},
		{name: "metadata endpoint", body: chatWith("q", nil, []string{"http://169.254.169.254/metadata/identity/oauth2/token"}), wantStatus: 422, wantCode: "url_blocked", wantIn: "169.254.169.254"},
		{name: "name resolving to a private address", body: chatWith("q", nil, []string{"https://intranet.private.example/"}), wantStatus: 422, wantCode: "url_blocked", wantIn: "intranet.private.example"},
		{name: "file scheme", body: chatWith("q", nil, []string{"file:///etc/passwd"}), wantStatus: 422, wantCode: "url_blocked"},
		{name: "page answering 404", body: chatWith("q", nil, []string{"http://gone.example/page?token=SECRET"}), wantStatus: 422, wantCode: "url_unreachable", wantIn: "http://gone.example/page?token=xxxxx"},
		{name: "slow page", body: chatWith("q", nil, []string{"http://slow.example/report?code=SECRET#SECRET"}), web: hang,
			wantStatus: 500, wantCode: "fetch_timeout", wantIn: "http://slow.example/report?code=xxxxx", wantAfter: 15 * time.Second},
		{name: "slow page, caller in a hurry", body: chatWith("q", nil, []string{"http://slow.example/report"}), headers: []string{"x-client-timeout-ms", "10000"}, web: hang,
			wantStatus: 500, wantCode: "fetch_timeout", wantIn: "http://slow.example/report", wantAfter: 8*time.Second - 250*time.Millisecond},
		{name: "slow extraction", body: chatWith("q", []doc{{Name: "huge.docx", ContentType: "text/plain", Data: b64([]byte("x"))}}, nil), extractor: slowExtractor{on: true},
			wantStatus: 500, wantCode: "extract_timeout", wantIn: "huge.docx", wantAfter: 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := []option{withWeb(tt.web)}
				if tt.extractor.on {
					opts = append(opts, withExtractor(tt.extractor))
				}
				h := newHarness(t, nil, aoaitest.Options{}, opts...)
				start := time.Now()
				w := h.do(chatRequest(tt.body, tt.headers...))
				assert.Equal(t, tt.wantAfter, time.Since(start))
				require.Equal(t, tt.wantStatus, w.Code, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, tt.wantCode, e.Error.Code)
				assert.Contains(t, e.Error.Message, tt.wantIn)
				assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				assertCORS(t, w.Header())
				assert.Equal(t, 0, h.sim.Stats().Requests, "no upstream call")
				// A page's query (a SAS sig=, a share link's token=) is
				// never repeated, in the answer or in the log line.
				assert.NotContains(t, w.Body.String(), "SECRET")
				assert.NotContains(t, h.logs.String(), "SECRET")
				require.Len(t, h.logLines(), 1)
			})
		})
	}
}

// slowExtractor never finishes on its own: it returns when its deadline does.
type slowExtractor struct{ on bool }

func (slowExtractor) Extract(ctx context.Context, d extract.Document) (extract.Result, error) {
	<-ctx.Done()
	return extract.Result{}, &extract.Error{Name: d.Name, Err: ctx.Err()}
}

func TestPromptsThatCannotFitAreRefusedBeforeSending(t *testing.T) {
	long := strings.Repeat("budget forecast figures ", 700) // ~2100 tokens
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"over the deployment's tokens per minute", map[string]string{"DEPLOYMENT_TPM": "2500"}},
		{"over the context window", map[string]string{"CONTEXT_WINDOW": "2048", "MAX_TOKENS": "512"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.env, aoaitest.Options{})
				w := h.do(chatRequest(ask(long)))
				require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, "prompt_too_large", e.Error.Code)
				assert.Contains(t, e.Error.Message, "token")
				assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				assert.Equal(t, 0, h.sim.Stats().Requests, "no upstream call")
			})
		})
	}
}

func TestTrimmingKeepsTheQuestionAndSaysWhatWasCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"CONTEXT_WINDOW": "3000", "MAX_TOKENS": "500"}, aoaitest.Options{ContextWindow: 3000})
		var msgs []map[string]string
		for i := range 10 {
			msgs = append(msgs, map[string]string{"role": "user", "content": "earlier question " + strings.Repeat("padding ", 100)})
			msgs = append(msgs, map[string]string{"role": "assistant", "content": "earlier answer " + strings.Repeat("padding ", 100) + string(rune('a'+i))})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": "And the newest question?"})
		sources := []map[string]string{
			{"title": "Short", "text": "A short passage."},
			{"title": "Long", "text": strings.Repeat("A very long retrieved passage. ", 400)},
		}
		b, _ := json.Marshal(map[string]any{"messages": msgs, "sources": sources})
		resp := decodeOK(t, h.do(chatRequest(string(b))))
		assert.True(t, resp.Truncated)
		require.NotNil(t, resp.Dropped)
		assert.Positive(t, resp.Dropped.Turns)
		assert.LessOrEqual(t, resp.Usage.PromptTokens, 2500)
		recs := h.sim.Requests()
		require.Len(t, recs, 1)
		assert.Equal(t, 200, recs[0].Status, "the simulator, counting the same way, accepted it")
		assert.Contains(t, resp.Answer, "newest question", "the question was kept")
	})
}

// takesExtractor reads every document in d of (virtual) time, honouring ctx.
type takesExtractor struct{ d time.Duration }

func (e takesExtractor) Extract(ctx context.Context, d extract.Document) (extract.Result, error) {
	select {
	case <-time.After(e.d):
		return extract.Result{Text: "text of " + d.Name}, nil
	case <-ctx.Done():
		return extract.Result{}, &extract.Error{Name: d.Name, Err: ctx.Err()}
	}
}

// The message names the clock that ran out. With a 20 s budget and
// documents that take 12 s each, read 4 at a time, the fifth starts at 12 s
// and is stopped by the request's deadline (19.75 s), not by its own 15 s:
// the answer says the request's 20 s ran out. One document that outlasts
// its own 15 s is still told so.
func TestStepTimeoutNamesTheClockThatRanOut(t *testing.T) {
	docs := make([]doc, 5)
	for i := range docs {
		docs[i] = doc{Name: fmt.Sprintf("part%d.txt", i+1), ContentType: "text/plain", Data: b64([]byte("x"))}
	}
	synctest.Test(t, func(t *testing.T) {
		env := map[string]string{"REQUEST_BUDGET": "20s", "FAST_FAILURE_THRESHOLD": "2s"}
		h := newHarness(t, env, aoaitest.Options{}, withExtractor(takesExtractor{12 * time.Second}))
		start := time.Now()
		w := h.do(chatRequest(chatWith("q", docs, nil)))
		assert.Equal(t, 20*time.Second-250*time.Millisecond, time.Since(start))
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		e := decodeError(t, w)
		assert.Equal(t, "extract_timeout", e.Error.Code)
		assert.Contains(t, e.Error.Message, `"part5.txt"`)
		assert.Contains(t, e.Error.Message, "the request's time (20s in all) ran out")
		assert.NotContains(t, e.Error.Message, "15s")
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{}, withExtractor(takesExtractor{time.Minute}))
		w := h.do(chatRequest(chatWith("q", docs[:1], nil)))
		e := decodeError(t, w)
		assert.Equal(t, "extract_timeout", e.Error.Code)
		assert.Contains(t, e.Error.Message, `"part1.txt" took longer than 15s`)
	})
}
