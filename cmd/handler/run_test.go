package main

import (
	"bufio"
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

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// run end to end on real sockets: it listens where the host says, serves,
// and on the host's stop (SIGTERM, sent here to the test process itself)
// lets the request in flight finish before returning. Were the signal not
// caught, its default action would end the test binary.
func TestRunServesAndShutsDownGracefully(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	arrived := make(chan struct{}, 8)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()

	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0",
		"AZURE_OPENAI_ENDPOINT":        upstream.URL,
		"AZURE_OPENAI_DEPLOYMENT":      "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":         "k",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, nil, func(k string) string { return env[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()

	lines := bufio.NewScanner(stdoutR)
	require.True(t, lines.Scan(), "run logs where it listens")
	var listening struct{ Msg, Addr string }
	require.NoError(t, json.Unmarshal(lines.Bytes(), &listening))
	require.Equal(t, "listening", listening.Msg)
	go func() { // keep draining the log so run never blocks on it
		for lines.Scan() {
		}
	}()
	base := "http://" + listening.Addr

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
	<-arrived // the request is in flight, upstream
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))

	r := <-inflight
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, "the request in flight finished: %s", r.body)
	assert.Contains(t, r.body, `"answer"`)
	require.NoError(t, <-errc)

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
	upstream := httptest.NewServer(aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}}))
	defer upstream.Close()
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0",
		"AZURE_OPENAI_ENDPOINT":        upstream.URL,
		"AZURE_OPENAI_DEPLOYMENT":      "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":         "k",
		"AUTH_MODE":                    "entra",
		"AUTH_AUDIENCE":                "api://timebox-local",
		"AUTH_TENANTS":                 issuertest.DefaultTenant,
		"AZURE_AUTHORITY_HOST":         idp.URL,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, nil, func(k string) string { return env[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	require.True(t, lines.Scan())
	var listening struct{ Msg, Addr, AuthMode string }
	require.NoError(t, json.Unmarshal(lines.Bytes(), &listening))
	require.Equal(t, "listening", listening.Msg)
	assert.Equal(t, "entra", listening.AuthMode)
	go func() {
		for lines.Scan() {
		}
	}()

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
		req, _ := http.NewRequest(http.MethodPost, "http://"+listening.Addr+"/api/chat", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tt.status, resp.StatusCode)
	}
	cancel()
	require.NoError(t, <-errc)
}

// AUTH_MODE=none says so in the start-up line and warns.
func TestRunWarnsWhenAnonymous(t *testing.T) {
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0", "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081",
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, nil, func(k string) string { return env[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	var got []map[string]any
	for len(got) < 2 && lines.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m))
		got = append(got, m)
	}
	cancel()
	go func() {
		for lines.Scan() {
		}
	}()
	require.NoError(t, <-errc)
	require.Len(t, got, 2)
	assert.Equal(t, "none", got[0]["authMode"])
	assert.Equal(t, "WARN", got[1]["level"])
	assert.Contains(t, got[1]["msg"], "AUTH_MODE=none")
}

// An endpoint written as the OpenAI SDKs' samples write it for Azure
// (.../openai/v1/) starts with that path taken off: the start-up line names
// the root every call goes under, and a warning names what was taken off.
func TestRunWarnsOfTheEndpointPathItTookOff(t *testing.T) {
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0", "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081/openai/v1/",
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, nil, func(k string) string { return env[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	var got []map[string]any
	for len(got) < 2 && lines.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m))
		got = append(got, m)
	}
	cancel()
	go func() {
		for lines.Scan() {
		}
	}()
	require.NoError(t, <-errc)
	require.Len(t, got, 2)
	assert.Equal(t, "listening", got[0]["msg"])
	assert.Equal(t, "http://127.0.0.1:8081", got[0]["endpoint"])
	assert.Equal(t, "WARN", got[1]["level"])
	assert.Contains(t, got[1]["msg"], "AZURE_OPENAI_ENDPOINT: the path /openai/v1/ was taken off")
}
