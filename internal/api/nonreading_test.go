package api_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// sendAndNeverRead sends a chat request on a connection of l and never
// reads a byte of the answer: on an in-memory pipe, whose writes wait for
// the reader, the server's first write blocks, as one to a vanished
// caller's full socket buffer does.
func sendAndNeverRead(t *testing.T, l *memnet.Listener, path, body string, headers ...string) net.Conn {
	t.Helper()
	c, err := l.DialContext(context.Background(), "tcp", "timebox")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	var extra strings.Builder
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&extra, "%s: %s\r\n", headers[i], headers[i+1])
	}
	_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		path, extra.String(), len(body), body)
	require.NoError(t, err)
	return c
}

// A JSON answer to a caller that stopped reading ends by the same bound as
// a stream: the request's deadline (the budget, or the caller's shorter
// timeout) plus budget.AnswerGrace. Then the request is over (its log line
// written, saying writeTimedOut with the status it had answered) and its
// connection closed: nothing holds the answer. Before, nothing bounded the
// write: the request, its answer and its connection were held for as long
// as the caller kept the connection open.
func TestJSONAnswerToACallerThatStopsReadingEndsByTheBound(t *testing.T) {
	tests := []struct {
		name, path string
		headers    []string
		bound      time.Duration
		status     int
	}{
		{"the budget", "/api/chat", nil, 20*time.Second + budget.AnswerGrace, 200},
		{"the caller's shorter timeout", "/api/chat", []string{"x-client-timeout-ms", "10000"}, 8*time.Second + budget.AnswerGrace, 200}, // less the 2 s margin
		{"an answer of any route", "/api/nothing", nil, 20*time.Second + budget.AnswerGrace, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, map[string]string{"REQUEST_BUDGET": "20s", "FAST_FAILURE_THRESHOLD": "10s"}, aoaitest.Options{})
				l, _ := memnet.Serve(t, h.handler)
				c := sendAndNeverRead(t, l, tt.path, ask("hello"), tt.headers...)
				<-time.After(time.Hour) // and never read
				synctest.Wait()
				lines := h.logLines()
				require.Len(t, lines, 1, "the request ended")
				assert.EqualValues(t, tt.bound.Milliseconds(), lines[0]["elapsedMs"])
				assert.EqualValues(t, tt.status, lines[0]["status"], "the status it answered")
				assert.Equal(t, true, lines[0]["writeTimedOut"])
				assert.NotEqual(t, "client_gone", lines[0]["code"], "the caller is still there")
				// The server has let the connection go: the caller, reading at
				// last, finds its end.
				_, err := io.Copy(io.Discard, c)
				assert.NoError(t, err)
			})
		})
	}
}

// The deadline's own 500 is under the same bound: an answer cut by the
// budget with text in hand, to a caller that stopped reading, ends at the
// budget plus the grace, and its log line keeps the answer's code.
func TestDeadlineAnswerToACallerThatStopsReadingEndsByTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"REQUEST_BUDGET": "20s", "FAST_FAILURE_THRESHOLD": "10s"}, aoaitest.Options{})
		l, _ := memnet.Serve(t, h.handler)
		sendAndNeverRead(t, l, "/api/chat", ask("[[sim:hang tokens=5]] hello"))
		<-time.After(time.Hour)
		synctest.Wait()
		lines := h.logLines()
		require.Len(t, lines, 1, "the request ended")
		assert.EqualValues(t, (20*time.Second + budget.AnswerGrace).Milliseconds(), lines[0]["elapsedMs"])
		assert.EqualValues(t, 500, lines[0]["status"])
		assert.Equal(t, "deadline_exceeded", lines[0]["code"])
		assert.Equal(t, true, lines[0]["writeTimedOut"])
		assert.EqualValues(t, 5, lines[0]["completionTokens"], "the partial answer's tokens, counted as they came")
		assert.Nil(t, lines[0]["completionTokensEstimated"])
	})
}

// The OpenAI dialect's stream is under the same bound, and logged alike.
func TestOpenAIStreamToACallerThatStopsReadingEndsByTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"REQUEST_BUDGET": "20s", "FAST_FAILURE_THRESHOLD": "10s"}, aoaitest.Options{})
		l, _ := memnet.Serve(t, h.handler)
		sendAndNeverRead(t, l, "/openai/v1/chat/completions",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"[[sim:hang tokens=5]] hello"}],"stream":true}`)
		<-time.After(time.Hour)
		synctest.Wait()
		lines := h.logLines()
		require.Len(t, lines, 1, "the request ended")
		assert.EqualValues(t, (20*time.Second + budget.AnswerGrace).Milliseconds(), lines[0]["elapsedMs"])
		assert.EqualValues(t, 200, lines[0]["status"])
		assert.Equal(t, true, lines[0]["writeTimedOut"])
		assert.NotEqual(t, "client_gone", lines[0]["code"])
	})
}
