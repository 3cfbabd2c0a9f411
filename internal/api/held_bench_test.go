package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/app"
)

// BenchmarkHeldRequests is make perf's memory row in a benchmark: what a
// request costs while it waits on Azure OpenAI (the upstream has its body
// and has not answered). 500 chat requests are sent over loopback TCP, each
// on its own connection, to the stack app.New builds (the production
// transport, not a test one) and to "floor", a plain net/http handler that
// decodes the JSON and calls the same upstream with http.Client (as
// perf/cmd/floor does); once the upstream holds all 500, the goroutine
// stacks, the heap in use and the goroutines are counted per request. Both
// count the caller's and the upstream's side of each connection too (one
// process), so the difference is timebox's own. stack-B/req is the figure
// the depth of the wait decides: a request waiting deeper than about 7 KB
// has a 16 KB goroutine stack instead of 8 KB (Go doubles a stack that
// fills, and halves it only when a quarter is used).
func BenchmarkHeldRequests(b *testing.B) {
	const n = 500
	var held atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		held.Add(1)
		defer held.Add(-1)
		<-r.Context().Done()
	}))
	defer up.Close()
	a := stack(b, up.URL, app.Seams{})
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"timebox", a.Handler},
		{"floor", floorHandler(up.URL)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				stack, heap, alloc, goroutines := holdRequests(b, tt.h, n, &held)
				b.ReportMetric(stack, "stack-B/req")
				b.ReportMetric(heap, "heap-B/req")
				b.ReportMetric(alloc, "alloc-B/req")
				b.ReportMetric(goroutines, "goroutines/req")
			}
		})
	}
}

// holdRequests sends n chat requests to h over loopback, each on a new
// connection, waits until the upstream holds them all, and returns per
// request the stack and heap in use, the bytes allocated (garbage included:
// it sets how far the heap grows between collections) and the goroutines.
func holdRequests(b *testing.B, h http.Handler, n int, held *atomic.Int64) (stack, heap, alloc, goroutines float64) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/chat", strings.NewReader(ask("What does the travel policy say about trains?")))
			r.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(r); err == nil {
				resp.Body.Close()
				b.Errorf("answered while the upstream hangs: %d", resp.StatusCode)
			}
		})
	}
	for held.Load() < int64(n) && !b.Failed() {
		runtime.Gosched()
	}
	// Two collections: the first may leave stacks to shrink at the second.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&during)
	grown := runtime.NumGoroutine() - g
	cancel()
	done.Wait()
	for held.Load() > 0 {
		runtime.Gosched()
	}
	require.False(b, b.Failed())
	per := func(after, before uint64) float64 { return float64(int64(after)-int64(before)) / float64(n) }
	return per(during.StackInuse, before.StackInuse), per(during.HeapInuse, before.HeapInuse), per(during.TotalAlloc, before.TotalAlloc), float64(grown) / float64(n)
}

// floorHandler is perf/cmd/floor's chat handler: decode the JSON, call the
// upstream with http.Client, answer what it said; nothing else.
func floorHandler(upstreamURL string) http.Handler {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 100
	client := &http.Client{Transport: t}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": in.Messages, "max_tokens": 1024,
			"stream": true, "stream_options": map[string]bool{"include_usage": true}})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, upstreamURL+"/openai/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("api-key", simKey)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

// BenchmarkHeldDepth reports how deep on its goroutine's stack a chat
// request waits on Azure OpenAI: the bytes from the handler's first frame to
// net/http's getConn (read in an httptrace GetConn hook, which net/http
// calls on the request's goroutine), through the middleware, the chat
// pipeline, azcore's pipeline and http.Client. With net/http's server above
// it (about 1.2 KB) and the allocator's slow path below (about 1.2 KB), a
// wait deeper than about 5 KB here no longer fits an 8 KiB stack, which Go
// then doubles to 16 KiB for the whole wait (BenchmarkHeldRequests'
// stack-B/req).
func BenchmarkHeldDepth(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"nope","message":"no"}}`, http.StatusBadRequest)
	}))
	defer up.Close()
	a := stack(b, up.URL, app.Seams{})
	depth := make(chan uintptr, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A stack large enough not to be copied (every address on it
		// moved) between the two addresses.
		deepen(64)
		var here byte
		top := uintptr(unsafe.Pointer(&here))
		trace := &httptrace.ClientTrace{GetConn: func(string) {
			var there byte
			select {
			case depth <- top - uintptr(unsafe.Pointer(&there)):
			default:
			}
		}}
		a.Handler.ServeHTTP(w, r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	})
	// No collection while measuring: it may shrink the stack (copy it).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var d uintptr
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(ask("What does the travel policy say about trains?")))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), r)
		select {
		case d = <-depth:
		default:
			b.Fatal("the request never reached the upstream transport")
		}
	}
	b.ReportMetric(float64(d), "held-depth-B")
}

// deepen uses about n KB of the goroutine's stack and returns: the stack
// keeps its size until a collection shrinks it.
func deepen(n int) byte {
	var buf [1024]byte
	buf[n%len(buf)] = byte(n)
	if n == 0 {
		return buf[0]
	}
	return deepen(n-1) + buf[n%len(buf)]
}
