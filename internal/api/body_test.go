package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// TestABodyThatStopsArrivingIsAnsweredAtTheDeadline: a caller that sends
// the headers and part of the body, then nothing, gets the readable 500 at
// the request's deadline (the budget, or its own timeout minus the margin)
// instead of holding the handler until it hangs up; the connection is closed
// after the answer rather than left waiting for the rest; nothing goes
// upstream.
func TestABodyThatStopsArrivingIsAnsweredAtTheDeadline(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   time.Duration
	}{
		{"budget", "", 200 * time.Second},
		{"caller's timeout", "x-client-timeout-ms: 10000\r\n", 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				l, _ := memnet.Serve(t, h.handler)
				conn, err := l.DialContext(t.Context(), "tcp", "timebox")
				require.NoError(t, err)
				defer conn.Close()

				start := time.Now()
				part := `{"messages":[{"role":"user","content":"a long document`
				_, err = fmt.Fprintf(conn, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nOrigin: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
					allowedOrigin, tt.header, 10*len(part), part)
				require.NoError(t, err)

				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				require.NoError(t, err)
				assert.Equal(t, tt.want, time.Since(start))
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err, "the answer ends; the connection does not wait for the rest of the body")
				require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", body)
				var e apiwire.ErrorBody
				require.NoError(t, json.Unmarshal(body, &e))
				assert.Equal(t, "deadline_exceeded", e.Error.Code)
				assert.Contains(t, e.Error.Message, "took too long to arrive")
				assert.Equal(t, "false", resp.Header.Get("x-should-retry"))
				assertCORS(t, resp.Header)
				assert.True(t, resp.Close, "Connection: close: the rest of the body is never read as a request")
				assert.Equal(t, 0, h.sim.Stats().Requests, "no upstream call")
			})
		})
	}
}

// TestTheBodyAloneIsReadUnderTheDeadline: the body is read under the
// request's deadline, and while the upstream call is in flight the caller's
// connection carries none (net/http lifts it when the body is in). Were the
// body's deadline left on, the server's own read on the idle connection would
// fail at the request's deadline and cancel the request as if the caller had
// gone, racing the budget's 500. This pins timebox's reliance on net/http.
func TestTheBodyAloneIsReadUnderTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		l := &deadlineListener{Listener: memnet.Listen()}
		srv := &http.Server{Handler: h.handler}
		go func() { _ = srv.Serve(l) }()
		client := l.Listener.(*memnet.Listener).Client()
		t.Cleanup(func() { client.CloseIdleConnections(); _ = srv.Close() })

		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://timebox/api/chat", strings.NewReader(ask("[[sim:hang]] hi")))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", allowedOrigin)
		start := time.Now()
		done := make(chan *http.Response)
		go func() {
			resp, err := client.Do(req)
			assert.NoError(t, err)
			done <- resp
		}()
		synctest.Wait() // the body is read and the upstream hangs
		require.Equal(t, 1, h.sim.Stats().Requests)
		deadlines := l.conn.Load().deadlines()
		require.NotEmpty(t, deadlines)
		assert.Contains(t, deadlines, start.Add(200*time.Second), "the body was read under the request's deadline")
		assert.True(t, deadlines[len(deadlines)-1].IsZero(), "and lifted after it: %v", deadlines)

		resp := <-done
		defer resp.Body.Close()
		assert.Equal(t, 200*time.Second, time.Since(start))
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	})
}

// deadlineListener records the read deadlines set on the connection it
// accepted last.
type deadlineListener struct {
	net.Listener
	conn atomic.Pointer[deadlineConn]
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c}
	l.conn.Store(dc)
	return dc, nil
}

type deadlineConn struct {
	net.Conn
	mu  sync.Mutex
	set []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.set = append(c.set, t)
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) deadlines() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.set)
}
