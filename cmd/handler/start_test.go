package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// The tests start the real run on real sockets in one of two ways:
// startRun, over a simulator of its own, for tests of requests (it hands
// over the request lines of the log); startHandler, with only the settings
// given, for tests of what run says as it starts (it hands over every line).

// running is the real run on a real socket, against the simulator.
type running struct {
	addr     string
	start    map[string]any      // the start-up ("listening") line
	upstream chan struct{}       // a request reached the simulator
	logs     chan map[string]any // the request lines, in order
	cancel   context.CancelFunc  // what SIGTERM does (main's signal.NotifyContext)
	done     chan error          // run's result, read by wait
	once     sync.Once
	err      error
}

// startRun starts run with env over a simulator and test defaults, and
// waits until it listens.
func startRun(t *testing.T, env map[string]string) *running {
	t.Helper()
	upstream := make(chan struct{}, 100)
	aoai := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		upstream <- struct{}{}
		aoai.ServeHTTP(w, req)
	}))
	t.Cleanup(sim.Close)
	settings := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0",
		"AZURE_OPENAI_ENDPOINT":        sim.URL,
		"AZURE_OPENAI_DEPLOYMENT":      "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":         "k",
		"ALLOWED_ORIGINS":              "https://contoso.sharepoint.com",
	}
	for k, v := range env {
		settings[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	r := &running{upstream: upstream, logs: make(chan map[string]any, 100), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- run(ctx, nil, func(k string) string { return settings[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	require.True(t, lines.Scan(), "run logs where it listens")
	require.NoError(t, json.Unmarshal(lines.Bytes(), &r.start))
	require.Equal(t, "listening", r.start["msg"])
	r.addr = r.start["addr"].(string)
	go func() {
		for lines.Scan() {
			var line map[string]any
			if json.Unmarshal(lines.Bytes(), &line) == nil && line["msg"] == "request" {
				r.logs <- line
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = r.wait()
	})
	return r
}

// wait returns run's result once run has returned; a test that ends run
// itself reads it here, and the cleanup after it reads the same result.
func (r *running) wait() error {
	r.once.Do(func() { r.err = <-r.done })
	return r.err
}

// dial opens a raw connection that gives up (failing the test) well after
// every bound under test: a server that does not answer or close shows as
// a timeout here, not as a hung test.
func (r *running) dial(t *testing.T, giveUp time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(giveUp)))
	return c
}

// startHandler runs the binary's run on a free port with env, and returns
// its start-up ("listening") line and the log lines after it as they come.
func startHandler(t *testing.T, env map[string]string) (start map[string]any, logs <-chan map[string]any) {
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
	return first, lines
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
