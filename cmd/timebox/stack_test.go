package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/client"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/retry"
)

// askTheStack runs timebox ask against the whole stack as app.New builds it
// (the real handler and azcore client) and the simulator, at the production budget (200 s)
// and threshold (30 s), all on virtual time in a synctest bubble. It returns
// how many requests the handler got and how long the command took.
func askTheStack(t *testing.T, question string) (stdout, stderr string, requests int64, elapsed time.Duration, err error) {
	return runTheStack(t, "ask", "--url", "http://app.test", question)
}

// runTheStack is askTheStack for any command line.
func runTheStack(t *testing.T, args ...string) (stdout, stderr string, requests int64, elapsed time.Duration, err error) {
	return runTheStackWith(t, aoaitest.Options{}, nil, args...)
}

// runTheStackWith is runTheStack with the simulator's latency in sim, and
// every write to stdout also given to onOut (inside the bubble, so it can
// read the virtual clock).
func runTheStackWith(t *testing.T, sim aoaitest.Options, onOut func(string), args ...string) (stdout, stderr string, requests int64, elapsed time.Duration, err error) {
	synctest.Test(t, func(t *testing.T) {
		const key = "sim-key"
		settings := map[string]string{
			"AZURE_OPENAI_ENDPOINT":   "http://127.0.0.1:8081",
			"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
			"AZURE_OPENAI_API_KEY":    key,
		}
		cfg, cerr := config.Load(func(k string) string { return settings[k] })
		require.NoError(t, cerr)

		sim.APIKey, sim.Deployments = key, []string{"gpt-4o-mini"}
		_, simClient := memnet.Serve(t, aoaitest.New(sim))
		a, cerr := app.New(cfg, app.Seams{Version: "test", Upstream: simClient})
		require.NoError(t, cerr)
		h := a.Handler

		var n atomic.Int64
		_, hc := memnet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/chat" {
				n.Add(1)
			}
			h.ServeHTTP(w, r)
		}))

		var out, errOut bytes.Buffer
		var stdoutW io.Writer = &out
		if onOut != nil {
			stdoutW = io.MultiWriter(&out, writerFunc(func(p []byte) (int, error) { onOut(string(p)); return len(p), nil }))
		}
		start := time.Now()
		err = runWith(t.Context(), args, noEnv, stdoutW, &errOut, hc)
		elapsed = time.Since(start)
		stdout, stderr, requests = out.String(), errOut.String(), n.Load()
	})
	return stdout, stderr, requests, elapsed, err
}

func TestStackAnswers(t *testing.T) {
	out, errOut, n, _, err := askTheStack(t, "Count to 5, with a comma between each number, no newlines and a period at the end.")
	require.NoError(t, err, errOut)
	assert.Equal(t, "1, 2, 3, 4, 5.\n", out)
	assert.EqualValues(t, 1, n)
	assert.Regexp(t, `server timing: prompt [\d.]+ ms, upstream [\d.]+ ms, total [\d.]+ ms\n$`, errOut)
}

func TestStackHealth(t *testing.T) {
	out, errOut, n, _, err := runTheStack(t, "health", "--url", "http://app.test/")
	require.NoError(t, err, errOut)
	assert.Equal(t, "ok, version test\n", out)
	assert.Regexp(t, `^attempt 1: status 200 in \S+ -> success\nrequest id [0-9a-f]{32}, 1 attempt\(s\) in \S+\n$`, errOut)
	assert.EqualValues(t, 0, n, "no question is asked")
}

func TestStackHangPastTheBudgetIsAskedOnce(t *testing.T) {
	_, errOut, n, elapsed, err := askTheStack(t, "[[sim:hang]] hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, 1, n, "a 500 is never retried")
	assert.Equal(t, 500, ce.Status)
	assert.Equal(t, "deadline_exceeded", ce.Code)
	assert.True(t, ce.Timeout)
	assert.Equal(t, retry.ReasonNotRetryable, ce.Reason)
	assert.Equal(t, 200*time.Second, elapsed.Round(time.Second), "the handler answers at its budget (200 s)")
	assert.Equal(t, 1, strings.Count(errOut, "attempt "))
	assert.Contains(t, errOut, "server timing: prompt 0.0 ms, upstream 200000.0 ms, total 200000.0 ms\n",
		"the operator sees the time went upstream")
}

func TestStackTwoFast503sThenSuccess(t *testing.T) {
	out, errOut, n, _, err := askTheStack(t, "[[sim:status code=503 times=2 id=cli-stack]] Count to 3, with a comma between each number, no newlines and a period at the end.")
	require.NoError(t, err, errOut)
	assert.EqualValues(t, 3, n)
	assert.Equal(t, "1, 2, 3.\n", out)
	assert.Regexp(t, `^attempt 1: status 503 upstream_unavailable in \S+ -> retry after \S+\nattempt 2: status 503 upstream_unavailable in \S+ -> retry after \S+\nattempt 3: status 200 in \S+ -> success\n`, errOut)
}

func TestStackSlowFailureIsAskedOnce(t *testing.T) {
	_, _, n, elapsed, err := askTheStack(t, "[[sim:status code=503 after=31000]] hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, 1, n)
	assert.Equal(t, 500, ce.Status)
	assert.Equal(t, "upstream_error", ce.Code)
	assert.Equal(t, retry.ReasonNotRetryable, ce.Reason)
	assert.Equal(t, 31*time.Second, elapsed.Round(time.Second))
}

// A throttle whose wait fits neither the attempt's time (20 s) nor the
// CLI's cap (30 s) comes back at once, and the operator is told when to try
// again, once.
func TestStackThrottleSaysWhenOnce(t *testing.T) {
	_, errOut, n, elapsed, err := runTheStack(t, "ask", "--url", "http://app.test", "--attempt-timeout", "20s", "[[sim:throttle s=45]] hi")
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, 1, n)
	assert.Equal(t, 429, ce.Status)
	assert.Equal(t, "rate_limited", ce.Code)
	assert.Equal(t, retry.ReasonWaitTooLong, ce.Reason)
	assert.Equal(t, 45*time.Second, ce.RetryAfter)
	assert.Equal(t, time.Duration(0), elapsed.Round(time.Second))
	assert.Equal(t, 1, strings.Count(ce.Error(), "Try again in 45 s."), ce.Error())
	assert.Contains(t, errOut, "-> stop: wait_too_long (45s)")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// streamTheStack runs timebox ask --stream against the stack, the
// simulator sending a token a second after 1 s, and notes when each piece
// of stdout was written.
func streamTheStack(t *testing.T, question string) (writes []timedWrite, stderr string, requests int64, elapsed time.Duration, err error) {
	onOut := func(s string) { writes = append(writes, timedWrite{at: time.Now(), text: s}) }
	_, stderr, requests, elapsed, err = runTheStackWith(t, aoaitest.Options{TimeToFirstToken: time.Second, PerToken: time.Second}, onOut,
		"ask", "--url", "http://app.test", "--stream", question)
	return writes, stderr, requests, elapsed, err
}

type timedWrite struct {
	at   time.Time
	text string
}

func joined(ws []timedWrite) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.text)
	}
	return b.String()
}

// --stream prints the answer as it arrives: one write per token, a second
// apart, then the line's end.
func TestStackStreams(t *testing.T) {
	writes, errOut, n, elapsed, err := streamTheStack(t, "Count to 3, with a comma between each number, no newlines and a period at the end.")
	require.NoError(t, err, errOut)
	assert.EqualValues(t, 1, n)
	assert.Equal(t, "1, 2, 3.\n", joined(writes))
	require.Len(t, writes, 9, "eight tokens (1 , ␠ 2 , ␠ 3 .), then the newline")
	for i := 1; i < 8; i++ {
		assert.Equal(t, time.Second, writes[i].at.Sub(writes[i-1].at), "token %d came a second after the one before", i)
	}
	assert.Equal(t, 9*time.Second, elapsed, "1 s to the first chunk, then eight tokens a second apart")
	assert.Contains(t, errOut, "attempt 1: status 200 in ")
	assert.Contains(t, errOut, "finish stop")
}

// Before the first piece the rule retries a fast failure, as without a
// stream.
func TestStackStreamRetriesBeforeTheFirstPiece(t *testing.T) {
	writes, errOut, n, _, err := streamTheStack(t, "[[sim:status code=503 times=2 id=cli-stream]] Count to 3, with a comma between each number, no newlines and a period at the end.")
	require.NoError(t, err, errOut)
	assert.EqualValues(t, 3, n)
	assert.Equal(t, "1, 2, 3.\n", joined(writes))
}

// After the first piece nothing is retried: the error ends the command,
// the text that arrived stays printed.
func TestStackStreamIsNotRetriedAfterTheFirstPiece(t *testing.T) {
	tests := []struct {
		question    string
		wantCode    string
		wantElapsed time.Duration
	}{
		{"[[sim:reset tokens=4]] Count to 10, with a comma between each number.", "upstream_error", 5 * time.Second},
		{"[[sim:hang tokens=4]] Count to 10, with a comma between each number.", "deadline_exceeded", 200 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.wantCode, func(t *testing.T) {
			writes, errOut, n, elapsed, err := streamTheStack(t, tt.question)
			var ce *client.CallError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantCode, ce.Code)
			assert.Equal(t, retry.ReasonNotRetryable, ce.Reason)
			assert.EqualValues(t, 1, n, "one request: the answer had begun")
			assert.Equal(t, "1, 2\n", joined(writes), "the text that arrived, and the line's end")
			assert.Equal(t, tt.wantElapsed, elapsed)
			assert.Contains(t, errOut, "-> stop: the answer had begun")
		})
	}
}

// An upstream 503 at 20 s comes after the server's 15 s keep-alive, so as
// an error event, not a status: it failed fast and before its first
// token, and the rule retries it as it would the JSON 503.
func TestStackStreamRetriesAFast503AfterAKeepAlive(t *testing.T) {
	writes, errOut, n, _, err := streamTheStack(t, "[[sim:status code=503 after=20000 times=1 id=cli-keepalive]] Count to 3, with a comma between each number, no newlines and a period at the end.")
	require.NoError(t, err, errOut)
	assert.EqualValues(t, 2, n)
	assert.Equal(t, "1, 2, 3.\n", joined(writes))
	assert.Regexp(t, `^attempt 1: status 503 upstream_unavailable \(in an error event after a keep-alive\) in 20s -> retry after \S+\nattempt 2: status 200 in \S+ -> success\n`, errOut)
}

// Failures after a keep-alive that the rule does not retry: the 503 at
// 40 s is slow (the server says 500, x-should-retry false), and a throttle
// the server waited out once and that came back 40 s after sending is slow
// by the client's own clock, whatever its status.
func TestStackStreamDoesNotRetryASlowFailureAfterAKeepAlive(t *testing.T) {
	tests := []struct {
		question   string
		wantStatus int
		wantCode   string
		wantReason retry.Reason
	}{
		{"[[sim:status code=503 after=40000]] hi", 500, "upstream_error", retry.ReasonNotRetryable},
		{"[[sim:throttle s=20 after=10000]] hi", 429, "rate_limited", retry.ReasonSlowFailure},
	}
	for _, tt := range tests {
		t.Run(tt.wantCode, func(t *testing.T) {
			writes, errOut, n, elapsed, err := streamTheStack(t, tt.question)
			var ce *client.CallError
			require.ErrorAs(t, err, &ce, errOut)
			assert.EqualValues(t, 1, n)
			assert.Equal(t, tt.wantStatus, ce.Status)
			assert.Equal(t, tt.wantCode, ce.Code)
			assert.Equal(t, tt.wantReason, ce.Reason)
			assert.Equal(t, 40*time.Second, elapsed)
			assert.Empty(t, joined(writes))
		})
	}
}
