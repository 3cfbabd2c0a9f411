package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/issuertest"
)

// run end to end on real sockets: it listens where the host says, serves,
// and on the host's stop (SIGTERM, sent here to the test process itself)
// lets the request in flight finish before returning. Were the signal not
// caught, its default action would end the test binary.
func TestRunServesAndShutsDownGracefully(t *testing.T) {
	r := startRun(t, nil)
	base := "http://" + r.addr

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the host's readiness ping")

	type result struct {
		status int
		body   string
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		body := `{"messages":[{"role":"user","content":"[[sim:slow ms=300]] hello"}]}`
		resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			inflight <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		inflight <- result{status: resp.StatusCode, body: string(b)}
	}()
	<-r.upstream // the request is in flight, upstream
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))

	res := <-inflight
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusOK, res.status, "the request in flight finished: %s", res.body)
	assert.Contains(t, res.body, `"answer"`)
	require.NoError(t, r.wait())

	_, err = http.Get(base + "/api/health")
	assert.Error(t, err, "nothing listens after shutdown")
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"REQUEST_BUDGET": "240s"}[k]
	}, io.Discard, io.Discard)
	require.Error(t, err)
	for _, name := range []string{"REQUEST_BUDGET", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT"} {
		assert.Contains(t, err.Error(), name)
	}
}

func TestRunTakesNoArguments(t *testing.T) {
	assert.Error(t, run(context.Background(), []string{"--port", "1"}, func(string) string { return "" }, io.Discard, io.Discard))
}

// easyauth outside Azure would trust X-MS-CLIENT-PRINCIPAL headers anyone can
// forge: run refuses to start, and says why.
func TestRunRefusesEasyAuthOutsideAzure(t *testing.T) {
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{
			"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
			"AUTH_MODE": "easyauth",
		}[k]
	}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WEBSITE_AUTH_ENABLED is not True")
	assert.Contains(t, err.Error(), "anyone could forge the header")
}

// The binary in entra mode on real sockets, against the local issuer on a
// loopback port: the start-up line names the mode, a token from the issuer's
// token endpoint is served, no token is a 401.
func TestRunInEntraMode(t *testing.T) {
	iss, err := issuertest.New()
	require.NoError(t, err)
	idp := httptest.NewServer(iss)
	defer idp.Close()
	r := startRun(t, map[string]string{
		"AUTH_MODE":            "entra",
		"AUTH_AUDIENCE":        "api://timebox-local",
		"AUTH_TENANTS":         issuertest.DefaultTenant,
		"AZURE_AUTHORITY_HOST": idp.URL,
	})
	assert.Equal(t, "entra", r.start["authMode"])

	resp, err := http.PostForm(idp.URL+"/"+issuertest.DefaultTenant+"/oauth2/v2.0/token", url.Values{"scope": {"api://timebox-local/access_as_user"}})
	require.NoError(t, err)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	_ = resp.Body.Close()

	for _, tt := range []struct {
		auth   string
		status int
	}{{"", http.StatusUnauthorized}, {"Bearer " + tok.AccessToken, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+"/api/chat", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tt.status, resp.StatusCode)
	}
	r.cancel()
	require.NoError(t, r.wait())
}

// What run says as it starts: the start-up line names what it resolved
// from the settings, and the line after it warns of what the operator
// should know. AUTH_MODE=none says so and warns. An endpoint written as the
// OpenAI SDKs' samples write it for Azure (.../openai/v1/) starts with that
// path taken off: the start-up line names the root every call goes under,
// and the warning names what was taken off.
func TestRunWarnsAtStartUp(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		start    map[string]any // fields of the start-up line
		warning  string         // what the next line warns of
	}{
		{"anonymous", "http://127.0.0.1:8081",
			map[string]any{"authMode": "none"}, "AUTH_MODE=none"},
		{"endpoint path taken off", "http://127.0.0.1:8081/openai/v1/",
			map[string]any{"endpoint": "http://127.0.0.1:8081"}, "AZURE_OPENAI_ENDPOINT: the path /openai/v1/ was taken off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startHandler(t, map[string]string{
				"AZURE_OPENAI_ENDPOINT": tt.endpoint, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
			}, nil)
			for k, v := range tt.start {
				assert.Equal(t, v, r.start[k], k)
			}
			next := waitForLog(t, r.logs, "") // the next line, whatever it says
			assert.Equal(t, "WARN", next["level"])
			assert.Contains(t, next["msg"], tt.warning)
		})
	}
}
