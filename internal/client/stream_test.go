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
