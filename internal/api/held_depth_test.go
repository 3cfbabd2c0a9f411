package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// A chat request waiting on Azure OpenAI keeps its goroutine stack for the
// whole wait: within 8 KB it stays 8 KB, a little deeper and Go doubles it
// to 16 KB (and halves it only when a quarter is used). The stack from
// net/http's server down to the handler is about 1.2 KB, and the
// allocator's slow path, which net/http's getConn and persistConn.roundTrip
// reach while the request waits, about another 1.2 KB: what is between
// (timebox's frames, azcore's pipeline, net/http's Transport) must stay
// within heldDepthLimit (race_test.go and norace_test.go: the race detector
// makes frames larger, so its limit only keeps what is there from growing).
// The depth is read from a stack address at the handler and one in an
// httptrace GetConn hook, which net/http calls from getConn on the
// request's goroutine; the path is the one app.New builds. At 5,071 bytes
// (go1.26, azcore 1.24) a 5,000-request hold sees no 8 -> 16 KB growths of
// the server goroutines; at 5,359 (chatRoute's frame with 288 bytes of
// inlined arguments), 100-260; at about 5,700 (chi's frames too), 300-600.
func TestWaitingRequestStackStaysWithinEightKB(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"nope","message":"no"}}`, http.StatusBadRequest)
	}))
	defer up.Close()
	a := stack(t, up.URL, app.Ext{})
	depth := make(chan uintptr, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A stack that will not move (be copied to a larger one) between
		// the two addresses.
		growStack()
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
	// The first request of a process goes deeper once (packages' first use:
	// encoding/json's type cache and the like); the second is every request.
	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/api/chat", strings.NewReader(ask("What does the travel policy say about trains?")))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), r)
		select {
		case d = <-depth:
		default:
			t.Fatal("the request never reached the upstream transport")
		}
	}
	t.Logf("handler to getConn: %d bytes (limit %d)", d, heldDepthLimit)
	require.LessOrEqual(t, d, uintptr(heldDepthLimit), "a request waiting on Azure OpenAI is deeper than an 8 KB stack allows; see go tool objdump for the frame sizes along the path")
}

// growStack makes the goroutine's stack large enough not to be copied to a
// larger one (every address on it moved) while a request is measured.
//
//go:noinline
func growStack() byte {
	var b [14 << 10]byte
	return b[len(b)-1]
}

// A request waiting on Azure OpenAI has set no response header yet: the
// first one costs net/http's header map a 352-byte block, held for the
// whole wait. Its own headers (the request id, CORS) are set when the
// answer starts, and are there then.
func TestWaitingRequestHoldsNoResponseHeaders(t *testing.T) {
	held, stop := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(held)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer up.Close()
	defer close(stop)
	a := stack(t, up.URL, app.Ext{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/chat", strings.NewReader(ask("What does the travel policy say about trains?")))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", allowedOrigin)
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Handler.ServeHTTP(w, r)
	}()
	<-held
	assert.Empty(t, w.Header(), "response headers set before the answer starts")
	cancel()
	<-done
	assert.NotEmpty(t, w.Header().Get("x-request-id"))
	assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
}

// routingProbe stands where Azure OpenAI is called: it notes whether the
// context a request waits with still carries chi's routing context.
type routingProbe struct {
	called  bool
	routing *chi.Context
}

func (p *routingProbe) Complete(ctx context.Context, _ *aoai.Request) (*aoai.Response, error) {
	p.called, p.routing = true, chi.RouteContext(ctx)
	return &aoai.Response{Content: "ok", FinishReason: "stop", Attempts: 1, Status: http.StatusOK}, nil
}

// chi's routing context goes back to its pool once chi has chosen the
// route: a request waiting on Azure OpenAI does not hold it (about 230
// bytes), and its log line still names the route chi chose.
func TestWaitingRequestHoldsNoRoutingContext(t *testing.T) {
	counter, err := tokens.New("o200k_base")
	require.NoError(t, err)
	logs := &syncBuffer{}
	probe := &routingProbe{}
	h := &harness{t: t, logs: logs, handler: api.New(api.Options{
		Budget: 200 * time.Second, MaxTokens: 1024, ContextWindow: 128000, AllowedOrigins: []string{allowedOrigin},
		Chat: probe, Tokens: counter, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Caller: caller.Anonymous{},
	})}
	w := h.do(chatRequest(ask("x")))
	require.Equal(t, http.StatusOK, w.Code)
	require.True(t, probe.called)
	assert.Nil(t, probe.routing, "chi's routing context is held while the request waits on Azure OpenAI")
	lines := h.logLines()
	require.Len(t, lines, 1)
	assert.Equal(t, "/api/chat", lines[0]["route"])
}
