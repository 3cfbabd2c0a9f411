package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// earlyAnswers are requests the handler answers without reading their body,
// as raw request lines and headers: the early-answer tests send each with a
// body that stalls or that has all arrived.
var earlyAnswers = []struct {
	name, method, path, headers string
	status                      int
}{
	{"415 wrong content type", "POST", "/api/chat", "Content-Type: text/plain\r\n", 415},
	{"405 wrong method", "PUT", "/api/chat", "Content-Type: application/json\r\n", 405},
	{"404 unknown route", "POST", "/api/nothing", "Content-Type: application/json\r\n", 404},
	{"403 origin not allowed", "POST", "/api/chat", "Content-Type: application/json\r\nOrigin: https://evil.example\r\n", 403},
	{"400 bad timeout header", "POST", "/api/chat", "Content-Type: application/json\r\nx-client-timeout-ms: soon\r\n", 400},
}

// The early-answer row, on real sockets: a request whose body
// stalls (Content-Length 100, one byte sent) and that is answered without
// reading it gets its answer at once, with Connection: close, and then the
// connection closes; the log line says what happened. Before, net/http
// drained the body before answering: no answer, the connection held for
// ever.
func TestEarlyAnswerToAStalledBodyClosesTheConnection(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "60s"})
	for _, tt := range earlyAnswers {
		t.Run(tt.name, func(t *testing.T) {
			// Far below the 60 s budget: the answer and the close must not
			// wait for it.
			c := r.dial(t, 20*time.Second)
			_, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: timebox\r\n%sContent-Length: 100\r\n\r\n{", tt.method, tt.path, tt.headers)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "an answer, without the rest of the body")
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.True(t, resp.Close, "Connection: close")
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "the server closed the connection (a timeout here means it kept it)")

			line := <-r.logs
			assert.EqualValues(t, tt.status, line["status"])
			assert.Equal(t, true, line["bodyUnread"])
			assert.Less(t, line["elapsedMs"], float64(60_000))
		})
	}
}

// An early answer to a client that is still sending its body (a large
// upload refused before it is read) reaches the client: Go's http.Client,
// like a browser, reads an answer that arrives while it writes, unless the
// server's close resets the connection first, which a plain close with
// unread bytes does (19 of 20 of these uploads then failed with a network
// error). The connection lingers half-closed instead (bodyConn.linger).
func TestEarlyAnswerReachesAClientStillSendingItsBody(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "60s"})
	body := bytes.Repeat([]byte("a"), 16<<20)
	tests := []struct {
		name, method, path, contentType, origin string
		status                                  int
	}{
		{"415 wrong content type", "POST", "/api/chat", "text/plain", "", 415},
		{"404 unknown route", "POST", "/api/nothing", "application/json", "", 404},
		{"403 origin not allowed", "POST", "/api/chat", "application/json", "https://evil.example", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 5 {
				// A connection of its own each time, as a browser's
				// upload after a refused one would have.
				c := &http.Client{Transport: &http.Transport{}}
				req, err := http.NewRequest(tt.method, "http://"+r.addr+tt.path, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", tt.contentType)
				if tt.origin != "" {
					req.Header.Set("Origin", tt.origin)
				}
				resp, err := c.Do(req)
				require.NoError(t, err, "the answer, not a reset")
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				assert.Equal(t, tt.status, resp.StatusCode)
				assert.True(t, resp.Close, "Connection: close")
				line := <-r.logs
				assert.Equal(t, true, line["bodyUnread"])
			}
		})
	}
}

// An early answer to a request whose body has all arrived, though the
// handler never read it (a small JSON body sent as text/plain, to an
// unknown route, from an origin refused), keeps the connection, as any
// other answer does: no Connection: close, and the next request on it, even
// one already sent behind it (pipelined), is answered. Closing it (without
// Connection: close) made a keep-alive client's next request on it fail.
func TestEarlyAnswerToAWholeBodyKeepsTheConnection(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "60s"})
	const body = `{"messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range earlyAnswers {
		t.Run(tt.name, func(t *testing.T) {
			c := r.dial(t, 20*time.Second)
			// The refused request and a health check behind it, in one write.
			_, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: timebox\r\n%sContent-Length: %d\r\n\r\n%sGET /api/health HTTP/1.1\r\nHost: timebox\r\n\r\n",
				tt.method, tt.path, tt.headers, len(body), body)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.False(t, resp.Close, "no Connection: close")
			line := <-r.logs
			assert.EqualValues(t, tt.status, line["status"])
			assert.Nil(t, line["bodyUnread"], "the body had arrived")

			next, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "the request behind it is answered on the same connection")
			_, _ = io.Copy(io.Discard, next.Body)
			assert.Equal(t, http.StatusOK, next.StatusCode)
			assert.EqualValues(t, "/api/health", (<-r.logs)["route"])
		})
	}
}

// An early answer to a client that asked for 100 Continue before sending
// its body (Expect: 100-continue, as curl and .NET's HttpClient do for large
// bodies) is the answer itself, never a 100 Continue inviting the upload it
// refuses; it says Connection: close and the connection closes, as net/http
// closes one whose 100-continue body it never read.
func TestEarlyAnswerToAnExpectContinueRequestSendsNoContinue(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "60s"})
	for _, tt := range []struct {
		name, path, contentType string
		status                  int
	}{
		{"415 wrong content type", "/api/chat", "text/plain", 415},
		{"404 unknown route", "/api/nothing", "application/json", 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := r.dial(t, 20*time.Second)
			_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: timebox\r\nContent-Type: %s\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", tt.path, tt.contentType)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			assert.Equal(t, tt.status, resp.StatusCode, "the answer, not 100 Continue")
			assert.True(t, resp.Close, "Connection: close")
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "the server closed the connection")
			assert.EqualValues(t, tt.status, (<-r.logs)["status"])
		})
	}
}

// A caller that hangs up halfway through its body has gone away, like one
// that hangs up while Azure OpenAI answers: the log line says 499
// client_gone at once, not a 500 deadline_exceeded ("took too long to
// arrive") for a request whose time had not run out.
func TestCallerGoneMidBodyIsLoggedAsGone(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "60s"})
	c := r.dial(t, 20*time.Second)
	_, err := fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"messages\":")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	line := <-r.logs
	assert.EqualValues(t, 499, line["status"])
	assert.Equal(t, "client_gone", line["code"])
	assert.Less(t, line["elapsedMs"], float64(60_000))
}

// A body that stalls on a route that reads it is cut at the request's
// budget: the answer is the 500 deadline_exceeded, then the connection
// closes. A slow header (slowloris) keeps its own 10 s limit.
func TestStalledBodyAndHeadersAreBounded(t *testing.T) {
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "3s", "FAST_FAILURE_THRESHOLD": "1s", "CLIENT_TIMEOUT_MARGIN": "1s"})

	body := r.dial(t, 20*time.Second)
	_, err := fmt.Fprintf(body, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	headers := r.dial(t, 20*time.Second)
	_, err = fmt.Fprintf(headers, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: appl")
	require.NoError(t, err)

	br := bufio.NewReader(body)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(b), "deadline_exceeded")
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	line := <-r.logs
	assert.EqualValues(t, 500, line["status"])
	assert.GreaterOrEqual(t, line["elapsedMs"], float64(3000), "the log line says when the answer went")

	// The slow header: no request line is ever complete, so no log line;
	// the server hangs up (a 408 or nothing) at ReadHeaderTimeout.
	rest, err := io.ReadAll(headers)
	require.False(t, os.IsTimeout(err), "the server kept a slow header open past 10 s")
	assert.True(t, len(rest) == 0 || strings.HasPrefix(string(rest), "HTTP/1.1 408"), string(rest))
}

// The shutdown row, on real sockets: SIGTERM (run's context ending)
// with a stalled body, a request in flight upstream, an idle keep-alive
// connection, a connection that sent nothing and a header arriving slowly.
// Every request in flight is answered (the stalled body with its 500 at the
// budget), the rest are closed, and run returns nil (exit 0) no later than
// the longest budget in flight plus a second. Before, it waited for the
// stalled connection until budget + 5 s and returned an error (exit 1).
func TestShutdownEndsWithEveryRequestAnswered(t *testing.T) {
	const budget = 3 * time.Second
	r := startRun(t, map[string]string{"REQUEST_BUDGET": "3s", "FAST_FAILURE_THRESHOLD": "1s", "CLIENT_TIMEOUT_MARGIN": "1s"})
	giveUp := budget + 10*time.Second

	stalledAt := time.Now()
	stalled := r.dial(t, giveUp)
	// Expect: 100-continue, so that the server's "go on" says the handler
	// is reading the body: the request is in flight before SIGTERM.
	_, err := fmt.Fprintf(stalled, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	stalledR := bufio.NewReader(stalled)
	goOn, err := http.ReadResponse(stalledR, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, goOn.StatusCode)
	_, err = fmt.Fprintf(stalled, "{")
	require.NoError(t, err)

	slow := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post("http://"+r.addr+"/api/chat", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"[[sim:slow ms=1500]] hello"}]}`))
		if err != nil {
			slow <- nil
			return
		}
		slow <- resp
	}()
	<-r.upstream // the slow request is in flight, upstream

	idle := r.dial(t, giveUp)
	_, err = fmt.Fprintf(idle, "GET /api/health HTTP/1.1\r\nHost: timebox\r\n\r\n")
	require.NoError(t, err)
	idleR := bufio.NewReader(idle)
	resp, err := http.ReadResponse(idleR, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	<-r.logs // the health check's line

	silent := r.dial(t, giveUp)
	slowHeader := r.dial(t, giveUp)
	_, err = fmt.Fprintf(slowHeader, "POST /api/chat HTTP/1.1\r\nHost: time")
	require.NoError(t, err)

	r.cancel() // SIGTERM
	select {
	case <-r.done:
		require.NoError(t, r.err, "run returns nil: the process exits 0")
	case <-time.After(time.Until(stalledAt.Add(budget + time.Second))):
		t.Fatal("run did not return within the longest budget in flight plus a second")
	}

	resp, err = http.ReadResponse(stalledR, nil)
	require.NoError(t, err, "the stalled request was answered")
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	s := <-slow
	require.NotNil(t, s, "the request in flight upstream was answered")
	assert.Equal(t, http.StatusOK, s.StatusCode)
	_ = s.Body.Close()
	for name, br := range map[string]*bufio.Reader{"idle": idleR, "silent": bufio.NewReader(silent), "slow header": bufio.NewReader(slowHeader)} {
		rest, err := io.ReadAll(br)
		assert.False(t, os.IsTimeout(err), "%s connection left open", name)
		assert.True(t, len(rest) == 0 || strings.HasPrefix(string(rest), "HTTP/1.1 4"), "%s: %q", name, rest)
	}
}
