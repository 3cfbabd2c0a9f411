package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// startHandler runs the binary's run on a free port with env, and returns
// its address and its log lines as they come.
func startHandler(t *testing.T, env map[string]string) (addr string, logs <-chan map[string]any) {
	t.Helper()
	env["FUNCTIONS_CUSTOMHANDLER_PORT"] = "0"
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, nil, func(k string) string { return env[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()
	lines := make(chan map[string]any, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-errc)
	})
	first := <-lines
	require.Equal(t, "listening", first["msg"])
	return first["addr"].(string), lines
}

// waitForLog returns the first log line whose msg contains text, failing
// after an upper bound (the handler is on real sockets).
func waitForLog(t *testing.T, logs <-chan map[string]any, text string) map[string]any {
	t.Helper()
	bound := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-logs:
			if !ok {
				t.Fatalf("no log line says %q", text)
			}
			if msg, _ := m["msg"].(string); strings.Contains(msg, text) {
				return m
			}
		case <-bound:
			t.Fatalf("no log line says %q within 10 s", text)
		}
	}
}

// With no API key and no Entra ID credential that can give a token (here
// DefaultAzureCredential's developer chain, none of whose tools is
// installed), the handler says so once at start-up, in a warning that says
// where to look, and every question is answered as the configuration error
// it is: 500 upstream_auth_unavailable, x-should-retry: false.
func TestRunSaysAtStartUpThatItCannotSignIn(t *testing.T) {
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "dev")
	t.Setenv("PATH", t.TempDir())
	upstream := httptest.NewServer(aoaitest.New(aoaitest.Options{AcceptBearer: true, Deployments: []string{"gpt-4o-mini"}}))
	defer upstream.Close()
	addr, logs := startHandler(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT": upstream.URL, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
	})

	warn := waitForLog(t, logs, "cannot sign in to Azure OpenAI")
	assert.Equal(t, "WARN", warn["level"])
	assert.Contains(t, warn["msg"], "az login")
	assert.Contains(t, warn["msg"], "AZURE_OPENAI_API_KEY")
	assert.Contains(t, warn["error"], "AzureCLICredential", "the cause, as azidentity names it")

	resp, err := http.Post("http://"+addr+"/api/chat", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, "false", resp.Header.Get("x-should-retry"))
	assert.Contains(t, string(body), `"upstream_auth_unavailable"`)
	line := waitForLog(t, logs, "request")
	assert.Equal(t, "upstream_auth_unavailable", line["code"], "the question's own line has it; the start-up warning is not repeated")
}

// The start-up sign-in does not delay readiness: the Functions host polls
// the port from the start, and a managed identity endpoint that has not
// answered yet must not keep it waiting.
func TestRunIsReadyWhileTheSignInWaits(t *testing.T) {
	asked := make(chan struct{}, 1)
	identity := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers; the handler's shutdown ends the wait
	}))
	t.Cleanup(identity.Close) // after the handler's shutdown, which ends the token request
	t.Setenv("IDENTITY_ENDPOINT", identity.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "secret")
	addr, _ := startHandler(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"IDENTITY_ENDPOINT": identity.URL + "/msi/token",
	})
	<-asked // the sign-in is under way

	// An upper bound only: the readiness ping is answered while the token
	// request waits (a real socket, so a bound and not a fake clock).
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
