// Package admission bounds the material the process holds for requests in
// flight. Each request says what it will cost before it commits (its body
// before reading it, its documents and pages before extracting them); past
// the process-wide limit it is refused at once, with a status clients
// retry (503 overloaded, Retry-After), so that it finds an instance with
// room (a scaled-out one, or this one a moment later) instead of taking
// this one past its memory. Sixteen maximum-size requests took an
// unbounded handler to 1.27 GB; a 2 GB instance has no room for more.
package admission

import (
	"errors"
	"sync"
	"time"
)

// ErrOverloaded is returned when a cost does not fit the limit. The API
// answers it 503 overloaded with Retry-After.
var ErrOverloaded = errors.New("admission: material in flight at the limit")

// RetryAfter is what a refused caller is told to wait: room comes back as
// soon as a request in flight ends, and a request lasts seconds.
const RetryAfter = time.Second

// Gate is the process-wide limit. The zero Gate admits nothing; use New.
type Gate struct {
	limit int64
	mu    sync.Mutex
	held  int64
	// since is the material released since memory was last given back.
	since int64
	// onIdle runs (on its own goroutine, one at a time) when the last
	// request in flight ends after at least idleAfter bytes were released.
	onIdle  func()
	running bool
}

// idleAfter is how much material released since the last time makes an
// idle gate give memory back: less is not worth a collection.
const idleAfter = 64 << 20

// New returns a Gate that admits up to limit bytes of material at once.
// When the last request in flight ends after large material was released,
// onIdle runs (nil: nothing); the binary passes debug.FreeOSMemory, so that
// an instance that served a burst of large requests gives the memory back
// to the machine once they end, instead of holding it for minutes.
func New(limit int64, onIdle func()) *Gate { return &Gate{limit: limit, onIdle: onIdle} }

// Limit is the gate's limit in bytes.
func (g *Gate) Limit() int64 { return g.limit }

// Held is the material admitted and not yet released.
func (g *Gate) Held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// Ticket is what one request holds; Release returns all of it. A nil
// *Ticket (no gate) admits everything.
type Ticket struct {
	g    *Gate
	mu   sync.Mutex
	held int64
}

// Ticket starts a request's account at the gate; g may be nil (no limit).
func (g *Gate) Ticket() *Ticket {
	if g == nil {
		return nil
	}
	return &Ticket{g: g}
}

// Take admits cost more bytes for the request, or returns ErrOverloaded
// and admits nothing.
func (t *Ticket) Take(cost int64) error {
	if t == nil || cost <= 0 {
		return nil
	}
	g := t.g
	g.mu.Lock()
	if g.held+cost > g.limit {
		g.mu.Unlock()
		return ErrOverloaded
	}
	g.held += cost
	g.mu.Unlock()
	t.mu.Lock()
	t.held += cost
	t.mu.Unlock()
	return nil
}

// Release returns everything the request took. It is safe to call twice.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	t.mu.Lock()
	n := t.held
	t.held = 0
	t.mu.Unlock()
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= n
	g.since += n
	if g.held == 0 && g.since >= idleAfter && g.onIdle != nil && !g.running {
		g.since, g.running = 0, true
		go func() {
			g.onIdle()
			g.mu.Lock()
			g.running = false
			g.mu.Unlock()
		}()
	}
}

// The cost model: what a request holds, estimated from what is known
// before the work. A request's peak is about five times its body, half of
// it garbage the collector has not yet taken back at GOGC 100 (make
// hostile's memory rows measure it; docs/operations.md).
const (
	// BodyFactor: the body read whole, the documents decoded from its
	// base64 (3/4 of it), the strings of the decoded JSON and the prompt
	// assembled from them.
	BodyFactor = 3
	// StepFactor: per document or page, its extracted text (at most the
	// text cap), the extractor's working copy and the prompt's.
	StepFactor = 3
)

// BodyCost is the cost of a body of contentLength bytes, known before it is
// read; -1 (chunked, unknown) counts as maxBody.
func BodyCost(contentLength, maxBody int64) int64 {
	if contentLength < 0 || contentLength > maxBody {
		contentLength = maxBody
	}
	return BodyFactor * contentLength
}

// MaterialCost is the cost of extracting documents and fetching pages,
// known once the body is decoded: each document's text is at most textCap;
// each page is at most pageCap fetched, and its text at most textCap.
func MaterialCost(documents, pages int, textCap, pageCap int64) int64 {
	return int64(documents)*StepFactor*textCap + int64(pages)*(pageCap+StepFactor*textCap)
}
