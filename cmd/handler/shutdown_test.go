package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/testlog"
)

// closeNotingListener is a loopback listener whose connections say when
// the server has closed them: the one thing a client cannot see of a
// connection it has already read to its end.
type closeNotingListener struct {
	net.Listener
	accepted chan *closeNotingConn
}

func (l closeNotingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	nc := &closeNotingConn{TCPConn: c.(*net.TCPConn), closed: make(chan struct{})}
	l.accepted <- nc
	return nc, nil
}

// closeNotingConn is a server's end of a connection; its embedded
// *net.TCPConn keeps CloseWrite, which linger uses.
type closeNotingConn struct {
	*net.TCPConn
	once   sync.Once
	closed chan struct{}
}

func (c *closeNotingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.TCPConn.Close()
}

// SIGTERM right after an early answer to a client still uploading: the
// connection lingers half-closed (bodyConn.linger), taken over from
// net/http, so http.Server.Shutdown neither sees nor waits for it. run's
// shutdown waits for it too: when serve returns (and the process would
// exit), the server has closed it itself, as linger does, at most half a
// second after the answer. Before, serve returned at once, and the exit
// would close it with the client's bytes unread: a reset that can reach the
// client before it reads its answer.
func TestShutdownWaitsForALingeringConnection(t *testing.T) {
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT":   "http://127.0.0.1:8081", // never called: the answer is an early 415
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":    "k",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	a, err := app.New(cfg, app.Seams{Version: "test"})
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := closeNotingListener{Listener: raw, accepted: make(chan *closeNotingConn, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, cfg, a) }()

	c, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	// A 1 MB upload refused for its type after its first kilobyte.
	_, err = fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n%s", strings.Repeat("a", 1024))
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	// The end of the stream after the answer is linger's first step (its
	// half-close): the connection lingers now, while the client is silent.
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	server := <-ln.accepted

	cancel() // SIGTERM
	require.NoError(t, <-done)
	select {
	case <-server.closed:
	default:
		t.Fatal("serve returned while the connection lingered: the exit would reset it")
	}
}

// nonReader is a caller that sends its request and never reads a byte of
// the answer: on an in-memory pipe, whose writes wait for the reader, the
// server's first write to it blocks, as one to a vanished caller's full
// socket buffer does.
func nonReader(t *testing.T, ln *memnet.Listener, headers, body string) net.Conn {
	t.Helper()
	c, err := ln.DialContext(context.Background(), "tcp", "timebox")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		headers, len(body), body)
	require.NoError(t, err)
	return c
}

// SIGTERM while callers that stopped reading hold answers: serve returns
// (the process exits 0) within the longest budget plus the answer's grace,
// and every request's log line is written. Before, a stream's last write
// could wait the grace past its deadline while shutdown gave up a second
// past the budget, and a JSON answer's write had no bound at all: exit 1,
// and the stream's line never written.
func TestShutdownWithCallersThatStopReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		settings := map[string]string{
			"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
			"AZURE_OPENAI_API_KEY": "k", "REQUEST_BUDGET": "5s", "FAST_FAILURE_THRESHOLD": "2s",
		}
		cfg, err := config.Load(func(k string) string { return settings[k] })
		require.NoError(t, err)
		_, upstream := memnet.Serve(t, aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}}))
		var logs testlog.Buffer
		a, err := app.New(cfg, app.Seams{Logs: &logs, Version: "test", Upstream: upstream})
		require.NoError(t, err)
		ln := memnet.Listen()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- serve(ctx, ln, cfg, a) }()

		callers := []struct{ name, headers string }{
			{"stream", "Accept: text/event-stream\r\n"},
			{"JSON", ""},
		}
		for _, c := range callers {
			nonReader(t, ln, c.headers, `{"messages":[{"role":"user","content":"hello"}]}`)
		}
		synctest.Wait() // every answer's first write is blocked on its caller

		cancel() // SIGTERM
		require.NoError(t, <-done, "the process exits 0")
		var lines []map[string]any
		dec := json.NewDecoder(strings.NewReader(logs.String()))
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				break
			}
			if m["msg"] == "request" {
				lines = append(lines, m)
			}
		}
		require.Len(t, lines, len(callers), "one log line per request: %s", logs.String())
		for _, l := range lines {
			assert.LessOrEqual(t, l["elapsedMs"], float64((cfg.Budget + budget.AnswerGrace).Milliseconds()), l)
			assert.Equal(t, true, l["writeTimedOut"], l)
		}
	})
}
