package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/testlog"
)

// countingTransport counts the quota store's requests, and its batches
// (the writes: a reservation's, a settlement's).
type countingTransport struct{ n, batches atomic.Int64 }

func (c *countingTransport) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if strings.HasSuffix(r.URL.Path, "$batch") {
		c.batches.Add(1)
	}
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
	calls, batches := store.n.Load(), store.batches.Load()
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
	b.ReportMetric(float64(store.batches.Load()-batches)/float64(n), "store-batches/op")
}

// BenchmarkQuotaLongAnswer is what quotas add to a long answer, on real
// sockets against a real Azurite and the simulator (a token every 10 ms,
// hops of 1 s): the store's requests and batches per answer, whatever
// its number of hops (the first hop reserves, each hop that hands out a
// cursor is charged what it received, the hop that sees the end settles),
// and the charge's time on a hop change and the settlement's on the last
// hop.
func BenchmarkQuotaLongAnswer(b *testing.B) {
	az := azuritetest.Start(b)
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"o3"}, PerToken: 10 * time.Millisecond})
	simSrv := httptest.NewServer(sim)
	b.Cleanup(simSrv.Close)
	b.Cleanup(sim.Close)
	store := &countingTransport{}
	var logs testlog.Buffer
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": simSrv.URL, "AZURE_OPENAI_DEPLOYMENT": "o3", "AZURE_OPENAI_API_KEY": simKey,
		"REQUEST_BUDGET": "3s", "FAST_FAILURE_THRESHOLD": "1s", "CLIENT_TIMEOUT_MARGIN": "500ms",
		"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "1000000000",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(b, err)
	a, err := app.New(cfg, app.Seams{Version: "bench", Quota: store, Logs: &logs})
	require.NoError(b, err)
	srv := httptest.NewServer(a.Handler)
	b.Cleanup(srv.Close)

	// post sends one hop and reads it to its end: the cursor of the next,
	// "" at the end.
	post := func(path, body string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = line[len("event: "):]
			case strings.HasPrefix(line, "data: ") && event == "continue":
				var c apiwire.Continue
				if err := json.Unmarshal([]byte(line[len("data: "):]), &c); err != nil {
					b.Fatal(err)
				}
				return c.Cursor
			case strings.HasPrefix(line, "data: ") && event == "error":
				b.Fatal(line)
			}
		}
		if event != "done" {
			b.Fatalf("the hop ended with %q", event)
		}
		return ""
	}
	answer := func() (hops int) {
		c := post("/api/chat", ask("Count to 300, with a comma between each number, no newlines and a period at the end."))
		for hops = 1; c != ""; hops++ {
			c = post("/api/chat/continue", cursorBody(c))
		}
		return hops
	}
	answer() // the table is created
	calls, batches := store.n.Load(), store.batches.Load()
	n, hops := 0, 0
	for b.Loop() {
		n++
		hops += answer()
	}
	b.StopTimer()
	var settle, charge []float64
	dec := json.NewDecoder(strings.NewReader(logs.String()))
	for {
		var l map[string]any
		if dec.Decode(&l) != nil {
			break
		}
		if ms, ok := l["quotaSettleMs"].(float64); ok && l["hop"] != nil {
			settle = append(settle, ms)
		}
		if ms, ok := l["quotaChargeMs"].(float64); ok {
			charge = append(charge, ms)
		}
	}
	slices.Sort(settle)
	slices.Sort(charge)
	b.ReportMetric(float64(hops)/float64(n), "hops/answer")
	b.ReportMetric(float64(store.n.Load()-calls)/float64(n), "store-calls/answer")
	b.ReportMetric(float64(store.batches.Load()-batches)/float64(n), "store-batches/answer")
	if len(settle) > 0 {
		b.ReportMetric(settle[len(settle)/2], "settle-p50-ms")
	}
	if len(charge) > 0 {
		b.ReportMetric(charge[len(charge)/2], "charge-p50-ms")
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
