package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// The tests start the real run on real sockets through startHandler, with
// the settings given, which hands over the log lines after the start-up
// line; startRun is startHandler over a simulator of its own, for tests of
// requests, and hands over only the request lines.

// running is the real run on a real socket.
type running struct {
	addr     string
	start    map[string]any      // the start-up ("listening") line
	upstream chan struct{}       // startRun: a request reached the simulator
	logs     chan map[string]any // the lines after the start-up line that were kept, in order
	cancel   context.CancelFunc  // what SIGTERM does (main's signal.NotifyContext)
	done     chan struct{}       // closed once run has returned
	err      error               // run's result, once done is closed
}

// startHandler runs the binary's run on a free port with settings, and
// waits until it listens. r.logs carries the lines after the start-up line
// for which keep is true (every line when keep is nil); it is closed when
// run's output ends.
func startHandler(t *testing.T, settings map[string]string, keep func(line map[string]any) bool) *running {
	t.Helper()
	settings["FUNCTIONS_CUSTOMHANDLER_PORT"] = "0"
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	r := &running{logs: make(chan map[string]any, 100), cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = run(ctx, nil, func(k string) string { return settings[k] }, stdoutW, io.Discard)
		_ = stdoutW.Close()
		close(r.done)
	}()
	lines := bufio.NewScanner(stdoutR)
	require.True(t, lines.Scan(), "run logs where it listens")
	require.NoError(t, json.Unmarshal(lines.Bytes(), &r.start))
	require.Equal(t, "listening", r.start["msg"])
	r.addr = r.start["addr"].(string)
	go func() {
		defer close(r.logs)
		for lines.Scan() {
			var line map[string]any
			if json.Unmarshal(lines.Bytes(), &line) == nil && (keep == nil || keep(line)) {
				r.logs <- line
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, r.wait())
	})
	return r
}

// startRun starts run with env over a simulator and test defaults, and
// waits until it listens; r.logs carries the request lines.
func startRun(t *testing.T, env map[string]string) *running {
	t.Helper()
	simURL, upstream := simulator(t)
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT":   simURL,
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":    "k",
		"ALLOWED_ORIGINS":         "https://contoso.sharepoint.com",
	}
	maps.Copy(settings, env)
	r := startHandler(t, settings, func(line map[string]any) bool { return line["msg"] == "request" })
	r.upstream = upstream
	return r
}

// simulator serves the Azure OpenAI simulator (API key k, deployment
// gpt-4o-mini) on a loopback socket; arrived gets a value as each request
// reaches it.
func simulator(t *testing.T) (url string, arrived chan struct{}) {
	t.Helper()
	arrived = make(chan struct{}, 100)
	aoai := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		aoai.ServeHTTP(w, r)
	}))
	t.Cleanup(sim.Close)
	return sim.URL, arrived
}

// wait returns run's result once run has returned.
func (r *running) wait() error {
	<-r.done
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
