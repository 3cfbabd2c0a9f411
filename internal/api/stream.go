package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/budget"
)

// errAnswerFiltered ends a stream whose answer the content filter stopped
// (finish_reason content_filter). Only a stream's error event carries it;
// a caller that does not stream gets the 200 with that finishReason.
var errAnswerFiltered = &Error{http.StatusBadRequest, apiwire.CodeContentFiltered,
	"The rest of the answer was blocked by the content filter."}

// A relayed is one upstream answer as relay carries it to its caller: a
// question's stream (chatRelay), a long answer's hop (hopRelay).
type relayed interface {
	// call makes the upstream call, its pieces written on es as they come.
	call(ctx context.Context, es *eventStream) error
	// ended notes how the call ended (the log line, the bill, a long
	// answer's quota) once the stream's keep-alives have stopped, and
	// returns the error the answer ends with: err as the answer's dialect
	// reads it, or errAnswerFiltered for an answer the content filter
	// stopped. gone says the caller is gone (the stream's writes failed,
	// or it went away).
	ended(ctx context.Context, err error, gone bool) error
	// count puts on the bill the tokens of an answer that did not end
	// whole.
	count(ctx context.Context)
	// done writes the end of an answer that went well.
	done(ctx context.Context, es *eventStream)
	// failed ends with row, err's row of the error table, a stream that
	// err cut after it began.
	failed(ctx context.Context, es *eventStream, row errorRow, err error)
	// refused is the error answered for err when nothing of the answer
	// went out.
	refused(err error) error
}

// relay carries an upstream answer to its caller as server-sent events, as
// its pieces arrive, and writes its end once. Until the first frame or
// keep-alive, a failure is the ordinary error answer with its status, so a
// fast failure stays retryable by status; after that the answer ends with
// its dialect's error frame. A caller that went away, or stopped reading,
// is answered nothing more. A caller that goes away cancels r's context,
// and with it the upstream call; one that stops reading is cut by the
// answer's bound (boundWrites). The SDK's timeout bounds the first frame
// only (firstFrameBy).
func (s *server) relay(w http.ResponseWriter, r *http.Request, a relayed) {
	ctx := r.Context()
	rec := recordFrom(ctx)
	rec.stream = true
	es := openStream(w, func() { stampTiming(w, r) })
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	late, release := s.firstFrameBy(r, es, stop)
	start := time.Now()
	err := a.call(callCtx, es)
	release()
	// The keep-alive's goroutine reads rec's phases (Server-Timing) when it
	// starts the stream: end stops it before the upstream phase is added.
	started := es.end()
	rec.since("upstream", start)
	if late() {
		err = errFirstFrameLate
	}
	callerGone := err != nil && errors.Is(err, context.Canceled) && !errors.Is(context.Cause(ctx), budget.ErrExhausted)
	err = a.ended(ctx, err, callerGone || es.failure() != nil)
	switch {
	case callerGone || es.failure() != nil:
	case !started && err != nil:
		s.fail(w, r, a.refused(err))
		return
	case err != nil:
		row := rowFor(err)
		rec.code = row.code
		a.count(ctx)
		a.failed(ctx, es, row, err)
	default:
		a.done(ctx, es)
	}
	if failed := es.failure(); failed != nil || callerGone {
		a.count(ctx)
		noteUntaken(ctx, failed, err)
	}
}

// stream makes a question's upstream call and relays its answer, in the
// call's dialect.
func (s *server) stream(w http.ResponseWriter, r *http.Request, call *chatCall) {
	s.relay(w, r, &chatRelay{s: s, q: call})
}

// chatRelay is a question's answer relayed: one Chat Completions call,
// written by the call's dialect.
type chatRelay struct {
	s    *server
	q    *chatCall
	resp *aoai.Response
}

func (c *chatRelay) call(ctx context.Context, es *eventStream) error {
	req := c.q.req
	c.q.out.streamed(ctx, &req, es)
	resp, err := c.s.Chat.Complete(ctx, &req)
	c.resp = resp
	return err
}

func (c *chatRelay) ended(ctx context.Context, err error, _ bool) error {
	if err != nil {
		c.resp = nil
	} else {
		c.s.noteAnswer(ctx, *c.resp)
	}
	noteErr(ctx, err)
	if err == nil && c.resp.FinishReason == "content_filter" {
		return errAnswerFiltered
	}
	return err
}

func (c *chatRelay) count(ctx context.Context) { billOf(ctx).countTokens() }

func (c *chatRelay) done(ctx context.Context, es *eventStream) {
	c.s.settleAnswered(ctx)
	c.q.out.done(ctx, es, c.resp)
}

func (c *chatRelay) failed(ctx context.Context, es *eventStream, row errorRow, err error) {
	c.q.out.failed(ctx, es, row, err)
}

func (c *chatRelay) refused(err error) error { return c.q.out.refused(err) }

// noteUntaken puts on the log line a stream its caller did not take to its
// end (failed: the write it did not take; nil when it went away, which
// ended the call with err). Nobody reads the rest. A caller that went away
// is logged 499 client_gone; one still there that stopped reading, with
// the answer's own status and code, and writeTimedOut.
func noteUntaken(ctx context.Context, failed, err error) {
	rec := recordFrom(ctx)
	rec.noteWrite(failed)
	switch {
	case !writeTimedOut(failed):
		rec.code = codeClientGone
		billOf(ctx).gone = true
	case err != nil:
		rec.code = rowFor(err).code
	}
}

// streamError is the data of the error event for answer a. Before the
// first delta (only a keep-alive went out) it carries the status and retry
// hints of the JSON answer the caller would otherwise have had: the attempt
// failed before its first token, and the client's rule judges it as that
// answer. After a delta nothing is retried, so it carries none.
func streamError(ctx context.Context, a errorRow, partial bool) apiwire.StreamError {
	e := apiwire.StreamError{Error: apiwire.Error{Code: a.code, Message: a.msg, RequestID: requestID(ctx)}, Partial: partial}
	if !partial {
		shouldRetry := a.shouldRetry()
		e.Status, e.RetryAfterMs, e.ShouldRetry = a.status, a.retryAfterMs(), &shouldRetry
	}
	return e
}

// countTokens puts on the bill the completion tokens the caller was sent,
// and those generated that it never got (abandoned), from the answer's
// tally: nothing is counted here.
func (b *bill) countTokens() {
	b.completion = b.tally.sent()
	if n := b.tally.generated() - b.completion; n > 0 {
		b.abandoned = n
	}
}
