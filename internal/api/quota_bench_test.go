package api_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/config"
)

// countingTransport counts the quota store's requests.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkQuotaAddedPerRequest is what quotas add to a question, on real
// sockets against a real Azurite and the simulator: the median time of a
// POST /api/chat without quotas and with a user limit, their difference,
// and the store's HTTP requests per question (an answer is settled just
// before it is written, so the caller waits for both).
func BenchmarkQuotaAddedPerRequest(b *testing.B) {
	az := azuritetest.Start(b)
	sim := httptest.NewServer(aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"gpt-4o-mini"}}))
	b.Cleanup(sim.Close)
	store := &countingTransport{}
	// The quota instance's log lines: a question's is written once its
	// settlement is done.
	lines := make(chan struct{}, 1<<16)
	logs := writerFunc(func(p []byte) (int, error) { lines <- struct{}{}; return len(p), nil })
	serve := func(extra map[string]string, seams app.Seams) string {
		settings := map[string]string{"AZURE_OPENAI_ENDPOINT": sim.URL, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": simKey}
		for k, v := range extra {
			settings[k] = v
		}
		cfg, err := config.Load(func(k string) string { return settings[k] })
		require.NoError(b, err)
		seams.Quota = store
		a, err := app.New(cfg, seams)
		require.NoError(b, err)
		srv := httptest.NewServer(a.Handler)
		b.Cleanup(srv.Close)
		return srv.URL
	}
	plain := serve(nil, app.Seams{})
	quotas := serve(map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "1000000000"}, app.Seams{Logs: logs})
	body := ask("hi")
	one := func(url string) time.Duration {
		start := time.Now()
		resp, err := http.Post(url+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = resp.Body.Read(make([]byte, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	one(quotas) // the table is created
	<-lines
	calls := store.n.Load()
	var without, with []time.Duration
	n := 0
	for b.Loop() {
		n++
		without = append(without, one(plain))
		with = append(with, one(quotas))
	}
	b.StopTimer()
	for range n {
		<-lines
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	pw, pq := p50(without), p50(with)
	b.ReportMetric(pw, "p50-ms-without")
	b.ReportMetric(pq, "p50-ms-with")
	b.ReportMetric(pq-pw, "p50-ms-added")
	b.ReportMetric(float64(store.n.Load()-calls)/float64(n), "store-calls/op")
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
