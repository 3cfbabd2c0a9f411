package aoaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// This file holds a Responses API generation: the simulated model writing
// one response, on a goroutine of its own, into a log of events that any
// number of streams (the create's, and every resume) read from. A
// background generation runs on when the HTTP call that started it ends:
// that is what background mode is for.

// maxGenerations bounds the responses a Server keeps; the oldest go first.
const maxGenerations = 1000

// The statuses of a response.
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
	statusIncomplete = "incomplete"
	statusCancelled  = "cancelled"
)

// generation is one response. Its fields up to mu are set at create and
// never change.
type generation struct {
	s          *Server
	id, msgID  string
	deployment string
	created    time.Time
	template   responseObject // the fields fixed at create
	stream     bool           // created with stream: true
	ans        answer
	prompt     int
	firstToken time.Duration
	span       time.Duration // the whole answer's time (a long directive); 0: the latency model's
	stale      time.Duration // a resume later than this is refused; 0: never
	race       bool          // a cancel completes the response instead
	keepalive  time.Duration // a keepalive event after this long without another; 0: none
	fault      Directive     // error, failed or incomplete after its Tokens
	calls      []Directive   // faults of the calls that follow (Directive.On)

	mu       sync.Mutex
	events   [][]byte // each event as sent, index = sequence number
	status   string
	text     strings.Builder
	tokens   int
	err      *responseError
	reason   string        // incomplete_details.reason
	finished int64         // completed_at, Unix seconds; 0 while running
	changed  chan struct{} // closed, and replaced, on every change
	stop     context.CancelFunc
	racing   bool          // a cancel came, with race: finish at once
	done     chan struct{} // closed when the generation ends
}

// GenerationInfo is what a Server knows of one response, for tests.
type GenerationInfo struct {
	// Status is queued, in_progress, completed, failed, incomplete or cancelled.
	Status string
	// Text is the text written so far.
	Text string
	// Events is how many events the response's stream has had.
	Events int
	// Metadata is the metadata given at create.
	Metadata map[string]string
}

// Generation reports on the response with the given id; false when the
// server has none (never created, deleted or evicted).
func (s *Server) Generation(id string) (GenerationInfo, bool) {
	g := s.generation(id)
	if g == nil {
		return GenerationInfo{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return GenerationInfo{Status: g.status, Text: g.text.String(), Events: len(g.events), Metadata: g.template.Metadata}, true
}

// Close stops every response still being written, as a server that goes
// away does, and waits for them: a test that ends with a generation
// running (a synctest bubble) must not leave its goroutine behind.
func (s *Server) Close() {
	s.mu.Lock()
	gens := make([]*generation, 0, len(s.gens))
	for _, g := range s.gens {
		gens = append(gens, g)
	}
	s.mu.Unlock()
	for _, g := range gens {
		g.stop()
		<-g.done
	}
}

// generation returns the response with the given id, or nil.
func (s *Server) generation(id string) *generation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[id]
}

// keep stores g, evicting the oldest response past maxGenerations.
func (s *Server) keep(g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Generations++
	if len(s.genOrder) >= maxGenerations {
		old := s.genOrder[0]
		s.genOrder = s.genOrder[1:]
		if o := s.gens[old]; o != nil {
			o.stop()
		}
		delete(s.gens, old)
	}
	s.gens[g.id] = g
	s.genOrder = append(s.genOrder, g.id)
}

// forget deletes the response with the given id, stopping it if it runs;
// false when there was none.
func (s *Server) forget(id string) bool {
	s.mu.Lock()
	g := s.gens[id]
	delete(s.gens, id)
	s.mu.Unlock()
	if g == nil {
		return false
	}
	g.stop()
	<-g.done
	return true
}

// start runs g until it ends or ctx does: ctx is the create's request for
// a response not in background mode, else the server's own. It returns
// the response as response.created carries it.
func (g *generation) start(ctx context.Context) responseObject {
	ctx, g.stop = context.WithCancel(ctx)
	g.done = make(chan struct{})
	g.changed = make(chan struct{})
	g.status = statusQueued
	if !g.template.Background {
		g.status = statusInProgress
	}
	created := g.object()
	g.emit(&responseEvent{Type: "response.created", Response: created})
	if g.template.Background {
		g.emitResponse("response.queued")
		g.setStatus(statusInProgress)
		g.emitResponse("response.in_progress")
	} else {
		g.emitResponse("response.in_progress")
	}
	go g.run(ctx)
	return created
}

// run writes the answer as the latency model (or a long directive) paces
// it, with the directive's fault, then the events that end it.
func (g *generation) run(ctx context.Context) {
	defer close(g.done)
	if !g.pause(ctx, g.firstToken) {
		return
	}
	item := outputItem{ID: g.msgID, Type: "message", Status: statusInProgress, Content: []outputText{}, Role: "assistant"}
	g.emit(&itemEvent{Type: "response.output_item.added", Item: item})
	g.emit(&partEvent{Type: "response.content_part.added", ItemID: g.msgID, Part: newOutputText("")})
	for _, p := range g.ans.pieces {
		if g.fault.Kind != "" && g.tokens+p.tokens > g.fault.Tokens {
			g.strike()
			return
		}
		if !g.pause(ctx, g.pace(p.tokens)) {
			return
		}
		g.mu.Lock()
		g.text.WriteString(p.text)
		g.tokens += p.tokens
		g.mu.Unlock()
		g.emit(&deltaEvent{Type: "response.output_text.delta", ItemID: g.msgID, Delta: p.text, Logprobs: []any{}, Obfuscation: obfuscation(p.text)})
	}
	if g.ans.finish == "length" {
		g.end(statusIncomplete, nil, "max_output_tokens")
		return
	}
	g.end(statusCompleted, nil, "")
}

// pace is how long the next n tokens take: the latency model's time per
// token, or an even share of a long directive's span (counted from the
// start, so that the shares add up to the span exactly).
func (g *generation) pace(n int) time.Duration {
	if g.span == 0 {
		return time.Duration(n) * g.s.opts.PerToken
	}
	total := time.Duration(g.ans.tokens)
	return g.span*time.Duration(g.tokens+n)/total - g.span*time.Duration(g.tokens)/total
}

// pause waits d, sending a keepalive each time the keepalive interval
// passes within it. It reports false when the generation was stopped; a
// racing cancel instead writes the rest of the answer at once.
func (g *generation) pause(ctx context.Context, d time.Duration) bool {
	for d > 0 {
		step := d
		if g.keepalive > 0 && g.keepalive < d {
			step = g.keepalive
		}
		t := time.NewTimer(step)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return g.stopped()
		}
		d -= step
		if d > 0 {
			g.emit(&keepaliveEvent{Type: "keepalive"})
		}
	}
	return true
}

// stopped ends a generation whose context ended: cancelled, or with race,
// its answer written to the end at once (the completion won the race with
// the cancel), reported true so that run writes the rest.
func (g *generation) stopped() bool {
	g.mu.Lock()
	racing := g.racing
	g.mu.Unlock()
	if racing {
		return true
	}
	g.setStatus(statusCancelled)
	return false
}

// strike plays the generation's fault: an error event then
// response.failed, response.failed alone, or response.incomplete.
func (g *generation) strike() {
	switch g.fault.Kind {
	case KindError:
		if g.fault.Nested {
			var e nestedErrorEvent
			e.Type = "error"
			e.Error.Type, e.Error.Message = "server_error", msgErrorEvent
			g.emit(&e)
		} else {
			g.emit(&flatErrorEvent{Type: "error", Code: "server_error", Message: msgErrorEvent})
		}
		g.end(statusFailed, &responseError{Code: "server_error", Message: msgErrorEvent}, "")
	case KindFailed:
		g.end(statusFailed, &responseError{Code: "server_error", Message: msgFailed}, "")
	case KindIncomplete:
		g.end(statusIncomplete, nil, "max_output_tokens")
	}
}

// end writes the events that close the answer's message (unless it
// failed) and the final response event, with the answer's usage, its
// error or the reason it is incomplete.
func (g *generation) end(status string, err *responseError, reason string) {
	if status != statusFailed {
		text := g.writtenText()
		itemStatus := statusCompleted
		if status == statusIncomplete {
			itemStatus = statusIncomplete
		}
		g.emit(&textDoneEvent{Type: "response.output_text.done", ItemID: g.msgID, Text: text, Logprobs: []any{}})
		g.emit(&partEvent{Type: "response.content_part.done", ItemID: g.msgID, Part: newOutputText(text)})
		g.emit(&itemEvent{Type: "response.output_item.done", Item: g.item(itemStatus)})
	}
	// Billed before the end is told: a client that has the usage finds
	// it in Stats.
	if status != statusFailed {
		g.s.bill(g.prompt, g.tokens)
	}
	// The status and the event that says it change together: a stream
	// that sees the response ended has its last event.
	g.mu.Lock()
	g.status, g.err, g.reason = status, err, reason
	g.finished = time.Now().Unix()
	g.emitLocked(&responseEvent{Type: "response." + status, Response: g.objectLocked()})
	g.mu.Unlock()
}

// cancel stops a running background response (with race, it completes
// first) and returns it as it ended; a finished one is returned as it is.
func (g *generation) cancel() responseObject {
	g.mu.Lock()
	g.racing = g.race
	g.mu.Unlock()
	g.stop()
	<-g.done
	return g.object()
}

// since returns the events from sequence number next on, the channel that
// is closed at the next change, and whether the generation has ended (no
// event will follow those returned).
func (g *generation) since(next int) ([][]byte, <-chan struct{}, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var evs [][]byte
	if next < len(g.events) {
		evs = g.events[max(next, 0):]
	}
	return evs, g.changed, g.terminal()
}

// terminal reports whether g has ended; g.mu must be held.
func (g *generation) terminal() bool {
	switch g.status {
	case statusCompleted, statusFailed, statusIncomplete, statusCancelled:
		return true
	}
	return false
}

func (g *generation) setStatus(status string) {
	g.mu.Lock()
	g.status = status
	g.notify()
	g.mu.Unlock()
}

// notify wakes every stream waiting on g; g.mu must be held.
func (g *generation) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *generation) writtenText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.text.String()
}

// emitResponse appends a response.* event carrying the response as it is.
func (g *generation) emitResponse(typ string) {
	g.emit(&responseEvent{Type: typ, Response: g.object()})
}

// emit appends one event, its sequence number set to its place in the log.
func (g *generation) emit(ev streamEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.emitLocked(ev)
}

// emitLocked is emit with g.mu held.
func (g *generation) emitLocked(ev streamEvent) {
	ev.setSequence(len(g.events))
	b, err := json.Marshal(ev)
	if err != nil {
		panic(fmt.Sprintf("aoaitest: marshal %T: %v", ev, err))
	}
	g.events = append(g.events, []byte("event: "+ev.eventType()+"\ndata: "+string(b)+"\n\n"))
	g.notify()
}

// bill counts a finished generation's tokens in the server's stats.
func (s *Server) bill(prompt, completion int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.PromptTokens += prompt
	s.stats.CompletionTokens += completion
}
