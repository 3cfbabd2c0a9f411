package api

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmaxmax/go-sse"
)

// keepAlive is the longest silence on an open stream: after it a comment
// line goes out, so that no proxy on the way takes the stream for dead.
const keepAlive = 15 * time.Second

// The stream's events and its comment.
var (
	eventDelta = sse.Type("delta")
	eventDone  = sse.Type("done")
	eventError = sse.Type("error")
)

// wantsStream reports whether the caller asked for server-sent events:
// text/event-stream among its Accept types, with a q above 0.
func wantsStream(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			return true
		}
	}
	return false
}

// eventStream is timebox's one writer of server-sent events. Nothing is
// sent until the first event or the first keep-alive: until then the
// handler may still answer with an ordinary JSON error and its status.
// Its methods are safe for concurrent use (the keep-alive timer writes from
// its own goroutine); after the first failed write the caller is gone and
// every later write is dropped.
type eventStream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	begin func() // sets the answer's headers, once, before the first byte

	mu      sync.Mutex
	started bool
	noStart bool          // the stream may no longer begin (startNoMore)
	closed  bool          // no keep-alive after this
	every   time.Duration // the longest silence once the stream has begun
	err     error         // the first failed write
	timer   *time.Timer
	deltas  bool // a delta went out
}

// openStream prepares a stream on w whose first keep-alive goes out after
// keepAlive of silence; begin sets headers (CORS, timing) just before the
// first byte. Every write gives up at the answer's bound (boundWrites).
func openStream(w http.ResponseWriter, begin func()) *eventStream {
	es := &eventStream{w: w, rc: http.NewResponseController(w), begin: begin, every: keepAlive}
	es.mu.Lock() // the timer's goroutine reads es.timer
	es.timer = time.AfterFunc(keepAlive, es.keepAlive)
	es.mu.Unlock()
	return es
}

// keepAlive sends a comment after a silence. A write under way (it may be
// blocked on a slow caller) is no silence, so it does not wait for it: the
// write restarts the clock when it is done.
func (es *eventStream) keepAlive() {
	if !es.mu.TryLock() {
		return
	}
	defer es.mu.Unlock()
	if es.closed {
		return
	}
	var m sse.Message
	m.AppendComment("keep-alive")
	es.write(&m)
}

// beatEvery makes d the longest silence once the stream has begun; before
// it, the first keep-alive still waits keepAlive, since it begins the
// stream.
func (es *eventStream) beatEvery(d time.Duration) {
	es.mu.Lock()
	defer es.mu.Unlock()
	es.every = d
}

// startNoMore stops a stream that has not begun from beginning, and
// reports whether it had not: its handler then answers as it would
// without a stream.
func (es *eventStream) startNoMore() bool {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.started {
		return false
	}
	es.noStart = true
	return true
}

// delta sends one piece of the answer, and reports whether it went out.
func (es *eventStream) delta(text string) bool {
	b, _ := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	es.mu.Lock()
	defer es.mu.Unlock()
	if !es.write(event(eventDelta, b)) {
		return false
	}
	es.deltas = true
	return true
}

// end stops the keep-alive and reports whether anything was sent: when
// nothing was, the handler answers as it would without a stream.
func (es *eventStream) end() (started bool) {
	es.mu.Lock()
	defer es.mu.Unlock()
	es.closed = true
	es.timer.Stop()
	return es.started
}

// last sends the stream's final event, done or error, with v as its data.
func (es *eventStream) last(typ sse.EventType, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("api: marshal " + typ.String() + ": " + err.Error()) // every value is one of this package's own types
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	es.write(event(typ, b))
}

// failure is the first write the caller did not take: nil while it takes
// the stream. It went away, or stopped reading (writeTimedOut).
func (es *eventStream) failure() error {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.err
}

// sentDelta reports whether a delta went out.
func (es *eventStream) sentDelta() bool {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.deltas
}

func event(typ sse.EventType, data []byte) *sse.Message {
	m := &sse.Message{Type: typ}
	m.AppendData(string(data))
	return m
}

// write sends m and flushes it, starting the answer first if it has not
// started, and restarts the silence clock. es.mu is held.
func (es *eventStream) write(m io.WriterTo) bool {
	if es.err != nil || es.noStart {
		return false
	}
	if !es.started {
		es.started = true
		es.begin()
		h := es.w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		// Proxies that buffer (nginx and its kind) pass the stream on as it comes.
		h.Set("X-Accel-Buffering", "no")
		es.w.WriteHeader(http.StatusOK)
	}
	_, err := m.WriteTo(es.w)
	if err == nil {
		err = es.rc.Flush()
	}
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		es.err = err
		return false
	}
	if !es.closed {
		es.timer.Reset(es.every)
	}
	return true
}
