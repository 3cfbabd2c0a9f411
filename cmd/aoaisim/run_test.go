package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/issuertest"
)

// lines collects what run writes to stdout, one JSON log line at a time.
type lines struct {
	mu  sync.Mutex
	all []map[string]any
	new chan map[string]any
}

func follow(t *testing.T, r io.Reader) *lines {
	l := &lines{new: make(chan map[string]any, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsed": sc.Text()}
			}
			l.mu.Lock()
			l.all = append(l.all, m)
			l.mu.Unlock()
			l.new <- m
		}
		close(l.new)
	}()
	return l
}

// next returns the next line whose msg is msg.
func (l *lines) next(t *testing.T, msg string) map[string]any {
	t.Helper()
	for m := range l.new {
		if m["msg"] == msg {
			return m
		}
	}
	require.FailNow(t, "no log line "+msg)
	return nil
}

func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	logs := follow(t, pr)
	done := make(chan error, 1)
	getenv := func(k string) string {
		if k == "AOAISIM_API_KEY" {
			return "from-env"
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-deployments", "gpt-4o, gpt-4", "-ttft", "0", "-per-token", "5ms", "-tpm", "100000"}, getenv, pw, io.Discard)
		_ = pw.Close()
	}()
	started := logs.next(t, "aoaisim listening")
	endpoint, _ := started["endpoint"].(string)
	require.True(t, strings.HasPrefix(endpoint, "http://127.0.0.1:"), endpoint)
	assert.Equal(t, "api-key", started["auth"])

	body := `{"messages":[{"role":"user","content":"Count to 3, secretly"}],"max_tokens":10}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/openai/deployments/gpt-4/chat/completions?api-version=2024-10-21", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("api-key", "from-env")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), `"content":"1, 2, 3."`)
	assert.Equal(t, "100000", resp.Header.Get("x-ratelimit-limit-tokens"))

	line := logs.next(t, "aoai request")
	assert.Equal(t, float64(200), line["status"])
	assert.Equal(t, "gpt-4", line["deployment"])
	assert.Equal(t, "api-key", line["auth"])

	// Shutdown is graceful: a stream under way when the signal comes is
	// finished, not cut.
	req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint+"/openai/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Count to 20"}]}`))
	require.NoError(t, err)
	req.Header.Set("api-key", "from-env")
	resp, err = http.DefaultClient.Do(req) // returns with the headers
	require.NoError(t, err)
	cancel()
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.True(t, strings.HasSuffix(string(b), "data: [DONE]\n\n"), "the stream was finished: %s", b)

	require.NoError(t, <-done)
	stopped := logs.next(t, "aoaisim stopped")
	assert.Equal(t, float64(2), stopped["requests"])
	assert.Equal(t, float64(2), stopped["completed"])
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, l := range logs.all {
		raw, _ := json.Marshal(l)
		assert.NotContains(t, string(raw), "secretly", "no prompt text in logs")
		assert.NotContains(t, string(raw), "from-env", "no key in logs")
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"bad duration", []string{"-ttft", "soon"}, "invalid value"},
		{"negative", []string{"-per-token", "-1s", "-tpm", "-5"}, "must not be negative"},
		{"no deployments", []string{"-deployments", " , "}, "names none"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"bad address", []string{"-addr", "not an address"}, "listen"},
		{"bad backend", []string{"-backend", "East US"}, "-backend \"East US\" must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, func(string) string { return "" }, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// With -issuer the simulator's address is also Entra ID for make run: the
// metadata names it, the token endpoint mints, and the Azure OpenAI routes
// still answer.
func TestRunServesTheIssuerToo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	logs := follow(t, pr)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-ttft", "0", "-per-token", "0", "-issuer"}, func(string) string { return "" }, pw, io.Discard)
		_ = pw.Close()
	}()
	started := logs.next(t, "aoaisim listening")
	base, _ := started["authority"].(string)
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), "%v", started)
	assert.Equal(t, base+"/"+issuertest.DefaultTenant+"/oauth2/v2.0/token", started["token_endpoint"])

	resp, err := http.Get(base + "/" + issuertest.DefaultTenant + "/v2.0/.well-known/openid-configuration")
	require.NoError(t, err)
	var meta struct{ Issuer string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&meta))
	_ = resp.Body.Close()
	assert.Equal(t, base+"/"+issuertest.DefaultTenant+"/v2.0", meta.Issuer)

	resp, err = http.PostForm(started["token_endpoint"].(string), url.Values{"scope": {"api://timebox-local/user_impersonation"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Post(base+"/openai/v1/chat/completions", "application/json", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the simulator still answers")
	cancel()
	require.NoError(t, <-done)
}
