package client_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/client"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/retry"
)

// cut serves a stream that sends what its test gives it, then drops the
// connection without an end, and counts the requests.
func cut(t *testing.T, events string) (*client.Client, *atomic.Int64) {
	var n atomic.Int64
	_, hc := memnet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(events))
		_ = http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		require.NoError(t, err)
		_ = conn.Close()
	}))
	return &client.Client{BaseURL: "http://app.test", HTTP: hc, Policy: retry.Policy{MaxAttempts: 3}, Timeout: time.Minute, AttemptTimeout: 30 * time.Second}, &n
}

// A connection lost after a piece of the answer is not retried: the text
// would be written twice.
func TestStreamLostMidAnswerIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, n := cut(t, "event: delta\ndata: {\"text\":\"1, 2\"}\n\n")
		var got string
		_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(s string) { got += s })
		var ce *client.CallError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "stream_broken", ce.Code)
		assert.Equal(t, retry.ReasonNotRetryable, ce.Reason)
		assert.Equal(t, "1, 2", got)
		assert.EqualValues(t, 1, n.Load())
	})
}

// A connection lost before any piece (after a keep-alive) is judged by the
// rule like any network error: fast, so retried.
func TestStreamLostBeforeTheFirstPieceIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, n := cut(t, ": keep-alive\n\n")
		_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(string) { t.Error("no delta was sent") })
		var ce *client.CallError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "network_error", ce.Code)
		assert.Equal(t, retry.ReasonLastAttempt, ce.Reason)
		assert.EqualValues(t, 3, n.Load(), "every attempt the rule allows")
	})
}

// early serves a stream that fails before its first delta: a keep-alive
// (or what first says), then after 20 s the error event with data; a
// second request gets done. It records when each request came.
func early(t *testing.T, data string) (*client.Client, *[]time.Duration) {
	return failing(t, ": keep-alive\n\n", data)
}

func failing(t *testing.T, first, data string) (*client.Client, *[]time.Duration) {
	var at []time.Duration
	start := time.Now()
	_, hc := memnet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at = append(at, time.Since(start))
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if len(at) > 1 {
			_, _ = w.Write([]byte("event: delta\ndata: {\"text\":\"hi\"}\n\nevent: done\ndata: {\"answer\":\"hi\"}\n\n"))
			return
		}
		_, _ = w.Write([]byte(first))
		_ = http.NewResponseController(w).Flush()
		// Virtual time: every caller serves this inside a synctest bubble.
		time.Sleep(20 * time.Second)
		_, _ = w.Write([]byte("event: error\ndata: " + data + "\n\n"))
	}))
	return &client.Client{BaseURL: "http://app.test", HTTP: hc, Policy: retry.Policy{MaxAttempts: 3}, Timeout: 5 * time.Minute, AttemptTimeout: 230 * time.Second}, &at
}

// The hints of an error event before the first delta are the JSON
// answer's headers to the rule: shouldRetry false stops it, whatever the
// status, and retryAfterMs is the wait.
func TestStreamErrorBeforeTheFirstDeltaCarriesTheRetryHints(t *testing.T) {
	t.Run("shouldRetry false", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, at := early(t, `{"error":{"code":"upstream_unavailable","message":"m","requestId":"r"},"partial":false,"status":503,"shouldRetry":false}`)
			_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(string) {})
			var ce *client.CallError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, retry.ReasonShouldNotRetry, ce.Reason)
			assert.Equal(t, 503, ce.Status)
			assert.Equal(t, "upstream_unavailable", ce.Code)
			assert.Len(t, *at, 1)
		})
	})
	t.Run("retryAfterMs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, at := early(t, `{"error":{"code":"rate_limited","message":"m","requestId":"r"},"partial":false,"status":429,"shouldRetry":true,"retryAfterMs":7000}`)
			var got string
			_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(s string) { got += s })
			require.NoError(t, err)
			assert.Equal(t, "hi", got)
			assert.Equal(t, []time.Duration{0, 27 * time.Second}, *at, "retried 7 s after the event at 20 s")
		})
	})
	for name, data := range map[string]string{
		"partial true":       `{"error":{"code":"upstream_error","message":"m","requestId":"r"},"partial":true}`,
		"partial missing":    `{"error":{"code":"upstream_unavailable","message":"m","requestId":"r"},"status":503}`,
		"partial not a bool": `{"error":{"code":"upstream_unavailable","message":"m","requestId":"r"},"partial":"no","status":503}`,
		"a hint garbled":     `{"error":{"code":"upstream_unavailable","message":"m","requestId":"r"},"partial":false,"status":503,"shouldRetry":"false"}`,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, at := early(t, data)
				_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(string) {})
				var ce *client.CallError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, retry.ReasonNotRetryable, ce.Reason, "an event that does not say partial: false is final")
				assert.Equal(t, http.StatusOK, ce.Status)
				assert.Len(t, *at, 1)
			})
		})
	}
}

// After a delta an error event is final, even one that claims partial:
// false and a 503: the text would be written twice.
func TestStreamErrorAfterADeltaIsNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, at := failing(t, "event: delta\ndata: {\"text\":\"1, \"}\n\n",
			`{"error":{"code":"upstream_unavailable","message":"m","requestId":"r"},"partial":false,"status":503,"shouldRetry":true}`)
		var got string
		_, err := c.Stream(t.Context(), "/api/chat", []byte(`{}`), func(s string) { got += s })
		var ce *client.CallError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, retry.ReasonNotRetryable, ce.Reason)
		assert.Equal(t, "1, ", got)
		assert.Len(t, *at, 1)
	})
}
