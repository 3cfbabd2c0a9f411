package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// The OpenAI surface beside POST /api/chat, on the same upstream and the
// same question: latency is one request at a time (ns/op), throughput
// requests in parallel (req/s). The surfaces differ at their two ends only:
// decoding, and the answer (timebox's JSON or deltas; OpenAI's completion
// assembled from the chunks, or the chunks passed on).

const benchQuestion = "Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."

// dialects are the two surfaces' requests for benchQuestion.
var dialects = []struct{ name, path, body string }{
	{"api-chat", "/api/chat", `{"messages":[{"role":"user","content":"` + benchQuestion + `"}]}`},
	{"openai", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + benchQuestion + `"}]}`},
}

// discard is a ResponseWriter that keeps only the status, as a connection
// would: the answers differ in size (OpenAI's chunks are Azure's, whole),
// and a recorder's growing buffer would weigh that, not the handler.
type discard struct {
	header http.Header
	code   int
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discard) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return len(p), nil
}
func (d *discard) Flush() {}

func benchDialects(b *testing.B, h http.Handler, stream bool) {
	for _, d := range dialects {
		body := d.body
		if stream && d.name == "openai" {
			body = body[:len(body)-1] + `,"stream":true}`
		}
		do := func() {
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, d.path, bytes.NewReader([]byte(body)))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Origin", allowedOrigin)
			if stream {
				r.Header.Set("Accept", "text/event-stream")
			}
			w := &discard{header: http.Header{}}
			h.ServeHTTP(w, r)
			if w.code != http.StatusOK {
				b.Fatalf("%s: status %d", d.name, w.code)
			}
		}
		b.Run(d.name+"/latency", func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				do()
			}
			reportCPU(b, start)
		})
		b.Run(d.name+"/throughput", func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			reportCPU(b, start)
		})
	}
}

// reportCPU reports the CPU a request took since start (cpu-ns/op), and
// the requests a core so serves (req/s-core): the figures that hold when
// other work shares the machine, as wall time does not.
func reportCPU(b *testing.B, start time.Duration) {
	if start == 0 {
		return
	}
	per := float64(cpuTime()-start) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(1e9/per, "req/s-core")
}

// BenchmarkDialects is each surface's own overhead per request, on an
// upstream that answers at once with a recorded stream.
func BenchmarkDialects(b *testing.B) {
	h := benchHandler(b, instant{recordedStream(b)})
	b.Run("json", func(b *testing.B) { benchDialects(b, h, false) })
	b.Run("stream", func(b *testing.B) { benchDialects(b, h, true) })
}

// BenchmarkDialectsViaSimulator adds the simulator and an in-memory HTTP
// connection.
func BenchmarkDialectsViaSimulator(b *testing.B) {
	sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"gpt-4o-mini"}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	_, client := memnet.Serve(b, sim)
	h := benchHandler(b, client)
	b.Run("json", func(b *testing.B) { benchDialects(b, h, false) })
	b.Run("stream", func(b *testing.B) { benchDialects(b, h, true) })
}
