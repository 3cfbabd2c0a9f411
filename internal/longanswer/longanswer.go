// Package longanswer delivers an answer longer than a request's budget
// across hops. The generation runs at Azure OpenAI in the Responses API's
// background mode, not in an instance, so any instance can serve any hop: a
// hop relays the generation's events until its budget is about to run out,
// then hands the caller a cursor (package cursor) to continue with. Before
// a continue relays anything, or a cancel cancels anything, a retrieve
// checks that the response is the caller's and within LONG_ANSWER_LIMIT.
// A caller that leaves during a hop has the generation cancelled: none runs
// for nobody.
package longanswer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/cursor"
)

// ErrLimit is the failure of a hop that reached LONG_ANSWER_LIMIT: the
// generation is cancelled upstream, and the answer is the text so far.
var ErrLimit = errors.New("long answer limit reached")

// ErrCancelled is the failure of a hop whose generation was cancelled
// while the hop streamed it (a cancel sent to another instance): the
// stream ended with no end of its own, and the response says cancelled.
// The answer is the text so far.
var ErrCancelled = errors.New("long answer cancelled")

// cancelTimeout bounds the cancel a hop sends upstream when its caller has
// gone or its limit has come: it is sent on the hop's behalf, after the
// request's own context has ended.
const cancelTimeout = 10 * time.Second

// Upstream is what the hops need of Azure OpenAI (aoai.Client). A
// generation lives at the backend that created it: every later call names
// that backend (a cursor's Backend), and goes nowhere else.
type Upstream interface {
	Create(ctx context.Context, req *aoai.GenerationRequest) (*aoai.Hop, error)
	Resume(ctx context.Context, backend, id string, after int, requestID string, onDelta func(string)) (*aoai.Hop, error)
	Retrieve(ctx context.Context, backend, id string) (*aoai.StoredResponse, error)
	Await(ctx context.Context, backend, id string, interval time.Duration) (*aoai.StoredResponse, error)
	Cancel(ctx context.Context, backend, id string) (*aoai.StoredResponse, error)
}

// The defaults of Hops' Margin and Poll.
const (
	// DefaultMargin is ample to write a cursor, and leaves the hop's
	// answer well inside the request's budget.
	DefaultMargin = 2 * time.Second
	// DefaultPoll is the interval of Azure's how-to's polling example.
	DefaultPoll = 2 * time.Second
)

// Hops runs the hops of long answers. It is safe for concurrent use.
type Hops struct {
	Upstream Upstream
	// Limit is the longest a generation may run from its start
	// (LONG_ANSWER_LIMIT).
	Limit time.Duration
	// Margin is what a hop keeps of its context's time to hand out its
	// cursor: its stream ends Margin before the context's deadline, or a
	// quarter of the request's time before it when that is less.
	Margin time.Duration
	// Poll is how often a response whose stream cannot be resumed is
	// retrieved until it ends. 0 means DefaultPoll.
	Poll time.Duration
}

// Result is what one hop did.
type Result struct {
	// ResponseID is the generation's response at Azure OpenAI.
	ResponseID string
	// Hop is this hop's number: 1 for the create's, 2 for the first
	// continue.
	Hop int
	// Received is the completion tokens the hops before this one
	// delivered, as its cursor says (0 in the first hop).
	Received int
	// Text is the text this hop delivered: relayed to onDelta as it came;
	// for a Continue with whole, the answer's whole text so far.
	Text string
	// Next is the cursor to continue with; nil when the generation has
	// ended, failed or been cancelled. Its Received is this hop's
	// Received: the caller, which counts tokens, adds what this hop
	// delivered before it seals it.
	Next *cursor.Cursor
	// Done is true when the generation ended in this hop: FinishReason and
	// Usage are then the whole generation's, counted once.
	Done         bool
	FinishReason string
	Usage        aoai.Usage
	// Answer is the whole generation's text, when Done.
	Answer string
	// Cancelled is true when this hop cancelled the generation upstream
	// (its caller left, the limit came, or a cancel asked for it).
	Cancelled bool
	// End says how the generation ended, when this hop saw it end
	// (EndCompleted, ...); "" while it goes on. Usage is then what Azure
	// OpenAI reported of it, zero when it reported nothing (a cancelled
	// generation's usage is null).
	End string
	// Unwatched is true when this hop saw the end without relaying the
	// generation up to it (a cancel, a continue refused): it ran on
	// unwatched since its last hop ended.
	Unwatched bool
	// Metadata is the response's metadata, as a later hop retrieved it;
	// nil in the first hop (its request has what it was created with).
	Metadata map[string]string
	// Polled is true when the stream could not be resumed and the rest was
	// read from a retrieve.
	Polled bool
	// Backend is the backend that holds the response.
	Backend string
	// Attempts, Trail and UpstreamRequestID are this hop's streaming call's.
	Attempts          int
	Trail             []aoai.Attempt
	UpstreamRequestID string
}

// How a generation ended (Result.End).
const (
	EndCompleted  = "completed"   // it ended with its answer, whole or cut at its token limit
	EndCancelled  = "cancelled"   // a cancel asked for it
	EndCallerGone = "caller_gone" // its caller left during a hop: cancelled
	EndLimit      = "limit"       // LONG_ANSWER_LIMIT came: cancelled
	EndFailed     = "failed"      // Azure OpenAI failed it
)

// Start runs the first hop: it creates the generation with owner in its
// metadata (beside what req.Metadata already holds) and relays its text
// to req.OnDelta. A failure before the
// response exists is the create's error, as Complete's would be.
func (h *Hops) Start(ctx context.Context, req *aoai.GenerationRequest, owner cursor.Owner) (*Result, error) {
	md := owner.Metadata()
	for k, v := range req.Metadata {
		if _, ok := md[k]; !ok {
			md[k] = v
		}
	}
	req.Metadata = md
	hopCtx, cancel := h.hopContext(ctx, time.Time{})
	defer cancel()
	hop, err := h.Upstream.Create(hopCtx, req)
	if hop == nil {
		return nil, err
	}
	return h.settle(ctx, hopCtx, hop, err, cursor.Cursor{Hop: 1, Backend: hop.Backend}, false, hop.CreatedAt)
}

// Continue runs a later hop from c for caller: the generation's text after
// c, relayed to onDelta; with whole, the whole text so far instead (for a
// caller that does not stream: nothing is relayed, and Text is the answer
// up to where the hop stopped). A cursor that is not the caller's, or past
// its limit, or names a response that is gone, is cursor.ErrNotFound, and
// nothing is relayed.
func (h *Hops) Continue(ctx context.Context, c cursor.Cursor, caller cursor.Owner, whole bool, requestID string, onDelta func(string)) (*Result, error) {
	r, err := h.owned(ctx, c, caller)
	if err != nil {
		return ended(r, c, err), err
	}
	deadline := r.CreatedAt.Add(h.Limit)
	hopCtx, cancel := h.hopContext(ctx, deadline)
	defer cancel()
	after := c.After
	if whole {
		// Event 0 is response.created: every piece of text comes after it.
		after = 0
	}
	hop, err := h.Upstream.Resume(hopCtx, c.Backend, r.ID, after, requestID, onDelta)
	if errors.Is(err, aoai.ErrResumeRefused) {
		res, err := h.poll(ctx, hopCtx, c, whole, onDelta, r.CreatedAt)
		res.Metadata = r.Metadata
		return res, err
	}
	if hop == nil && hopCtx.Err() != nil && ctx.Err() == nil {
		// The hop's time ran out before the resume answered: nothing was
		// relayed, and the next hop goes on from the same place.
		hop = &aoai.Hop{ResponseID: r.ID, Last: c.After}
	}
	if hop == nil {
		return nil, err
	}
	res, err := h.settle(ctx, hopCtx, hop, err, c, whole, r.CreatedAt)
	res.Metadata = r.Metadata
	return res, err
}

// ended is the Result of a continue refused for the response r it
// retrieved (nil when not the caller's or unknown): how it had ended, when
// it had: past its limit (and cancelled now, if it still ran), or failed.
func ended(r *aoai.StoredResponse, c cursor.Cursor, err error) *Result {
	if r == nil {
		return nil
	}
	res := &Result{ResponseID: r.ID, Backend: c.Backend, Hop: c.Hop, Received: c.Received, Metadata: r.Metadata, Usage: r.Usage, Unwatched: true}
	switch {
	case r.Status == "failed":
		res.End = EndFailed
	case !errors.Is(err, cursor.ErrExpired):
		return nil
	case r.Status == "completed" || r.Status == "incomplete":
		res.End = EndCompleted
	default:
		// owned cancelled it, if it still ran.
		res.End, res.Cancelled = EndLimit, r.Status != "cancelled"
	}
	return res
}

// Cancel cancels the generation c names, for caller, and says how it
// ended: cancelled, or as it had ended before. One that has ended is not
// an error; one past its limit is still its owner's to cancel.
func (h *Hops) Cancel(ctx context.Context, c cursor.Cursor, caller cursor.Owner) (*Result, error) {
	r, err := h.Upstream.Retrieve(ctx, c.Backend, c.ResponseID)
	if errors.Is(err, aoai.ErrUnknownResponse) {
		return nil, cursor.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("cancel long answer: %w", err)
	}
	if err := cursor.Check(r.Metadata, r.CreatedAt, caller, h.Limit, time.Now()); err != nil && !errors.Is(err, cursor.ErrExpired) {
		return nil, err
	}
	res := &Result{ResponseID: r.ID, Backend: c.Backend, Hop: c.Hop, Received: c.Received, Metadata: r.Metadata, Unwatched: true}
	if !r.Terminal() {
		r, err = h.Upstream.Cancel(ctx, c.Backend, r.ID)
		if err != nil {
			return nil, fmt.Errorf("cancel long answer: %w", err)
		}
		res.Cancelled = true
	}
	res.End, res.Usage = endOf(r), r.Usage
	return res, nil
}

// endOf is how a response that has ended ended.
func endOf(r *aoai.StoredResponse) string {
	switch r.Status {
	case "completed", "incomplete":
		return EndCompleted
	case "failed":
		return EndFailed
	}
	return EndCancelled
}

// owned retrieves the response c names and checks it is caller's, within
// its limit, and still going or finished with an answer. A response past
// its limit is cancelled if it still runs. A refused response that is the
// caller's (past its limit, failed) is returned with the refusal.
func (h *Hops) owned(ctx context.Context, c cursor.Cursor, caller cursor.Owner) (*aoai.StoredResponse, error) {
	r, err := h.Upstream.Retrieve(ctx, c.Backend, c.ResponseID)
	if errors.Is(err, aoai.ErrUnknownResponse) {
		return nil, cursor.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("continue long answer: %w", err)
	}
	switch err := cursor.Check(r.Metadata, r.CreatedAt, caller, h.Limit, time.Now()); {
	case errors.Is(err, cursor.ErrExpired):
		if !r.Terminal() {
			h.cancel(ctx, c.Backend, r.ID)
		}
		return r, err
	case err != nil:
		return nil, err
	}
	switch r.Status {
	case "cancelled":
		return nil, cursor.ErrNotFound
	case "failed":
		return r, &aoai.Error{Kind: aoai.KindBroken, Code: r.ErrorCode, Err: errors.New("the response failed")}
	}
	return r, nil
}

// poll reads the rest of a generation whose stream Azure OpenAI refused to
// resume: a retrieve every Poll until it ends, within the hop. The rest is
// then cut from the whole text at the cursor's offset: late, never lost.
func (h *Hops) poll(ctx, hopCtx context.Context, c cursor.Cursor, whole bool, onDelta func(string), created time.Time) (*Result, error) {
	res := &Result{ResponseID: c.ResponseID, Backend: c.Backend, Hop: c.Hop, Received: c.Received, Polled: true}
	r, err := h.Upstream.Await(hopCtx, c.Backend, c.ResponseID, cmp.Or(h.Poll, DefaultPoll))
	switch {
	case err == nil && (r.Status == "completed" || r.Status == "incomplete"):
		text := r.Text
		if !whole {
			text = text[min(c.Offset, len(text)):]
			if onDelta != nil && text != "" {
				onDelta(text)
			}
		}
		res.Text, res.Done, res.FinishReason, res.Usage, res.Answer = text, true, r.FinishReason, r.Usage, r.Text
		res.End = EndCompleted
		return res, nil
	case err == nil && r.Status == "failed":
		res.End = EndFailed
		return res, &aoai.Error{Kind: aoai.KindBroken, Code: r.ErrorCode, Err: errors.New("the response failed")}
	case err == nil:
		return res, cursor.ErrNotFound // cancelled meanwhile
	}
	hop := &aoai.Hop{ResponseID: c.ResponseID, Last: c.After}
	if whole && r != nil {
		hop.Text = r.Text // nothing to show yet: a response's output comes with its end
	}
	return h.settle(ctx, hopCtx, hop, err, c, whole, created)
}

// settle ends a hop whose stream stopped with hop and err: the end of the
// generation; a cursor, when only the hop's own time ran out; the caller
// gone or the limit come, the generation cancelled; or the failure.
func (h *Hops) settle(ctx, hopCtx context.Context, hop *aoai.Hop, err error, c cursor.Cursor, whole bool, created time.Time) (*Result, error) {
	res := &Result{ResponseID: hop.ResponseID, Backend: cmp.Or(hop.Backend, c.Backend), Hop: c.Hop, Received: c.Received, Text: hop.Text,
		Attempts: hop.Attempts, Trail: hop.Trail, UpstreamRequestID: hop.UpstreamRequestID}
	switch {
	case err == nil && hop.Done:
		res.Done, res.FinishReason, res.Usage, res.Answer = true, hop.FinishReason, hop.Usage, hop.Answer
		res.End = EndCompleted
		return res, nil
	case hop.ResponseID == "":
		return res, err
	case ctx.Err() != nil:
		// The caller left (or its own deadline came): no generation
		// runs for nobody.
		res.Usage = h.cancel(ctx, res.Backend, hop.ResponseID)
		res.Cancelled, res.End = true, EndCallerGone
		return res, err
	case hopCtx.Err() != nil && !time.Now().Before(created.Add(h.Limit)):
		res.Usage = h.cancel(ctx, res.Backend, hop.ResponseID)
		res.Cancelled, res.End = true, EndLimit
		return res, ErrLimit
	case hop.Status == "failed":
		res.End = EndFailed
		return res, err
	case err != nil && c.Hop == 1 && hopCtx.Err() == nil:
		// The first hop failed after its response was created: its caller
		// has no cursor to go on with, so the generation is cancelled (no
		// generation runs for nobody), and it ended failed.
		res.Usage = h.cancel(ctx, res.Backend, hop.ResponseID)
		res.Cancelled, res.End = true, EndFailed
		return res, err
	case err != nil && hopCtx.Err() == nil && h.cancelledMeanwhile(ctx, res.Backend, hop):
		res.End = EndCancelled
		return res, ErrCancelled
	case hopCtx.Err() != nil:
		// The offset is of the whole text, whichever way the hops were
		// read: a caller may stream the rest of what it took whole.
		offset := c.Offset + len(hop.Text)
		if whole {
			offset = max(c.Offset, len(hop.Text))
		}
		res.Next = &cursor.Cursor{ResponseID: hop.ResponseID, Backend: res.Backend, After: hop.Last, Hop: c.Hop + 1, Offset: offset, Received: c.Received}
		return res, nil
	}
	return res, err
}

// cancelledMeanwhile reports whether the generation of a later hop whose
// stream failed was cancelled: Azure ends the stream of a cancelled
// response with no event (simulator.md), so only the response itself can
// say it, read once, within the request's time and bounded as a cancel is.
func (h *Hops) cancelledMeanwhile(ctx context.Context, backend string, hop *aoai.Hop) bool {
	if hop.Status == "cancelled" {
		return true
	}
	ctx, stop := context.WithTimeout(ctx, cancelTimeout)
	defer stop()
	r, err := h.Upstream.Retrieve(ctx, backend, hop.ResponseID)
	return err == nil && r.Status == "cancelled"
}

// cancel cancels a generation upstream on behalf of a hop whose context
// may have ended already, and returns its usage: zero unless it had ended
// with one.
func (h *Hops) cancel(ctx context.Context, backend, id string) aoai.Usage {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	r, err := h.Upstream.Cancel(ctx, backend, id)
	if err != nil {
		return aoai.Usage{}
	}
	return r.Usage
}

// hopContext is the context a hop's stream runs in: it ends Margin before
// ctx's deadline, so that the cursor can still be handed out, and no later
// than limitAt (when given). A request given little time in all (a small
// REQUEST_BUDGET, a caller in a hurry) keeps a quarter of it, when that is
// less than Margin: a fixed margin would leave its hop no time to stream.
func (h *Hops) hopContext(ctx context.Context, limitAt time.Time) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if ok {
		margin := h.Margin
		if t := budget.RequestTime(ctx); t > 0 {
			margin = min(margin, t/4)
		}
		d = d.Add(-margin)
	}
	if !limitAt.IsZero() && (!ok || limitAt.Before(d)) {
		d, ok = limitAt, true
	}
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, d)
}
