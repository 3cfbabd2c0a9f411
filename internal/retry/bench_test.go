package retry_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/timebox-dev/timebox/internal/retry"
)

// BenchmarkDecide measures one decision: a fast 503 with backoff, and a 429
// whose Retry-After is an HTTP date (the slowest header to read).
func BenchmarkDecide(b *testing.B) {
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a    retry.Attempt
	}{
		{"backoff", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 503, Header: http.Header{}, Remaining: retry.Unbounded}},
		{"retry-after-ms", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 429, Header: http.Header{"Retry-After-Ms": {"1500.5"}}, Remaining: retry.Unbounded}},
		{"http-date", retry.Attempt{Number: 1, Elapsed: time.Second, Status: 429, Header: http.Header{"Retry-After": {"Mon, 30 Nov 2026 06:00:10 GMT"}}, Remaining: retry.Unbounded, Now: now}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			p := retry.Policy{}
			for b.Loop() {
				_ = p.Decide(c.a)
			}
		})
	}
}
