package retry_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/retry"
)

// The server's rule for its own calls to Azure OpenAI: every transient
// failure is judged fast or slow, and of the fast ones only throttles whose
// wait fits the time left are retried here.
func TestUpstreamDecide(t *testing.T) {
	wait := func(d time.Duration) http.Header {
		return http.Header{"Retry-After-Ms": {strconv.FormatInt(d.Milliseconds(), 10)}}
	}
	tests := []struct {
		name      string
		attempt   retry.Attempt
		want      retry.Reason
		wantRetry bool
		wantWait  time.Duration
	}{
		{"slow 503", retry.Attempt{Number: 1, Elapsed: 30 * time.Second, Status: 503}, retry.ReasonSlowFailure, false, 0},
		{"slow 500", retry.Attempt{Number: 1, Elapsed: 31 * time.Second, Status: 500}, retry.ReasonSlowFailure, false, 0},
		{"slow network error", retry.Attempt{Number: 1, Elapsed: 40 * time.Second}, retry.ReasonSlowFailure, false, 0},
		{"slow 429 that says do not retry", retry.Attempt{Number: 1, Elapsed: 30 * time.Second, Status: 429, Header: http.Header{"X-Should-Retry": {"false"}}}, retry.ReasonSlowFailure, false, 0},
		{"slow 400", retry.Attempt{Number: 1, Elapsed: time.Minute, Status: 400}, retry.ReasonNotRetryable, false, 0},
		{"fast 503 is the caller's", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 503, Remaining: time.Minute}, retry.ReasonNotRetryable, false, 0},
		{"fast network error is the caller's", retry.Attempt{Number: 1, Elapsed: time.Second, Remaining: time.Minute}, retry.ReasonNotRetryable, false, 0},
		{"fast 429 whose wait fits", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 429, Header: wait(7 * time.Second), Remaining: time.Minute}, retry.ReasonRetry, true, 7 * time.Second},
		{"fast 429 whose long wait fits: no cap but the time left", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 429, Header: wait(59 * time.Second), Remaining: time.Minute}, retry.ReasonRetry, true, 59 * time.Second},
		{"fast 429 whose wait does not fit", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 429, Header: wait(61 * time.Second), Remaining: time.Minute}, retry.ReasonWaitTooLong, false, 61 * time.Second},
		{"fast 429 on the last attempt", retry.Attempt{Number: 2, Elapsed: time.Second, Status: 429, Header: wait(time.Second), Remaining: time.Minute}, retry.ReasonLastAttempt, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := retry.Upstream{}.Decide(tt.attempt)
			assert.Equal(t, tt.want, d.Reason)
			assert.Equal(t, tt.wantRetry, d.Retry)
			assert.Equal(t, tt.want == retry.ReasonSlowFailure, d.Timeout)
			if tt.wantWait > 0 {
				assert.Equal(t, tt.wantWait, d.Wait)
			}
		})
	}
}

// The threshold and the attempts are the server's settings.
func TestUpstreamSettings(t *testing.T) {
	a := retry.Attempt{Number: 2, Elapsed: 5 * time.Second, Status: 429, Header: http.Header{"Retry-After-Ms": {"1000"}}, Remaining: time.Minute}
	assert.Equal(t, retry.ReasonLastAttempt, retry.Upstream{}.Decide(a).Reason)
	assert.True(t, retry.Upstream{MaxAttempts: 3}.Decide(a).Retry)
	assert.Equal(t, retry.ReasonSlowFailure, retry.Upstream{MaxAttempts: 3, FastFailure: 5 * time.Second}.Decide(a).Reason)
}
