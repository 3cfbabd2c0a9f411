package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/client"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/retry"
)

func noEnv(string) string { return "" }

const answerJSON = `{"answer":"Paris.","finishReason":"stop","usage":{"totalTokens":12},"requestId":"r-ok","elapsedMs":5,"upstreamAttempts":1,"truncated":false}`

// step is one scripted answer of the fake Function App: wait (virtual time
// inside a bubble), then write status, headers and body.
type step struct {
	wait   time.Duration
	status int
	header map[string]string
	body   string
}

// scriptedApp is a fake Function App that plays steps in order and records requests.
type scriptedApp struct {
	mu       sync.Mutex
	steps    []step
	requests []*http.Request
	bodies   []string
	times    []time.Time
}

func (a *scriptedApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, r)
	a.bodies = append(a.bodies, string(body))
	a.times = append(a.times, time.Now())
	s := a.steps[min(len(a.requests), len(a.steps))-1]
	a.mu.Unlock()
	if s.wait > 0 {
		select {
		case <-time.After(s.wait):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.body)
}

func (a *scriptedApp) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

// inBubble runs the CLI against a in a synctest bubble over memnet, so the
// fake server's waits and the CLI's timers all run on virtual time.
func inBubble(t *testing.T, a *scriptedApp, args ...string) (stdout, stderr string, elapsed time.Duration, err error) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := memnet.Serve(t, a)
		var out, errOut bytes.Buffer
		start := time.Now()
		err = runWith(t.Context(), append([]string{"ask", "--url", "http://app.test"}, args...), noEnv, &out, &errOut, hc)
		elapsed = time.Since(start)
		stdout, stderr = out.String(), errOut.String()
	})
	return stdout, stderr, elapsed, err
}

func errorJSON(code, message string) string {
	return `{"error":{"code":"` + code + `","message":"` + message + `","requestId":"r-` + code + `"}}`
}

func TestAskAgainstALoopbackServer(t *testing.T) {
	a := &scriptedApp{steps: []step{{status: 200, body: answerJSON}}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"ask", "--url", srv.URL + "/", "--key", "k1", "What", "is", "the", "capital?"}, noEnv, &out, &errOut)
	require.NoError(t, err)
	assert.Equal(t, "Paris.\n", out.String())
	assert.Regexp(t, `^attempt 1: status 200 in \S+ -> success\nrequest id r-ok, finish stop, upstream attempts 1, server time 5ms, tokens 0 prompt \+ 0 completion\n$`, errOut.String())
	require.Equal(t, 1, a.count())
	r := a.requests[0]
	assert.Equal(t, "/api/chat", r.URL.Path)
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, "k1", r.Header.Get("x-functions-key"))
	assert.Empty(t, r.Header.Get("Authorization"))
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Equal(t, "230000", r.Header.Get("x-client-timeout-ms"))
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.bodies[0]), &body))
	assert.Equal(t, []struct{ Role, Content string }{{"user", "What is the capital?"}}, body.Messages)
}

func TestTokenAndEnvironment(t *testing.T) {
	a := &scriptedApp{steps: []step{{status: 200, body: answerJSON}}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	env := map[string]string{"TIMEBOX_URL": srv.URL, "TIMEBOX_TOKEN": "tok"}
	err := run(t.Context(), []string{"ask", "hi"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "Bearer tok", a.requests[0].Header.Get("Authorization"))
	assert.Empty(t, a.requests[0].Header.Get("x-functions-key"))
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{}, "ask, health or usage"},
		{"unknown subcommand", []string{"tell", "x"}, "ask, health or usage"},
		{"no url", []string{"ask", "hi"}, "--url"},
		{"bad url", []string{"ask", "--url", "ftp://x", "hi"}, "--url"},
		{"no question", []string{"ask", "--url", "http://x"}, "question"},
		{"key and token", []string{"ask", "--url", "http://x", "--key", "k", "--token", "t", "hi"}, "not both"},
		{"no attempts", []string{"ask", "--url", "http://x", "--attempts", "0", "hi"}, "--attempts"},
		{"bad flag", []string{"ask", "--nope", "hi"}, "not defined: -nope"},
		{"bad flag after the question", []string{"ask", "--url", "http://x", "hi", "--attempts", "many"}, "flag -attempts"},
		{"health with a question", []string{"health", "--url", "http://x", "hi"}, "no question"},
		{"health without url", []string{"health"}, "--url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			err := run(t.Context(), tt.args, noEnv, io.Discard, &errOut)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, 1, strings.Count(errOut.String(), "usage: timebox ask"), "the usage is printed once")
			assert.NotContains(t, err.Error(), "usage: timebox ask", "main prints the error: the usage is not in it again")
		})
	}
}

// TestHelp: --help, wherever it is, prints the usage once to stdout and
// succeeds; nothing is sent.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"ask", "--help"}, {"ask", "hi", "--help"}, {"health", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), args, noEnv, &out, &errOut)
			require.NoError(t, err)
			assert.Equal(t, 1, strings.Count(out.String(), "usage: timebox ask"))
			assert.Empty(t, errOut.String())
		})
	}
}

// TestFlagsAfterTheQuestion: a flag after the question is a flag, not a
// word of the question ("ask hi --attempts 1" asks "hi" once, and an
// --attempt-timeout there bounds the attempt); after -- every word is the
// question's.
func TestFlagsAfterTheQuestion(t *testing.T) {
	fast503 := step{status: 503, body: errorJSON("upstream_unavailable", "busy")}
	t.Run("attempts", func(t *testing.T) {
		a := &scriptedApp{steps: []step{fast503}}
		_, _, _, err := inBubble(t, a, "hi", "there", "--attempts", "1")
		require.Error(t, err)
		assert.Equal(t, 1, a.count(), "--attempts 1 after the question is obeyed")
		assert.JSONEq(t, `{"messages":[{"role":"user","content":"hi there"}]}`, a.bodies[0])
	})
	t.Run("attempt timeout", func(t *testing.T) {
		a := &scriptedApp{steps: []step{{wait: time.Hour, status: 200, body: answerJSON}}}
		_, _, elapsed, err := inBubble(t, a, "hi", "--attempt-timeout", "5s", "--attempts", "1")
		require.Error(t, err)
		assert.Equal(t, 5*time.Second, elapsed, "the attempt ends at the --attempt-timeout given after the question")
		assert.Equal(t, "5000", a.requests[0].Header.Get("x-client-timeout-ms"))
	})
	t.Run("double dash", func(t *testing.T) {
		a := &scriptedApp{steps: []step{{status: 200, body: answerJSON}}}
		_, _, _, err := inBubble(t, a, "--attempts", "1", "--", "what", "does", "--stream", "do?")
		require.NoError(t, err)
		assert.JSONEq(t, `{"messages":[{"role":"user","content":"what does --stream do?"}]}`, a.bodies[0])
	})
}

// TestHealth: a cold start's fast 503 is retried; a 200 that is not a
// health report (a wrong URL answered by some other site) is an error; a
// front end that does not answer within the 30 s attempt timeout is a
// timeout and is not retried.
func TestHealth(t *testing.T) {
	tests := []struct {
		name     string
		steps    []step
		wantErr  string
		wantOut  string
		requests int
	}{
		{"cold start", []step{{wait: 200 * time.Millisecond, status: 503, body: "busy"}, {status: 200, body: `{"status":"ok","version":"1.2.3"}`}}, "", "ok, version 1.2.3\n", 2},
		{"not a health report", []step{{status: 200, body: "<html>welcome</html>"}}, "invalid_response", "", 1},
		{"a report that is not ok", []step{{status: 200, body: `{"status":"degraded","version":"1.2.3"}`}}, "invalid_response", "", 1},
		{"no answer in 30 s", []step{{wait: 40 * time.Second, status: 502, body: "Bad Gateway"}}, "attempt_timeout", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &scriptedApp{steps: tt.steps}
			synctest.Test(t, func(t *testing.T) {
				_, hc := memnet.Serve(t, a)
				var out, errOut bytes.Buffer
				err := runWith(t.Context(), []string{"health", "--url", "http://app.test", "--key", "k1"}, noEnv, &out, &errOut, hc)
				if tt.wantErr == "" {
					require.NoError(t, err, errOut.String())
				} else {
					var ce *client.CallError
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, tt.wantErr, ce.Code)
				}
				assert.Equal(t, tt.wantOut, out.String())
			})
			require.Equal(t, tt.requests, a.count())
			for _, r := range a.requests {
				assert.Equal(t, http.MethodGet, r.Method)
				assert.Equal(t, "/api/health", r.URL.Path)
				assert.Equal(t, "k1", r.Header.Get("x-functions-key"))
				assert.Empty(t, r.Header.Get("Content-Type"))
			}
		})
	}
}

func TestTwoFastFailuresThenSuccess(t *testing.T) {
	a := &scriptedApp{steps: []step{
		{wait: 100 * time.Millisecond, status: 503, body: errorJSON("upstream_unavailable", "The AI service is busy.")},
		{wait: 100 * time.Millisecond, status: 502, body: errorJSON("upstream_error", "The AI service failed.")},
		{wait: 100 * time.Millisecond, status: 200, body: answerJSON},
	}}
	out, errOut, _, err := inBubble(t, a, "hi")
	require.NoError(t, err)
	assert.Equal(t, "Paris.\n", out)
	assert.Equal(t, 3, a.count())
	lines := strings.Split(errOut, "\n")
	assert.Regexp(t, `^attempt 1: status 503 upstream_unavailable in 100ms -> retry after \d+ms$`, lines[0])
	assert.Regexp(t, `^attempt 2: status 502 upstream_error in 100ms -> retry after \d+ms$`, lines[1])
	assert.Equal(t, "attempt 3: status 200 in 100ms -> success", lines[2])
}

func TestSlowGatewayErrorIsSentOnce(t *testing.T) {
	a := &scriptedApp{steps: []step{{wait: 40 * time.Second, status: 504, body: "Gateway Timeout"}, {status: 200, body: answerJSON}}}
	out, errOut, elapsed, err := inBubble(t, a, "hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, a.count())
	assert.Equal(t, 40*time.Second, elapsed)
	assert.Empty(t, out)
	assert.Equal(t, "attempt 1: status 504 in 40s -> stop: slow_failure, a timeout\n", errOut)
	assert.Equal(t, 504, ce.Status)
	assert.Equal(t, "http_504", ce.Code)
	assert.True(t, ce.Timeout)
	assert.Equal(t, "The service answered with HTTP 504. (status 504, code http_504, 1 attempt(s) in 40s, slow_failure, judged a timeout)", ce.Error())
}

func TestLastAttemptIsNeverRetried(t *testing.T) {
	a := &scriptedApp{steps: []step{{status: 503, body: errorJSON("upstream_unavailable", "The AI service is busy.")}}}
	_, _, _, err := inBubble(t, a, "--attempts", "2", "hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2, a.count())
	assert.Equal(t, retry.ReasonLastAttempt, ce.Reason)
	assert.Equal(t, "upstream_unavailable", ce.Code)
	assert.Equal(t, "r-upstream_unavailable", ce.RequestID)
}

func TestShouldNotRetry(t *testing.T) {
	a := &scriptedApp{steps: []step{{wait: 2900 * time.Millisecond, status: 500, header: map[string]string{"x-should-retry": "false"}, body: errorJSON("deadline_exceeded", "The answer took too long.")}}}
	_, _, _, err := inBubble(t, a, "hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, a.count())
	assert.True(t, ce.Timeout, "deadline_exceeded is a timeout")
	assert.Equal(t, "The answer took too long. (status 500, code deadline_exceeded, request id r-deadline_exceeded, 1 attempt(s) in 2.9s, not_retryable, judged a timeout)", ce.Error())
}

func TestRetryAfterIsWaitedExactly(t *testing.T) {
	a := &scriptedApp{steps: []step{{status: 429, header: map[string]string{"Retry-After": "2"}, body: errorJSON("rate_limited", "Too many requests.")}, {status: 200, body: answerJSON}}}
	_, errOut, elapsed, err := inBubble(t, a, "hi")
	require.NoError(t, err)
	assert.Equal(t, 2, a.count())
	assert.Equal(t, 2*time.Second, a.times[1].Sub(a.times[0]))
	assert.Equal(t, 2*time.Second, elapsed)
	assert.Contains(t, errOut, "attempt 1: status 429 rate_limited in 0s -> retry after 2s\n")
}

func TestWaitTooLongSaysWhenToTryAgain(t *testing.T) {
	a := &scriptedApp{steps: []step{{status: 429, header: map[string]string{"Retry-After": "120"}, body: errorJSON("rate_limited", "Too many requests.")}}}
	_, errOut, _, err := inBubble(t, a, "hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, a.count())
	assert.Equal(t, 120*time.Second, ce.RetryAfter)
	assert.True(t, strings.HasPrefix(ce.Error(), "Too many requests. Try again in 120 s. (status 429"), ce.Error())
	assert.Contains(t, errOut, "-> stop: wait_too_long (2m0s)")
}

func TestWaitTooLongIsSaidOnce(t *testing.T) {
	// timebox names the wait in retry-after-ms whenever its message says when.
	a := &scriptedApp{steps: []step{{status: 429, header: map[string]string{"Retry-After": "45", "retry-after-ms": "45000"}, body: errorJSON("rate_limited", "The AI service is busy. Try again in 45 s.")}}}
	_, _, _, err := inBubble(t, a, "hi")
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "Try again"), err.Error())
}

func TestAttemptTimeoutShrinksToTheDeadline(t *testing.T) {
	a := &scriptedApp{steps: []step{{wait: time.Second, status: 503}, {status: 200, body: answerJSON}}}
	_, _, _, err := inBubble(t, a, "--timeout", "12s", "--attempt-timeout", "20s", "hi")
	require.NoError(t, err)
	require.Equal(t, 2, a.count())
	assert.Equal(t, "12000", a.requests[0].Header.Get("x-client-timeout-ms"))
	wait := a.times[1].Sub(a.times[0])
	assert.Equal(t, (12*time.Second - wait).Milliseconds(), mustAtoi(t, a.requests[1].Header.Get("x-client-timeout-ms")))
}

func TestHangingAttemptEndsAtItsTimeoutAndIsNotRetried(t *testing.T) {
	a := &scriptedApp{steps: []step{{wait: time.Hour, status: 200, body: answerJSON}}}
	_, errOut, elapsed, err := inBubble(t, a, "--attempt-timeout", "40s", "hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, a.count())
	assert.Equal(t, 40*time.Second, elapsed)
	assert.Equal(t, "attempt_timeout", ce.Code)
	assert.True(t, ce.Timeout)
	assert.Equal(t, "attempt 1: no answer (attempt timeout) in 40s -> stop: slow_failure, a timeout\n", errOut)
}

func TestFastNetworkErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &scriptedApp{steps: []step{{status: 200, body: answerJSON}}}
		l, _ := memnet.Serve(t, a)
		dials := 0
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials++
			if dials == 1 {
				return nil, errors.New("connection refused")
			}
			return l.DialContext(ctx, network, addr)
		}}}
		var errOut bytes.Buffer
		err := runWith(t.Context(), []string{"ask", "--url", "http://app.test", "hi"}, noEnv, io.Discard, &errOut, hc)
		require.NoError(t, err)
		assert.Equal(t, 1, a.count())
		assert.Regexp(t, `^attempt 1: network error \(.*connection refused\) in 0s -> retry after \d+ms\nattempt 2: status 200`, errOut.String())
		hc.CloseIdleConnections()
	})
}

func TestInterruptStopsTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &scriptedApp{steps: []step{{status: 429, header: map[string]string{"Retry-After": "20"}}, {status: 200, body: answerJSON}}}
		_, hc := memnet.Serve(t, a)
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(5*time.Second, func() { cancel(errors.New("interrupted")) })
		start := time.Now()
		err := runWith(ctx, []string{"ask", "--url", "http://app.test", "hi"}, noEnv, io.Discard, io.Discard, hc)
		assert.EqualError(t, err, "ask: interrupted")
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Equal(t, 1, a.count())
	})
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}
