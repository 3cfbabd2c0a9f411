package quota_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/timebox-dev/timebox/internal/quota"
)

// BenchmarkReserveSettle is what quotas add to one request against a real
// Azurite: the store's HTTP requests per request (reads and one batch to
// reserve, the same to settle) and the median time of reserve plus settle.
func BenchmarkReserveSettle(b *testing.B) {
	for _, limits := range []struct {
		name         string
		user, tenant int64
	}{{"user", 1 << 40, 0}, {"user+tenant", 1 << 40, 1 << 40}} {
		b.Run(limits.name, func(b *testing.B) {
			f := setup(b, limits.user, limits.tenant)
			s := f.store(b)
			ctx := b.Context()
			if _, err := s.Usage(ctx, "user-1", "tenant-1"); err != nil { // the table exists
				b.Fatal(err)
			}
			billed := quota.Billed{Prompt: 100, Completion: 200, Status: 200}
			calls := s.Calls()
			var took []time.Duration
			i := 0
			for b.Loop() {
				i++
				start := time.Now()
				res, err := s.Reserve(ctx, f.request("b"+strconv.Itoa(i), 100, 500))
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Settle(ctx, res, billed); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(s.Calls()-calls)/float64(i), "calls/op")
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
