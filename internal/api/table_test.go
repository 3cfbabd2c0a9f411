package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/testlog"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// Every code of docs/api.md that the chat route can give without
// documents or pages, through the real handler, the real azcore client and
// the simulator.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		code       string
		status     int
		retryable  bool
		env        map[string]string
		sim        aoaitest.Options
		request    func() *http.Request
		wantUpCall bool
	}{
		{code: "invalid_request", status: 400, request: func() *http.Request { return chatRequest(`{"messages":[{"role":"tool","content":"x"}]}`) }},
		{code: "content_filtered", status: 400, request: func() *http.Request { return chatRequest(ask("[[sim:filter]] x")) }, wantUpCall: true},
		{code: "origin_not_allowed", status: 403, request: func() *http.Request {
			r := chatRequest(ask("x"))
			r.Header.Set("Origin", "https://evil.example")
			return r
		}},
		{code: "not_found", status: 404, request: func() *http.Request {
			r := chatRequest(ask("x"))
			r.URL.Path = "/api/chats"
			return r
		}},
		{code: "method_not_allowed", status: 405, request: func() *http.Request {
			r := chatRequest(ask("x"))
			r.Method = http.MethodPut
			return r
		}},
		{code: "body_too_large", status: 413, request: func() *http.Request { return chatRequest(ask(strings.Repeat("x", api.MaxBodyBytes))) }},
		{code: "prompt_too_large", status: 413, sim: aoaitest.Options{ContextWindow: 1100}, request: func() *http.Request {
			return chatRequest(ask(strings.Repeat("many words ", 200)))
		}, wantUpCall: true},
		{code: "unsupported_media_type", status: 415, request: func() *http.Request {
			r := chatRequest(ask("x"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}},
		{code: "rate_limited", status: 429, retryable: true, request: func() *http.Request {
			return chatRequest(ask("[[sim:throttle s=59]] x"), "x-client-timeout-ms", "30000")
		}, wantUpCall: true},
		{code: "upstream_error", status: 502, retryable: true, request: func() *http.Request { return chatRequest(ask("[[sim:reset]] x")) }, wantUpCall: true},
		{code: "upstream_unavailable", status: 503, retryable: true, request: func() *http.Request { return chatRequest(ask("[[sim:status code=503]] x")) }, wantUpCall: true},
		{code: "deadline_exceeded", status: 500, request: func() *http.Request { return chatRequest(ask("[[sim:hang]] x")) }, wantUpCall: true},
		{code: "upstream_error", status: 500, request: func() *http.Request { return chatRequest(ask("[[sim:status code=504 after=30000]] x")) }, wantUpCall: true},
		{code: "upstream_misconfigured", status: 500, env: map[string]string{"AZURE_OPENAI_API_KEY": "wrong-key"}, request: func() *http.Request { return chatRequest(ask("x")) }, wantUpCall: true},
		{code: "upstream_misconfigured", status: 500, env: map[string]string{"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-typo"}, request: func() *http.Request { return chatRequest(ask("x")) }, wantUpCall: true},
		{code: "upstream_misconfigured", status: 500, env: map[string]string{"AZURE_OPENAI_API_VERSION": "2024-10-21", "AZURE_OPENAI_DEPLOYMENT": "gone"}, request: func() *http.Request { return chatRequest(ask("x")) }, wantUpCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.env, tt.sim)
				w := h.do(tt.request())
				require.Equal(t, tt.status, w.Code, w.Body.String())
				assert.Equal(t, tt.code, decodeError(t, w).Error.Code)
				if tt.retryable {
					assert.Empty(t, w.Header().Get("x-should-retry"))
				} else {
					assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				}
				if w.Code != http.StatusForbidden {
					assertCORS(t, w.Header())
				}
				assert.Equal(t, tt.wantUpCall, h.sim.Stats().Requests > 0)
			})
		})
	}
}

// panickingChat panics with v, "boom" when nil.
type panickingChat struct{ v any }

func (p panickingChat) Complete(context.Context, *aoai.Request) (*aoai.Response, error) {
	if p.v != nil {
		panic(p.v)
	}
	panic("boom")
}

// A handler that aborts (http.ErrAbortHandler) is let through to net/http,
// which drops the connection without an answer: no 500 is written, and no
// log line.
func TestAbortedHandlerIsLetThrough(t *testing.T) {
	counter, err := tokens.New("o200k_base")
	require.NoError(t, err)
	logs := &testlog.Buffer{}
	h := &harness{t: t, logs: logs, handler: api.New(api.Options{
		Budget: 200 * time.Second, MaxTokens: 1024, ContextWindow: 128000, AllowedOrigins: []string{allowedOrigin},
		Chat: panickingChat{http.ErrAbortHandler}, Tokens: counter, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Caller: caller.Anonymous{},
	})}
	w := httptest.NewRecorder()
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() { h.handler.ServeHTTP(w, chatRequest(ask("x"))) })
	assert.False(t, w.Flushed)
	assert.Empty(t, w.Body.String())
	assert.Empty(t, h.logLines())
}

// A panic anywhere below the middleware is a 500 internal_error that the
// browser can still read, and the server keeps serving.
func TestPanicIsAReadable500(t *testing.T) {
	counter, err := tokens.New("o200k_base")
	require.NoError(t, err)
	logs := &testlog.Buffer{}
	h := &harness{t: t, logs: logs, handler: api.New(api.Options{
		Budget: 200 * time.Second, MaxTokens: 1024, ContextWindow: 128000, AllowedOrigins: []string{allowedOrigin},
		Chat: panickingChat{}, Tokens: counter, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Caller: caller.Anonymous{},
	})}
	for range 2 {
		w := h.do(chatRequest(ask("x")))
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		assert.Equal(t, "internal_error", decodeError(t, w).Error.Code)
		assert.Equal(t, "false", w.Header().Get("x-should-retry"))
		assertCORS(t, w.Header())
		assert.NotContains(t, w.Body.String(), "boom")
	}
	lines := h.logLines()
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0]["error"], "boom", "the detail goes to the log")
}

type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "entra-token"}, nil
}

// Entra ID: with no API key, the stack calls Azure OpenAI with a bearer
// token from its credential (the managed identity's in production; a static
// token here, where no Entra ID is reachable).
func TestBearerAuth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"AZURE_OPENAI_API_KEY": ""}, aoaitest.Options{AcceptBearer: true},
			withUpstreamCredential(staticToken{}))
		resp := decodeOK(t, h.do(chatRequest(ask("hi"))))
		assert.NotEmpty(t, resp.Answer)
		recs := h.sim.Requests()
		require.Len(t, recs, 1)
		assert.Equal(t, "bearer", recs[0].Auth)
	})
}
