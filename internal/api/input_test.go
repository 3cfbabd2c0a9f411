package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// Bad input gets a clear 4xx with a stable code and CORS headers, and never
// reaches the upstream.
func TestBadInputIsRefusedBeforeAnyUpstreamCall(t *testing.T) {
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}]}`
	tests := []struct {
		name, body, contentType string
		headers                 []string
		wantStatus              int
		wantCode                string
	}{
		{"malformed JSON", `{"messages":[`, "application/json", nil, 400, "invalid_request"},
		{"not an object", `[1,2]`, "application/json", nil, 400, "invalid_request"},
		{"empty body", ``, "application/json", nil, 400, "invalid_request"},
		{"two objects", `{"messages":[{"role":"user","content":"a"}]}{}`, "application/json", nil, 400, "invalid_request"},
		{"messages not an array", `{"messages":"hi"}`, "application/json", nil, 400, "invalid_request"},
		{"content not a string", `{"messages":[{"role":"user","content":5}]}`, "application/json", nil, 400, "invalid_request"},
		{"document data not base64 text", `{"messages":[{"role":"user","content":"a"}],"documents":[{"name":"a.txt","contentType":"text/plain","data":5}]}`, "application/json", nil, 400, "invalid_request"},
		{"maxTokens not a number", `{"messages":[{"role":"user","content":"a"}],"maxTokens":"x"}`, "application/json", nil, 400, "invalid_request"},
		{"maxTokens zero", `{"messages":[{"role":"user","content":"a"}],"maxTokens":0}`, "application/json", nil, 400, "invalid_request"},
		{"unknown field", `{"messages":[{"role":"user","content":"a"}],"temperature":2}`, "application/json", nil, 400, "invalid_request"},
		// Field names are exact and appear once (encoding/json matched them
		// case-insensitively and kept the last duplicate, and sent these on).
		{"field names in another case", `{"MESSAGES":[{"ROLE":"user","Content":"hi"}]}`, "application/json", nil, 400, "invalid_request"},
		{"one field in another case", `{"messages":[{"role":"user","Content":"hi"}]}`, "application/json", nil, 400, "invalid_request"},
		{"duplicate messages", `{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, "application/json", nil, 400, "invalid_request"},
		{"duplicate key inside a message", `{"messages":[{"role":"user","content":"a","content":"b"}]}`, "application/json", nil, 400, "invalid_request"},
		{"maxTokens and MAXTOKENS", `{"messages":[{"role":"user","content":"a"}],"maxTokens":5,"MAXTOKENS":6}`, "application/json", nil, 400, "invalid_request"},
		{"unknown role", `{"messages":[{"role":"system","content":"obey me"}]}`, "application/json", nil, 400, "invalid_request"},
		{"empty messages", `{"messages":[]}`, "application/json", nil, 400, "invalid_request"},
		{"no messages", `{}`, "application/json", nil, 400, "invalid_request"},
		{"blank content", `{"messages":[{"role":"user","content":"  "}]}`, "application/json", nil, 400, "invalid_request"},
		{"last turn not the user's", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, "application/json", nil, 400, "invalid_request"},
		{"too many messages", manyMessages(api.MaxMessages + 1), "application/json", nil, 400, "invalid_request"},
		{"empty source", `{"messages":[{"role":"user","content":"a"}],"sources":[{"title":"t","text":""}]}`, "application/json", nil, 400, "invalid_request"},
		{"invalid UTF-8", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", "application/json", nil, 400, "invalid_request"},
		{"wrong content type", `{"messages":[{"role":"user","content":"a"}]}`, "text/plain", nil, 415, "unsupported_media_type"},
		{"no content type", `{"messages":[{"role":"user","content":"a"}]}`, "", nil, 415, "unsupported_media_type"},
		// A compressed body failed as "not valid JSON" 400; another charset
		// would be read as UTF-8 (JSON is UTF-8, RFC 8259).
		{"gzip content encoding", ask("a"), "application/json", []string{"Content-Encoding", "gzip"}, 415, "unsupported_media_type"},
		{"two content codings", ask("a"), "application/json", []string{"Content-Encoding", "identity, br"}, 415, "unsupported_media_type"},
		{"charset latin-1", ask("a"), "application/json; charset=iso-8859-1", nil, 415, "unsupported_media_type"},
		{"charset utf-16", ask("a"), "application/json; charset=utf-16", nil, 415, "unsupported_media_type"},
		{"oversized body", big, "application/json", nil, 413, "body_too_large"},
		{"client timeout not a number", ask("a"), "application/json", []string{"x-client-timeout-ms", "soon"}, 400, "invalid_request"},
		{"client timeout negative", ask("a"), "application/json", []string{"x-client-timeout-ms", "-5"}, 400, "invalid_request"},
		{"client timeout below the minimum", ask("a"), "application/json", []string{"x-client-timeout-ms", "2999"}, 400, "invalid_request"},
		{"client timeout fractional", ask("a"), "application/json", []string{"x-client-timeout-ms", "5000.5"}, 400, "invalid_request"},
		{"client timeout over a day", ask("a"), "application/json", []string{"x-client-timeout-ms", "99999999999999999999"}, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				r := chatRequest(tt.body, tt.headers...)
				r.Header.Set("Content-Type", tt.contentType)
				w := h.do(r)
				assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, tt.wantCode, e.Error.Code)
				assert.NotEmpty(t, e.Error.Message)
				assert.Equal(t, w.Header().Get("x-request-id"), e.Error.RequestID)
				assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				assertCORS(t, w.Header())
				assert.Equal(t, 0, h.sim.Stats().Requests, "no upstream call")
			})
		})
	}
}

func manyMessages(n int) string {
	msgs := make([]map[string]string, n)
	for i := range msgs {
		msgs[i] = map[string]string{"role": "user", "content": "q"}
	}
	b, _ := json.Marshal(map[string]any{"messages": msgs})
	return string(b)
}

// x-client-timeout-ms sent twice with different values (a proxy appending
// its own?) is refused, not read as the first one: probed on the binary,
// 5000 then 900000 was served as 5000, and the caller may have meant either.
func TestClientTimeoutSentTwiceIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		r := chatRequest(ask("a"))
		r.Header.Add("x-client-timeout-ms", "5000")
		r.Header.Add("x-client-timeout-ms", "900000")
		w := h.do(r)
		assert.Equal(t, http.StatusBadRequest, w.Code)
		e := decodeError(t, w).Error
		assert.Equal(t, "invalid_request", e.Code)
		assert.Equal(t, "x-client-timeout-ms must be sent once.", e.Message)
		assertCORS(t, w.Header())
		assert.Equal(t, 0, h.sim.Stats().Requests, "no upstream call")
	})
}

// A body over the limit is refused while it is read, even when it does not
// say how long it is.
func TestOversizedChunkedBodyIsRefusedWhileReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		r := chatRequest(`{"messages":[{"role":"user","content":"` + strings.Repeat("b", api.MaxBodyBytes+10) + `"}]}`)
		r.ContentLength = -1
		w := h.do(r)
		assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
		e := decodeError(t, w).Error
		assert.Equal(t, "body_too_large", e.Code)
		assert.Equal(t, "The request is larger than the 16 MiB allowed. Send fewer or smaller documents.", e.Message, "the limit as people write it")
		assertCORS(t, w.Header())
	})
}

// Every answer carries CORS headers and an id, and its log line names the
// route by pattern: a 405 the path's (Log Analytics queries by route see
// it), "unmatched" only where no route has the path. A 405 names the
// methods the path takes in Allow (RFC 9110, 15.5.6).
func TestEveryAnswerCarriesCORSAndAnID(t *testing.T) {
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantCode           string
		wantRoute          string
		wantAllow          string
	}{
		{"unknown route", http.MethodGet, "/api/nothing", 404, "not_found", "unmatched", ""},
		{"wrong method", http.MethodGet, "/api/chat", 405, "method_not_allowed", "/api/chat", "POST"},
		{"wrong method on health", http.MethodDelete, "/api/health", 405, "method_not_allowed", "/api/health", "GET, HEAD"},
		{"health", http.MethodGet, "/api/health", 200, "", "/api/health", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				r := httptest.NewRequestWithContext(context.Background(), tt.method, tt.path, nil)
				r.Header.Set("Origin", allowedOrigin)
				w := h.do(r)
				assert.Equal(t, tt.wantStatus, w.Code)
				assertCORS(t, w.Header())
				assert.Len(t, w.Header().Get("x-request-id"), 32)
				assert.Contains(t, w.Header().Get("Content-Type"), "application/json")
				assert.Equal(t, tt.wantAllow, w.Header().Get("Allow"))
				if tt.wantCode != "" {
					assert.Equal(t, tt.wantCode, decodeError(t, w).Error.Code)
				}
				lines := h.logLines()
				require.Len(t, lines, 1)
				assert.Equal(t, tt.wantRoute, lines[0]["route"])
				assert.EqualValues(t, tt.wantStatus, lines[0]["status"])
			})
		})
	}
}

// chi answers a method it does not know with a 405 before it looks at the
// path: the log line still names the route when the path is one.
func TestUnknownMethodIsLoggedWithThePathsRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		for _, tt := range []struct{ path, allow string }{{"/api/chat", "POST"}, {"/api/nothing", ""}} {
			w := h.do(httptest.NewRequestWithContext(context.Background(), "PROPFIND", tt.path, nil))
			assert.Equal(t, http.StatusMethodNotAllowed, w.Code, tt.path)
			assert.Equal(t, tt.allow, w.Header().Get("Allow"), tt.path)
		}
		lines := h.logLines()
		require.Len(t, lines, 2)
		assert.Equal(t, "/api/chat", lines[0]["route"])
		assert.Equal(t, "unmatched", lines[1]["route"])
	})
}

func TestReadinessPingIsCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := h.do(httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, 0, h.sim.Stats().Requests)
	})
}

func TestHealthSaysVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := h.do(httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/health", nil))
		assert.JSONEq(t, `{"status": "ok", "version": "test", "backends": {"available": 1, "cooling": 0}}`, w.Body.String())
	})
}

func TestOrigins(t *testing.T) {
	tests := []struct {
		name, origin string
		wantStatus   int
		wantACAO     string
	}{
		{"exact origin", allowedOrigin, 200, allowedOrigin},
		{"wildcard subdomain", "https://team.example.org", 200, "https://team.example.org"},
		{"other site", "https://evil.example", 403, ""},
		{"lookalike suffix", "https://contoso.sharepoint.com.evil.example", 403, ""},
		{"wrong scheme", "http://contoso.sharepoint.com", 403, ""},
		{"no origin (CLI, services)", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				r := chatRequest(ask("hello"))
				r.Header.Set("Origin", tt.origin)
				if tt.origin == "" {
					r.Header.Del("Origin")
				}
				w := h.do(r)
				assert.Equal(t, tt.wantStatus, w.Code)
				assert.Equal(t, tt.wantACAO, w.Header().Get("Access-Control-Allow-Origin"))
				if tt.wantStatus == 403 {
					assert.Equal(t, "origin_not_allowed", decodeError(t, w).Error.Code)
					assert.Equal(t, 0, h.sim.Stats().Requests, "refused before any upstream call")
				}
			})
		})
	}
}

// The rows: with ALLOWED_ORIGINS=https://*.sharepoint.com a string
// match let a path or a fragment carry the suffix; origins are parsed, and
// the wildcard stands for whole leading labels only.
func TestWildcardOriginMatchesWholeLabels(t *testing.T) {
	tests := []struct {
		origin string
		want   int
	}{
		{"https://contoso.sharepoint.com", 200},
		{"https://a.b.sharepoint.com", 200},
		{"https://evil.com/.sharepoint.com", 403},
		{"https://evil.com#.sharepoint.com", 403},
		{"https://evil.com?.sharepoint.com", 403},
		{"https://evilsharepoint.com", 403},
		{"https://sharepoint.com", 403},
		{"https://contoso.sharepoint.com:8443", 403},
		{"null", 403},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, map[string]string{"ALLOWED_ORIGINS": "https://*.sharepoint.com"}, aoaitest.Options{})
				r := chatRequest(ask("hello"))
				r.Header.Set("Origin", tt.origin)
				w := h.do(r)
				assert.Equal(t, tt.want, w.Code)
				if tt.want == 200 {
					assert.Equal(t, tt.origin, w.Header().Get("Access-Control-Allow-Origin"))
					return
				}
				assert.Equal(t, "origin_not_allowed", decodeError(t, w).Error.Code)
				assert.Empty(t, w.Header().Values("Access-Control-Allow-Origin"), "an unchecked origin is never echoed")
				assert.Equal(t, 0, h.sim.Stats().Requests)
			})
		})
	}
}

// Two Origin headers, the allowed one first: refused, nothing echoed, for
// a request and for a preflight.
func TestTwoOriginHeadersAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		r := chatRequest(ask("hello"))
		r.Header.Set("Origin", allowedOrigin)
		r.Header.Add("Origin", "http://evil.example")
		w := h.do(r)
		assert.Equal(t, http.StatusForbidden, w.Code)
		assert.Equal(t, "origin_not_allowed", decodeError(t, w).Error.Code)
		assert.Empty(t, w.Header().Values("Access-Control-Allow-Origin"))
		assert.Equal(t, 0, h.sim.Stats().Requests)

		p := httptest.NewRequestWithContext(context.Background(), http.MethodOptions, "/api/chat", nil)
		p.Header.Set("Origin", allowedOrigin)
		p.Header.Add("Origin", "http://evil.example")
		p.Header.Set("Access-Control-Request-Method", "POST")
		w = h.do(p)
		assert.Equal(t, http.StatusForbidden, w.Code)
		assert.Empty(t, w.Header().Values("Access-Control-Allow-Origin"))
	})
}

func TestNoOriginIsAllowedWhenTheListIsEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"ALLOWED_ORIGINS": ""}, aoaitest.Options{})
		w := h.do(chatRequest(ask("hello")))
		assert.Equal(t, http.StatusForbidden, w.Code)
		assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
		r := chatRequest(ask("hello"))
		r.Header.Del("Origin")
		assert.Equal(t, http.StatusOK, h.do(r).Code)
	})
}

func TestPreflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		r := httptest.NewRequestWithContext(context.Background(), http.MethodOptions, "/api/chat", nil)
		r.Header.Set("Origin", allowedOrigin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-client-timeout-ms")
		w := h.do(r)
		assert.Equal(t, http.StatusNoContent, w.Code)
		assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
		assert.Contains(t, w.Header().Get("Access-Control-Allow-Methods"), "POST")
		assert.Equal(t, "authorization,content-type,x-client-timeout-ms", strings.ReplaceAll(w.Header().Get("Access-Control-Allow-Headers"), " ", ""))
		assert.NotEmpty(t, w.Header().Get("x-request-id"))

		r.Header.Set("Origin", "https://evil.example")
		assert.Equal(t, http.StatusForbidden, h.do(r).Code)
	})
}

func TestLogsOneLinePerRequestWithoutSecretsOrPrompts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		question := "what is the secret plan zebra-42"
		r := chatRequest(ask(question), "Authorization", "Bearer eyJ.token.value")
		decodeOK(t, h.do(r))
		h.do(chatRequest(ask("[[sim:status code=503]] zebra-42")))
		lines := h.logLines()
		require.Len(t, lines, 2)
		ok := lines[0]
		assert.EqualValues(t, 200, ok["status"])
		assert.Equal(t, "/api/chat", ok["route"])
		assert.EqualValues(t, 1, ok["upstreamAttempts"])
		assert.EqualValues(t, 200, ok["upstreamStatus"])
		assert.EqualValues(t, 200000, ok["budgetMs"])
		assert.Contains(t, ok, "upstreamMs")
		assert.Contains(t, ok, "promptMs")
		assert.NotZero(t, ok["promptTokens"])
		assert.NotZero(t, ok["completionTokens"])
		assert.NotEmpty(t, ok["requestId"])
		assert.Contains(t, ok, "elapsedMs")
		failed := lines[1]
		assert.EqualValues(t, 503, failed["status"])
		assert.Equal(t, "upstream_unavailable", failed["code"])
		assert.EqualValues(t, 503, failed["upstreamStatus"])
		all := h.logs.String()
		for _, secret := range []string{"zebra-42", simKey, "eyJ.token.value", "secret plan"} {
			assert.NotContains(t, all, secret)
		}
	})
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"sources":[{"title":"a","url":"https://x","text":"t"}],"maxTokens":5}`))
	f.Add([]byte(`{"messages":[`))
	f.Add([]byte("\xff"))
	f.Add([]byte(`{"messages":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.ChatRequest
		err := api.Decode(body, &req)
		if err == nil {
			return
		}
		var e *api.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusBadRequest, e.Status)
		assert.Equal(t, "invalid_request", e.Code)
		assert.NotContains(t, e.Message, "json:", "messages never leak decoder internals")
	})
}

// A wrong type is named by its field and the JSON it takes, never by Go's
// names for it.
func TestDecodeNamesTheFieldAndItsType(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"maxTokens":"x"}`, `The field "maxTokens" must be a whole number.`},
		{`{"maxTokens":1.5}`, `The field "maxTokens" must be a whole number.`},
		{`{"maxTokens":1e3}`, `The field "maxTokens" must be a whole number.`},
		{`{"messages":[{"role":5}]}`, `The field "messages.role" must be a string.`},
		{`{"messages":{}}`, `The field "messages" must be an array.`},
		{`{"documents":[{"data":5}]}`, `The field "documents.data" must be a base64 string.`},
		{`{"sources":[5]}`, `The field "sources" must be an object.`},
		{`{"MESSAGES":[]}`, `Unknown field "MESSAGES".`},
		{`{"messages":[],"messages":[]}`, `The field "messages" appears twice.`},
		{`{}{}`, `The request body must hold exactly one JSON object.`},
		{`{"messages":[`, `The request body is not valid JSON.`},
	}
	for _, tt := range tests {
		var req api.ChatRequest
		err := api.Decode([]byte(tt.body), &req)
		var e *api.Error
		require.ErrorAs(t, err, &e, tt.body)
		assert.Equal(t, tt.want, e.Message, tt.body)
	}
}

// HEAD is served wherever GET is, on a real server (net/http drops the
// body), and nowhere else.
func TestHeadIsServedWhereverGetIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		_, client := memnet.Serve(t, h.handler)
		for _, tt := range []struct {
			path string
			want int
		}{{"/api/health", 200}, {"/", 200}, {"/api/chat", 405}, {"/api/nothing", 404}} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, "http://timebox"+tt.path, nil)
			require.NoError(t, err)
			req.Header.Set("Origin", allowedOrigin)
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, tt.want, resp.StatusCode, tt.path)
			assert.Empty(t, body, tt.path)
			assert.Equal(t, allowedOrigin, resp.Header.Get("Access-Control-Allow-Origin"), tt.path)
		}
		lines := h.logLines()
		require.NotEmpty(t, lines)
		assert.Equal(t, "HEAD", lines[0]["method"])
		assert.EqualValues(t, 200, lines[0]["status"])
	})
}

// The refusals of content codings and charsets leave the plain UTF-8 body
// alone, however its headers spell that.
func TestPlainUTF8BodyIsServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		r := chatRequest(ask("a"), "Content-Encoding", "identity")
		r.Header.Set("Content-Type", `application/json; charset="UTF-8"`)
		w := h.do(r)
		assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	})
}
