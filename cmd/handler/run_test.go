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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// run end to end on real sockets: it listens where the host says, serves,
// and on shutdown lets the request in flight finish before returning.
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
	cancel()  // shut down

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
