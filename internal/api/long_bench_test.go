package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// the hop changes, so the resume's first events are mostly waiting. The
// gap is reported whole, and less the upstream's own time to first byte
// (the retrieve's and the resume's, from each request's arrival at the
// simulator to the first byte of its body): what is left is timebox's and
// the client's. Each iteration is one hop boundary (a hop of 1 s).
func BenchmarkHopGap(b *testing.B) {
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"o3"}, PerToken: 10 * time.Millisecond})
	up := &upstreamTimes{h: sim}
	simSrv := httptest.NewServer(up)
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
	var gaps, upstream, own []time.Duration
	for b.Loop() {
		c, _ := json.Marshal(apiwire.CursorRequest{Cursor: cursor})
		path, next = "/api/chat/continue", string(c)
		var first time.Time
		first, last2, cur := hop()
		ttfb := up.within(last, first)
		gaps, upstream, own = append(gaps, first.Sub(last)), append(upstream, ttfb), append(own, first.Sub(last)-ttfb)
		last, cursor = last2, cur
	}
	ms := func(d []time.Duration, at int) float64 { return float64(d[at].Microseconds()) / 1000 }
	for _, d := range [][]time.Duration{gaps, upstream, own} {
		slices.Sort(d)
	}
	b.ReportMetric(ms(gaps, len(gaps)/2), "gap-p50-ms")
	b.ReportMetric(ms(gaps, len(gaps)-1), "gap-max-ms")
	b.ReportMetric(ms(upstream, len(upstream)/2), "upstream-ttfb-p50-ms")
	b.ReportMetric(ms(own, len(own)/2), "gap-less-ttfb-p50-ms")
	b.ReportMetric(ms(own, len(own)-1), "gap-less-ttfb-max-ms")
}

// upstreamTimes serves h and notes, for every request, when it arrived and
// when the first byte of its body was written (a stream's first event, a
// retrieve's JSON): the upstream's own time to first byte.
type upstreamTimes struct {
	h     http.Handler
	mu    sync.Mutex
	calls [][2]time.Time
}

func (u *upstreamTimes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.h.ServeHTTP(&firstByte{ResponseWriter: w, u: u, arrived: time.Now()}, r)
}

// within is the upstream's time to first byte, summed over the requests
// that arrived between from and to, counted up to to.
func (u *upstreamTimes) within(from, to time.Time) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	var sum time.Duration
	for _, c := range u.calls {
		if c[0].After(from) && c[0].Before(to) {
			end := c[1]
			if end.After(to) {
				end = to
			}
			sum += end.Sub(c[0])
		}
	}
	return sum
}

// firstByte notes the first body byte written to its ResponseWriter.
type firstByte struct {
	http.ResponseWriter
	u       *upstreamTimes
	arrived time.Time
	noted   bool
}

func (w *firstByte) Write(p []byte) (int, error) {
	if !w.noted && len(p) > 0 {
		w.noted = true
		w.u.mu.Lock()
		w.u.calls = append(w.u.calls, [2]time.Time{w.arrived, time.Now()})
		w.u.mu.Unlock()
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *firstByte) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recordedResponsesHead is a recorded Azure OpenAI Responses stream up to
// and including its first piece of text, as Server-Sent Events.
func recordedResponsesHead(b *testing.B) string {
	raw, err := os.ReadFile(filepath.Join("..", "aoaitest", "testdata", "responses", "vercel-ai.azure-text.1.chunks.jsonl"))
	require.NoError(b, err)
	var head strings.Builder
	for line := range strings.Lines(string(raw)) {
		var e struct {
			Type string `json:"type"`
		}
		require.NoError(b, json.Unmarshal([]byte(line), &e))
		head.WriteString("event: " + e.Type + "\ndata: " + strings.TrimSpace(line) + "\n\n")
		if e.Type == "response.output_text.delta" {
			return head.String()
		}
	}
	b.Fatal("the recording has no text")
	return ""
}

// stallingResponses is the Responses API generating slowly: a create's
// stream sends head, then nothing until the request is cancelled; a cancel
// (of a generation whose caller left) is answered at once.
type stallingResponses struct{ head string }

func (u stallingResponses) Do(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	if !strings.HasPrefix(r.URL.Path, "/openai/v1/responses") {
		return nil, fmt.Errorf("not the Responses API: %s %s", r.Method, r.URL.Path)
	}
	if strings.HasSuffix(r.URL.Path, "/cancel") {
		return &http.Response{
			StatusCode: http.StatusOK, Request: r,
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   io.NopCloser(strings.NewReader(`{"id":"resp_1","object":"response","created_at":1770803606,"status":"cancelled","output":[]}`)),
		}, nil
	}
	return &http.Response{
		StatusCode: http.StatusOK, Request: r,
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(io.MultiReader(strings.NewReader(u.head), ctxReader{r.Context()})),
	}, nil
}
