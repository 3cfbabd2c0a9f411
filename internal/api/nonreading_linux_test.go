package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/config"
)

// These tests run on real sockets, in real time: what they guard against is
// CPU work (counting an answer's tokens) after the request's deadline,
// which virtual time does not see. They assert an upper bound only.

// largeAnswer is what the upstream of these tests sends: more text than a
// loopback connection buffers, in pieces of 16 KB, as fast as it is taken.
const largeAnswer = 7 << 20

// largeUpstream answers every chat call with largeAnswer bytes of text
// that is slow to count (random letters, with a space now and then: about
// 1 MB/s a core, where English words count at over 100 MB/s), streamed as
// Azure OpenAI streams; with stall, it then hangs until the call is
// cancelled, so the budget cuts the answer with its text in hand.
func largeUpstream(t *testing.T, stall bool) *httptest.Server {
	rnd := rand.New(rand.NewPCG(1, 2))
	text := make([]byte, 16<<10)
	for i := range text {
		text[i] = byte('a' + rnd.IntN(26))
		if rnd.IntN(40) == 0 {
			text[i] = ' '
		}
	}
	piece, _ := json.Marshal(string(text))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		}
		for sent := 0; sent < largeAnswer; sent += 16 << 10 {
			chunk(`{"content":`+string(piece)+`}`, "null")
		}
		if stall {
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		chunk(`{}`, `"stop"`)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// requestLines is a log writer that hands on each request line.
type requestLines chan map[string]any

func (c requestLines) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == "request" {
			c <- m
		}
	}
	return len(p), nil
}

// realStack serves the whole stack on a loopback socket with a budget of
// budgetFor, calling upstream; its request lines go to the returned channel.
func realStack(t *testing.T, upstream string, budgetFor time.Duration) (string, requestLines) {
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": upstream, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": simKey,
		"REQUEST_BUDGET": budgetFor.String(), "FAST_FAILURE_THRESHOLD": (budgetFor / 2).String(), "MIN_UPSTREAM_TIME": "100ms", "CLIENT_TIMEOUT_MARGIN": "100ms",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	lines := make(requestLines, 16)
	a, err := app.New(cfg, app.Seams{Logs: lines, Version: "test"})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(a.Handler)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, lines
}

// smallBuffers gives each connection it accepts a small send buffer, as a
// caller that stops reading gets a small receive buffer (dialSmall): a
// write to it blocks after some tens of KB, where loopback's own buffers
// would take megabytes first.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(16 << 10)
	}
	return c, err
}

// dialSmall connects to addr with a small receive buffer.
func dialSmall(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return errors.Join(err, serr)
	}}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitLine is the next request line, or a failure once giveUp has passed (a
// give-up far past the bound under test, not a bound).
func waitLine(t *testing.T, lines requestLines, giveUp time.Duration) map[string]any {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(giveUp):
		t.Fatalf("no request line within %s", giveUp)
		return nil
	}
}

// The deadline's 500 is written first: a JSON answer cut by the budget with
// 7 MB of text in hand reaches its reading caller at the budget, with its
// partial answer's tokens counted as they arrived. Before, the whole
// partial answer was counted first, before the 500 was written.
func TestDeadlineAnswerIsNotHeldByCounting(t *testing.T) {
	const budgetFor = 2 * time.Second
	base, lines := realStack(t, largeUpstream(t, true).URL, budgetFor)
	start := time.Now()
	resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(ask("Write a long report.")))
	require.NoError(t, err)
	took := time.Since(start) // to the answer's status and headers
	var body apiwire.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, apiwire.CodeDeadlineExceeded, body.Error.Code)
	require.NotNil(t, body.Partial)
	assert.Positive(t, body.Partial.CompletionTokens)
	// An upper bound: the budget, and a second to encode a 7 MB answer.
	assert.Less(t, took, budgetFor+time.Second, "the 500 came %s after the request", took)
	waitLine(t, lines, time.Minute)
}

// A stream whose caller stopped reading ends at the bound, with nothing
// counted after it: its tokens, delivered and abandoned, were counted as
// the pieces arrived. Before, once the last write gave up, the answer was
// counted whole, twice (what was delivered, and what was generated), with
// no deadline: ten 7 MB streams ended at 39-40 s with both cores busy on a
// 5 s budget. (The tens of KB a blocked caller takes count in a tenth of
// a second; under the race detector, as make test runs it, in about one.)
func TestStreamToAStalledReaderEndsByTheBound(t *testing.T) {
	const budgetFor = 3 * time.Second
	base, lines := realStack(t, largeUpstream(t, false).URL, budgetFor)
	c := dialSmall(t, strings.TrimPrefix(base, "http://"))
	body := ask("Write a long report.")
	_, err := fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)

	line := waitLine(t, lines, time.Minute)
	assert.Equal(t, true, line["writeTimedOut"], line)
	// An upper bound: the bound, and half a second for what follows the
	// last write (the log line itself).
	elapsed := time.Duration(line["elapsedMs"].(float64)) * time.Millisecond
	assert.Less(t, elapsed, budgetFor+budget.AnswerGrace+500*time.Millisecond, "the request ended %s after it began", elapsed)
	abandoned, _ := line["abandonedTokens"].(float64)
	assert.Positive(t, abandoned, "what the caller did not take is counted as abandoned")
}
