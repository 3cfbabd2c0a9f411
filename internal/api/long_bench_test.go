package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
)

// BenchmarkHopGap measures what a client following a long answer sees
// between the last delta of one hop and the first delta of the next, on
// real loopback sockets (handler and simulator): the continue event, the
// client's next request, the owner's retrieve and the resume. The
// simulator writes a token every 10 ms, and the generation runs on while
// the hop changes, so the resume's first events are waiting: the gap is
// timebox's own. Each iteration is one hop boundary (a hop of 1 s).
func BenchmarkHopGap(b *testing.B) {
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"o3"}, PerToken: 10 * time.Millisecond})
	simSrv := httptest.NewServer(sim)
	b.Cleanup(simSrv.Close)
	b.Cleanup(sim.Close)
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": simSrv.URL, "AZURE_OPENAI_DEPLOYMENT": "o3", "AZURE_OPENAI_API_KEY": simKey,
		"REQUEST_BUDGET": "3s", "MAX_TOKENS": "4000", "FAST_FAILURE_THRESHOLD": "1s", "CLIENT_TIMEOUT_MARGIN": "500ms",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(b, err)
	a, err := app.New(cfg, app.Seams{Version: "bench"})
	require.NoError(b, err)
	srv := httptest.NewServer(a.Handler)
	b.Cleanup(srv.Close)

	// One generation of about 20 s (2,000 tokens at 10 ms): hops of 1 s are
	// taken from it, one per iteration.
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": "Count to 1000, with a comma between each number, no newlines and a period at the end."}}})
	path, next := "/api/chat", string(body)
	hop := func() (first, last time.Time, cursor string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(next))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := srv.Client().Do(req)
		require.NoError(b, err)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var e apiwire.ErrorBody
			_ = json.NewDecoder(resp.Body).Decode(&e)
			b.Fatalf("hop answered %d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		sc := bufio.NewScanner(resp.Body)
		var typ string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = line[len("event: "):]
			case strings.HasPrefix(line, "data: ") && typ == "delta":
				if first.IsZero() {
					first = time.Now()
				}
				last = time.Now()
			case strings.HasPrefix(line, "data: ") && typ == "continue":
				var c apiwire.Continue
				require.NoError(b, json.Unmarshal([]byte(line[len("data: "):]), &c))
				return first, last, c.Cursor
			}
		}
		b.Fatalf("hop ended without continue: status %d, last event %q", resp.StatusCode, typ)
		return
	}
	_, last, cursor := hop()
	var gaps []time.Duration
	for b.Loop() {
		c, _ := json.Marshal(apiwire.CursorRequest{Cursor: cursor})
		path, next = "/api/chat/continue", string(c)
		var first time.Time
		first, last2, cur := hop()
		gaps = append(gaps, first.Sub(last))
		last, cursor = last2, cur
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "gap-p50-ms")
	b.ReportMetric(float64(gaps[len(gaps)-1].Microseconds())/1000, "gap-max-ms")
}
