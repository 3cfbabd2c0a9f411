package retry_test

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/retry"
)

// vector is one entry of testdata/vectors.json, the file the TypeScript
// client's tests read too.
type vector struct {
	Name   string `json:"name"`
	Policy struct {
		MaxAttempts   int     `json:"maxAttempts"`
		FastFailureMs float64 `json:"fastFailureMs"`
		MaxWaitMs     float64 `json:"maxWaitMs"`
		BaseDelayMs   float64 `json:"baseDelayMs"`
		MaxDelayMs    float64 `json:"maxDelayMs"`
		Statuses      []int   `json:"statuses"`
	} `json:"policy"`
	Attempt     int               `json:"attempt"`
	ElapsedMs   float64           `json:"elapsedMs"`
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	RemainingMs *float64          `json:"remainingMs"`
	NowMs       int64             `json:"nowMs"`
	Retry       bool              `json:"retry"`
	Reason      string            `json:"reason"`
	Timeout     bool              `json:"timeout"`
	WaitMs      *float64          `json:"waitMs"`
	WaitMinMs   *float64          `json:"waitMinMs"`
	WaitMaxMs   *float64          `json:"waitMaxMs"`
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	var doc struct {
		Vectors []vector `json:"vectors"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Vectors)
	return doc.Vectors
}

// The rule's defaults, the retryable statuses among them, are the figures
// the shared file states; the TypeScript client's DEFAULTS are checked
// against the same figures, so the two languages cannot drift.
func TestDefaultsAreTheSharedOnes(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	var doc struct {
		Defaults struct {
			MaxAttempts   int     `json:"maxAttempts"`
			FastFailureMs float64 `json:"fastFailureMs"`
			MaxWaitMs     float64 `json:"maxWaitMs"`
			BaseDelayMs   float64 `json:"baseDelayMs"`
			MaxDelayMs    float64 `json:"maxDelayMs"`
			Statuses      []int   `json:"statuses"`
		} `json:"defaults"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	d := doc.Defaults
	assert.Equal(t, d.MaxAttempts, retry.DefaultMaxAttempts)
	assert.Equal(t, ms(d.FastFailureMs), retry.DefaultFastFailure)
	assert.Equal(t, ms(d.MaxWaitMs), retry.DefaultMaxWait)
	assert.Equal(t, ms(d.BaseDelayMs), retry.DefaultBaseDelay)
	assert.Equal(t, ms(d.MaxDelayMs), retry.DefaultMaxDelay)
	assert.Equal(t, d.Statuses, retry.DefaultStatuses())
	for s := 100; s < 600; s++ {
		assert.Equal(t, slices.Contains(d.Statuses, s), retry.Retryable(s), "status %d", s)
	}
	assert.True(t, retry.Retryable(0), "a network error")
}

func (v vector) attempt() retry.Attempt {
	a := retry.Attempt{Number: v.Attempt, Elapsed: ms(v.ElapsedMs), Status: v.Status, Remaining: retry.Unbounded}
	if v.Headers != nil {
		a.Header = http.Header{}
		for k, val := range v.Headers {
			a.Header.Set(k, val)
		}
	}
	if v.RemainingMs != nil {
		a.Remaining = ms(*v.RemainingMs)
	}
	if v.NowMs != 0 {
		a.Now = time.UnixMilli(v.NowMs)
	}
	return a
}

func (v vector) policy(rand float64) retry.Policy {
	return retry.Policy{
		MaxAttempts: v.Policy.MaxAttempts,
		FastFailure: ms(v.Policy.FastFailureMs),
		MaxWait:     ms(v.Policy.MaxWaitMs),
		BaseDelay:   ms(v.Policy.BaseDelayMs),
		MaxDelay:    ms(v.Policy.MaxDelayMs),
		Statuses:    v.Policy.Statuses,
		Rand:        func() float64 { return rand },
	}
}

// TestVectors runs every shared vector through Decide, with the jitter at
// both ends of its range, so that the Go rule and the TypeScript rule stay
// the same rule.
func TestVectors(t *testing.T) {
	reasons := map[string]bool{}
	for _, tt := range loadVectors(t) {
		reasons[tt.Reason] = true
		t.Run(tt.Name, func(t *testing.T) {
			for _, r := range []float64{0, 0.5, math.Nextafter(1, 0)} {
				d := tt.policy(r).Decide(tt.attempt())
				assert.Equal(t, tt.Retry, d.Retry, "retry (rand %v)", r)
				assert.Equal(t, retry.Reason(tt.Reason), d.Reason, "reason (rand %v)", r)
				assert.Equal(t, tt.Timeout, d.Timeout, "timeout (rand %v)", r)
				switch {
				case tt.WaitMs != nil:
					assert.InDelta(t, ms(*tt.WaitMs), d.Wait, float64(time.Microsecond), "wait")
				case tt.WaitMinMs != nil:
					assert.GreaterOrEqual(t, d.Wait, ms(*tt.WaitMinMs), "wait (rand %v)", r)
					assert.Less(t, d.Wait, ms(*tt.WaitMaxMs), "wait (rand %v)", r)
					if r == 0 {
						assert.Equal(t, ms(*tt.WaitMinMs), d.Wait, "rand 0 gives the window's floor")
					}
				}
			}
		})
	}
	for _, r := range []retry.Reason{retry.ReasonRetry, retry.ReasonNotRetryable, retry.ReasonShouldNotRetry, retry.ReasonSlowFailure, retry.ReasonLastAttempt, retry.ReasonWaitTooLong} {
		assert.True(t, reasons[string(r)], "no vector covers reason %q", r)
	}
}

func TestServerWait(t *testing.T) {
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		asked  bool
	}{
		{"none", http.Header{}, 0, false},
		{"nil header", nil, 0, false},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second, true},
		{"ms wins", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"7"}}, 250 * time.Millisecond, true},
		{"date", http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3 * time.Second, true},
		{"garbage", http.Header{"Retry-After": {"1_000"}}, 0, false},
		{"sign in the middle", http.Header{"Retry-After": {"1-2"}}, 0, false},
		{"exponent", http.Header{"Retry-After": {"1e1"}}, 10 * time.Second, true},
		{"overflow", http.Header{"Retry-After": {"1e400"}}, 0, false},
		{"lone point", http.Header{"Retry-After": {"."}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, asked := retry.ServerWait(tt.header, now)
			assert.Equal(t, tt.asked, asked)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDecideUsesRealRandomness checks the default jitter stays in its window.
func TestDecideUsesRealRandomness(t *testing.T) {
	for range 100 {
		d := retry.Policy{}.Decide(retry.Attempt{Number: 2, Elapsed: time.Second, Status: 503, Remaining: retry.Unbounded})
		require.True(t, d.Retry)
		assert.GreaterOrEqual(t, d.Wait, 500*time.Millisecond)
		assert.Less(t, d.Wait, time.Second)
	}
}
