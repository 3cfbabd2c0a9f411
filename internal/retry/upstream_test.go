package retry_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/retry"
)

// The server's rule for its own calls to Azure OpenAI, over a pool of
// backends: every transient failure is judged fast or slow; a fast one
// goes at once to another backend that can take the call, and where none
// can, only a throttle is tried again, after the pool's shortest cooldown,
// when that fits the time left.
func TestUpstreamDecide(t *testing.T) {
	noRetry := http.Header{"X-Should-Retry": {"false"}}
	tests := []struct {
		name    string
		failure retry.Failure
		want    retry.Reason
		// wantWait is the wait a retry or a wait that did not fit names.
		wantWait time.Duration
	}{
		{"slow 503", retry.Failure{Number: 1, Elapsed: 30 * time.Second, Status: 503, Elsewhere: true, Remaining: time.Minute}, retry.ReasonSlowFailure, 0},
		{"slow 500", retry.Failure{Number: 1, Elapsed: 31 * time.Second, Status: 500, Elsewhere: true, Remaining: time.Minute}, retry.ReasonSlowFailure, 0},
		{"slow network error", retry.Failure{Number: 1, Elapsed: 40 * time.Second, Elsewhere: true, Remaining: time.Minute}, retry.ReasonSlowFailure, 0},
		{"slow 429", retry.Failure{Number: 1, Elapsed: 30 * time.Second, Status: 429, Elsewhere: true, Remaining: time.Minute}, retry.ReasonSlowFailure, 0},
		{"slow 429 that says do not retry", retry.Failure{Number: 1, Elapsed: 30 * time.Second, Status: 429, Header: noRetry}, retry.ReasonSlowFailure, 0},
		{"slow 400", retry.Failure{Number: 1, Elapsed: time.Minute, Status: 400, Elsewhere: true}, retry.ReasonNotRetryable, 0},
		{"a 400 fails the same everywhere", retry.Failure{Number: 1, Elapsed: time.Millisecond, Status: 400, Elsewhere: true, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"a 401 fails the same everywhere", retry.Failure{Number: 1, Elapsed: time.Millisecond, Status: 401, Elsewhere: true, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"a 404 fails the same everywhere", retry.Failure{Number: 1, Elapsed: time.Millisecond, Status: 404, Elsewhere: true, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"fast 429 fails over", retry.Failure{Number: 1, Elapsed: time.Millisecond, Status: 429, Elsewhere: true, Remaining: time.Minute, Wait: 20 * time.Second}, retry.ReasonFailover, 0},
		{"fast 503 fails over", retry.Failure{Number: 1, Elapsed: time.Second, Status: 503, Elsewhere: true, Remaining: time.Minute}, retry.ReasonFailover, 0},
		{"fast network error fails over", retry.Failure{Number: 1, Elapsed: time.Second, Elsewhere: true, Remaining: time.Minute}, retry.ReasonFailover, 0},
		{"fast 413 (a 429 no wait clears) fails over", retry.Failure{Number: 1, Elapsed: time.Second, Status: 413, Elsewhere: true, Remaining: time.Minute}, retry.ReasonFailover, 0},
		{"no failover without the least time", retry.Failure{Number: 1, Elapsed: time.Second, Status: 503, Elsewhere: true, Remaining: 2 * time.Second}, retry.ReasonNotRetryable, 0},
		{"no failover that says do not retry", retry.Failure{Number: 1, Elapsed: time.Second, Status: 503, Header: noRetry, Elsewhere: true, Remaining: time.Minute}, retry.ReasonShouldNotRetry, 0},
		{"no failover on the last attempt", retry.Failure{Number: 2, Elapsed: time.Second, Status: 429, Elsewhere: true, Remaining: time.Minute}, retry.ReasonLastAttempt, 0},
		{"fast 503 with nowhere else is the caller's", retry.Failure{Number: 1, Elapsed: time.Second, Status: 503, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"fast network error with nowhere else is the caller's", retry.Failure{Number: 1, Elapsed: time.Second, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"fast 413 with nowhere else is answered", retry.Failure{Number: 1, Elapsed: time.Second, Status: 413, Remaining: time.Minute}, retry.ReasonNotRetryable, 0},
		{"fast 429 whose cooldown fits", retry.Failure{Number: 1, Elapsed: time.Second, Status: 429, Wait: 7 * time.Second, Remaining: time.Minute}, retry.ReasonRetry, 7 * time.Second},
		{"fast 429 whose long cooldown fits", retry.Failure{Number: 1, Elapsed: time.Second, Status: 429, Wait: 54 * time.Second, Remaining: time.Minute}, retry.ReasonRetry, 54 * time.Second},
		{"fast 429 whose cooldown leaves less than the least time", retry.Failure{Number: 1, Elapsed: time.Second, Status: 429, Wait: 58 * time.Second, Remaining: time.Minute}, retry.ReasonWaitTooLong, 58 * time.Second},
		{"fast 429 whose cooldown does not fit", retry.Failure{Number: 1, Elapsed: time.Second, Status: 429, Wait: 61 * time.Second, Remaining: time.Minute}, retry.ReasonWaitTooLong, 61 * time.Second},
		{"fast 429 on the last attempt", retry.Failure{Number: 2, Elapsed: time.Second, Status: 429, Wait: time.Second, Remaining: time.Minute}, retry.ReasonLastAttempt, 0},
	}
	rule := retry.Upstream{MinTime: 3 * time.Second}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rule.Decide(tt.failure)
			assert.Equal(t, tt.want, d.Reason)
			assert.Equal(t, tt.want == retry.ReasonRetry, d.Retry)
			assert.Equal(t, tt.want == retry.ReasonFailover, d.Failover)
			assert.Equal(t, tt.want == retry.ReasonSlowFailure, d.Timeout)
			assert.Equal(t, tt.wantWait, d.Wait)
		})
	}
}

// The threshold, the attempts and the least time are the server's
// settings.
func TestUpstreamSettings(t *testing.T) {
	f := retry.Failure{Number: 2, Elapsed: 5 * time.Second, Status: 429, Wait: time.Second, Remaining: time.Minute}
	assert.Equal(t, retry.ReasonLastAttempt, retry.Upstream{}.Decide(f).Reason)
	assert.True(t, retry.Upstream{MaxAttempts: 3}.Decide(f).Retry)
	assert.Equal(t, retry.ReasonSlowFailure, retry.Upstream{MaxAttempts: 3, FastFailure: 5 * time.Second}.Decide(f).Reason)
	f.Elsewhere, f.Remaining = true, 10*time.Second
	assert.True(t, retry.Upstream{MaxAttempts: 3, MinTime: 10 * time.Second}.Decide(f).Failover)
	assert.False(t, retry.Upstream{MaxAttempts: 3, MinTime: 11 * time.Second}.Decide(f).Failover)
}
