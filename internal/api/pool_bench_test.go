package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
)

// BenchmarkPoolFailover is what a failover after a fast 429 adds to a
// question: each question is answered by b after a's 429 (a pool whose
// cooldown is a nanosecond, so that a is tried first every time), against
// the same question answered by b alone. Both simulators are real
// loopback servers; the figure is the difference of the two medians.
func BenchmarkPoolFailover(b *testing.B) {
	sims := map[string]*aoaitest.Server{}
	sim := func(name string) string {
		sims[name] = aoaitest.New(aoaitest.Options{APIKey: simKey, Backend: name, Deployments: []string{"chat-a", "chat-b"}})
		s := httptest.NewServer(sims[name])
		b.Cleanup(s.Close)
		return s.URL
	}
	urlA, urlB := sim("a"), sim("b")
	entry := func(name, url string) string {
		return `{"name": "` + name + `", "endpoint": "` + url + `", "deployment": "chat-` + name + `", "model": "gpt-4o-mini", "apiKeySetting": "SIM_KEY"}`
	}
	handler := func(backends string) http.Handler {
		settings := map[string]string{
			"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_BACKENDS": backends, "SIM_KEY": simKey,
			"BACKEND_COOLDOWN_MAX": "1ns", "UPSTREAM_MAX_ATTEMPTS": "2",
		}
		cfg, err := config.Load(func(k string) string { return settings[k] })
		require.NoError(b, err)
		a, err := app.New(cfg, app.Seams{})
		require.NoError(b, err)
		return a.Handler
	}
	body := []byte(ask("[[sim:throttle s=1 backend=a]] Count to 10."))
	run := func(h http.Handler) time.Duration {
		var took []time.Duration
		for range 200 {
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/chat", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(w, r)
			took = append(took, time.Since(start))
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	alone := handler("[" + entry("b", urlB) + "]")
	failover := handler("[" + entry("a", urlA) + "," + strings.Replace(entry("b", urlB), `"apiKeySetting"`, `"priority": 2, "apiKeySetting"`, 1) + "]")
	var aloneP50, failoverP50 time.Duration
	for b.Loop() {
		aloneP50, failoverP50 = run(alone), run(failover)
	}
	if sims["a"].Stats().Requests == 0 || sims["a"].Stats().Requests > sims["b"].Stats().Requests {
		b.Fatalf("a answered %d, b %d: each failover question goes to a first, then b", sims["a"].Stats().Requests, sims["b"].Stats().Requests)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(aloneP50), "b-alone-p50-ms")
	b.ReportMetric(ms(failoverP50), "failover-p50-ms")
	b.ReportMetric(ms(failoverP50-aloneP50), "added-p50-ms")
}
