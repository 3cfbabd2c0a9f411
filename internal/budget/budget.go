// Package budget gives each request a deadline that ends before the
// platform's. An HTTP-triggered function on Azure is cut at 230 s by the
// front end's load balancer, which answers 502 (a status clients retry)
// while the function keeps running; timebox instead starts a budget on the
// first line of each handler and gives up on its own, early enough to send a
// readable, non-retryable answer.
//
// The budget is a context deadline with a cause. Steps below the request
// (a page fetch, a document extraction) get deadlines of their own that end
// before the request's, with causes that name them, so the error mapper can
// always tell which clock ran out: context.Cause says.
package budget

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrExhausted is the cause of a request context whose budget ran out.
var ErrExhausted = errors.New("request budget exhausted")

// ErrClientTimeout is the cause of a request context whose deadline came
// from the caller's x-client-timeout-ms (minus the margin) and ran out.
var ErrClientTimeout = errors.New("client timeout reached")

// StepMargin is how much earlier than its parent a step's deadline ends, so
// that when a step is cut by the request's deadline it is still the step
// that times out, and the answer can name it.
const StepMargin = 250 * time.Millisecond

// AnswerGrace is how long past the request's deadline the end of an answer
// may take to reach the caller: the 500 that says the time ran out, a
// stream's last event, the rest of a JSON answer still on its way to a
// caller reading slowly. Every write to the caller gives up then, so a
// caller that stopped reading holds its request no longer; and shutdown
// waits as long (the longest budget plus this) for the answers in flight.
const AnswerGrace = 5 * time.Second

// Budget describes the deadline of one request. It is read-only after
// Start; Shorten replaces the context, not the Budget's start.
type Budget struct {
	// Started is when the handler's first line ran.
	Started time.Time
	// Deadline is when the request gives up.
	Deadline time.Time
	// ClientTimeout is the caller's x-client-timeout-ms, 0 when not sent.
	ClientTimeout time.Duration
	// FirstByte bounds, from Started, the caller's wait for the answer's
	// beginning (an OpenAI SDK's timeout on the answer's headers); 0: the
	// caller sets no such bound.
	FirstByte time.Duration
	// Silence is the longest silence the caller keeps waiting through on
	// an answer under way (an OpenAI SDK's read timeout); 0: no bound.
	Silence time.Duration
}

type key struct{}

// Start begins a budget of total from now: it returns a context that ends
// at now+total with cause ErrExhausted, and the Budget stored in it.
func Start(ctx context.Context, total time.Duration) (context.Context, context.CancelFunc, *Budget) {
	now := time.Now()
	b := &Budget{Started: now, Deadline: now.Add(total)}
	ctx, cancel := context.WithDeadlineCause(ctx, b.Deadline, ErrExhausted)
	return context.WithValue(ctx, key{}, b), cancel, b
}

// From returns the Budget of ctx, or nil when none was started.
func From(ctx context.Context) *Budget {
	b, _ := ctx.Value(key{}).(*Budget)
	return b
}

// ShortenForClient moves the deadline to Started + clientTimeout - margin
// when that is earlier than the budget's, so the server answers before the
// caller gives up. It records the client's timeout on the Budget. When the
// deadline does not move, it returns ctx itself and a cancel that does
// nothing: the SPFx client sends its timeout on every request, and a
// context of its own would be held for the whole wait on Azure OpenAI for
// nothing.
func ShortenForClient(ctx context.Context, clientTimeout, margin time.Duration) (context.Context, context.CancelFunc) {
	b := From(ctx)
	if b == nil {
		return ctx, keep
	}
	b.ClientTimeout = clientTimeout
	d := b.Started.Add(clientTimeout - margin)
	if !d.Before(b.Deadline) {
		return ctx, keep
	}
	b.Deadline = d
	return context.WithDeadlineCause(ctx, d, ErrClientTimeout)
}

// keep is the cancel of a context ShortenForClient left as it was.
func keep() {}

// Remaining returns the time left before ctx's deadline; 0 when it has
// passed, and a very long time when ctx has none.
func Remaining(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Duration(1<<63 - 1)
	}
	return max(time.Until(d), 0)
}

// StepTimeout is the cause of a step's context that ran out. Step names the
// kind ("fetch", "extract") and Name the thing (a URL, a document name).
// Which clock ran out is said by Request: zero when it was the step's own
// Timeout; otherwise the step's deadline was the request's (less
// StepMargin), because the request had less time left than the step's
// timeout, and Request is the request's whole time (its budget, or the
// caller's timeout less the margin).
type StepTimeout struct {
	Step    string
	Name    string
	Timeout time.Duration
	Request time.Duration
}

func (e *StepTimeout) Error() string {
	if e.Request > 0 {
		return fmt.Sprintf("%s %s: the request's %s ran out", e.Step, e.Name, e.Request.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %s: no answer within %s", e.Step, e.Name, e.Timeout.Round(time.Millisecond))
}

// Is makes a StepTimeout match context.DeadlineExceeded.
func (e *StepTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// Step returns a context for one downstream step that ends after timeout,
// or StepMargin before the parent's deadline, whichever is first, with a
// *StepTimeout cause that says which of the two it was. When the parent
// ends first (it is cancelled), the parent's cause stands.
func Step(parent context.Context, step, name string, timeout time.Duration) (context.Context, context.CancelFunc) {
	cause := &StepTimeout{Step: step, Name: name, Timeout: timeout}
	d := time.Now().Add(timeout)
	if pd, ok := parent.Deadline(); ok && pd.Add(-StepMargin).Before(d) {
		d = pd.Add(-StepMargin)
		cause.Request = RequestTime(parent)
	}
	return context.WithDeadlineCause(parent, d, cause)
}

// RequestTime is the whole time a request was given: from its start to its
// deadline (the caller's timeout included); 0 without a budget.
func RequestTime(ctx context.Context) time.Duration {
	if b := From(ctx); b != nil {
		return b.Deadline.Sub(b.Started)
	}
	return 0
}

// StepCause returns the *StepTimeout that ended ctx, if one did.
func StepCause(ctx context.Context) (*StepTimeout, bool) {
	var st *StepTimeout
	ok := errors.As(context.Cause(ctx), &st)
	return st, ok
}
