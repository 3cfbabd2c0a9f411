package api_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// firstWrite is a ResponseWriter that notes when the body's first byte is
// written (a stream's first event) and discards the rest.
type firstWrite struct {
	h     http.Header
	start time.Time
	at    time.Duration
}

func (w *firstWrite) Header() http.Header { return w.h }
func (w *firstWrite) WriteHeader(int)     {}
func (w *firstWrite) Write(p []byte) (int, error) {
	if w.at == 0 {
		w.at = time.Since(w.start)
	}
	return len(p), nil
}

// BenchmarkStreamFirstByte is the time to first byte timebox adds to the
// upstream's: the upstream answers its recorded stream at once (its own
// time to first byte is 0), so the time from the request's arrival to the
// first delta written is all timebox's: middleware, decoding, prompt fit,
// the azcore pipeline, reading the first chunks, the SSE writer. Target:
// p50 under 1 ms.
func BenchmarkStreamFirstByte(b *testing.B) {
	h := benchHandler(b, instant{recordedStream(b)})
	body := []byte(ask("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."))
	var ttfb []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/chat", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("Origin", allowedOrigin)
		w := &firstWrite{h: http.Header{}, start: time.Now()}
		h.ServeHTTP(w, r)
		if !strings.HasPrefix(w.h.Get("Content-Type"), "text/event-stream") || w.at == 0 {
			b.Fatalf("not a stream: %v", w.h)
		}
		ttfb = append(ttfb, w.at)
	}
	slices.Sort(ttfb)
	b.ReportMetric(float64(ttfb[len(ttfb)/2].Microseconds()), "p50-ttfb-us")
	b.ReportMetric(float64(ttfb[len(ttfb)*95/100].Microseconds()), "p95-ttfb-us")
}

// stalling is an upstream that sends the first chunks of its recorded
// stream (the annotations and the first token), then nothing until the
// request is cancelled: a long generation, held.
type stalling struct{ head string }

func (u stalling) Do(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{
		StatusCode: http.StatusOK, Request: r,
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(io.MultiReader(strings.NewReader(u.head), ctxReader{r.Context()})),
	}, nil
}

// ctxReader blocks until ctx ends.
type ctxReader struct{ ctx context.Context }

func (c ctxReader) Read([]byte) (int, error) {
	<-c.ctx.Done()
	return 0, c.ctx.Err()
}

// BenchmarkHeldStreams is the memory and goroutines one stream costs while
// it is held open (the upstream generating slowly): 500 streams are opened
// over in-memory HTTP connections and each has its first delta, then the
// live heap (after two collections) and the goroutine stacks in use and
// the goroutines are counted, per stream. "floor" is the same with a plain net/http handler that writes one
// event and waits, so timebox's own cost is the difference. "background" is
// the first hop of a long answer (the Responses API in background mode,
// from the recorded Azure stream's first events) held the same way, measured
// in the same iteration as today's stream: background/chat is the ratio of
// their heap and stacks together. All count the client's side of each
// connection too.
func BenchmarkHeldStreams(b *testing.B) {
	const n = 500
	events := strings.SplitAfter(recordedStream(b), "\n\n")
	head := strings.Join(events[:3], "") // annotations, role, the first token
	body := ask("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ...")
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: delta\ndata: {\"text\":\"1\"}\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	chat := benchHandler(b, stalling{head})
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"timebox", chat},
		{"floor", floor},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				heap, stack, goroutines := holdStreams(b, tt.h, n, body)
				b.ReportMetric(heap, "B/stream")
				b.ReportMetric(stack, "stack-B/stream")
				b.ReportMetric(goroutines, "goroutines/stream")
			}
		})
	}
	b.Run("background", func(b *testing.B) {
		// An o3 deployment: long answers in background mode, the default where the model supports it.
		background := stackOn(b, "http://127.0.0.1:8081", "o3", app.Seams{Upstream: stallingResponses{recordedResponsesHead(b)}}).Handler
		for b.Loop() {
			heap, stack, goroutines := holdStreams(b, background, n, body)
			chatHeap, chatStack, _ := holdStreams(b, chat, n, body)
			b.ReportMetric(heap, "B/stream")
			b.ReportMetric(stack, "stack-B/stream")
			b.ReportMetric(goroutines, "goroutines/stream")
			b.ReportMetric((heap+stack)/(chatHeap+chatStack), "background/chat")
		}
	})
}

// holdStreams opens n streams on h, waits for each one's first event, and
// returns the live heap, the goroutine stacks in use and the goroutines
// per stream while all are held. The live heap, not the heap's spans in
// use: a span holds objects of other streams and of the run before, so the
// spans' count swings widely from run to run.
func holdStreams(b *testing.B, h http.Handler, n int, body string) (heapPer, stackPer, goroutinesPer float64) {
	l := memnet.Listen()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	client := &http.Client{Transport: &http.Transport{DialContext: l.DialContext, MaxIdleConnsPerHost: n}}
	defer func() {
		client.CloseIdleConnections()
		_ = srv.Close()
	}()

	var before, held runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	var ready, done sync.WaitGroup
	for range n {
		ready.Add(1)
		done.Go(func() {
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://timebox.test/api/chat", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "text/event-stream")
			resp, err := client.Do(r)
			if err != nil {
				ready.Done()
				b.Error(err)
				return
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line != "event: delta\n" {
				b.Errorf("first line %q, %v", line, err)
			}
			ready.Done()
			<-ctx.Done()
		})
	}
	ready.Wait()
	// Two collections: the first may leave stacks to shrink at the second.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&held)
	grown := runtime.NumGoroutine() - goroutines
	cancel()
	done.Wait()
	// The handlers end after their callers (a long answer's first hop
	// cancels its generation): the next count starts when they have.
	client.CloseIdleConnections()
	_ = srv.Close()
	for end := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(end); {
		runtime.Gosched()
	}
	require.False(b, b.Failed())
	per := func(held, before uint64) float64 { return float64(int64(held)-int64(before)) / float64(n) }
	return per(held.HeapAlloc, before.HeapAlloc), per(held.StackInuse, before.StackInuse), float64(grown) / float64(n)
}
