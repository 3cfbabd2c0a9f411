package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/budget"
)

// errAnswerFiltered ends a stream whose answer the content filter stopped
// (finish_reason content_filter). Only a stream's error event carries it;
// a caller that does not stream gets the 200 with that finishReason.
var errAnswerFiltered = &Error{http.StatusBadRequest, apiwire.CodeContentFiltered,
	"The rest of the answer was blocked by the content filter."}

// stream answers as server-sent events: a delta per piece of the answer as
// it arrives, then done (the same object as the JSON 200) or error. Until
// the first event or keep-alive, a failure is the ordinary JSON error with
// its status, so a fast failure stays retryable by status; after that it is
// an error event: before the first delta one that carries that status and
// its retry hints (judged by the client's rule as the JSON answer would
// be), after it one that is never retried.
func (s *server) stream(w http.ResponseWriter, r *http.Request, call *chatCall) {
	ctx := r.Context()
	rec := recordFrom(ctx)
	rec.stream = true
	// A caller that goes away cancels r's context, and with it the
	// upstream call; one that stops reading is cut by the write deadline.
	deadline, _ := ctx.Deadline()
	es := openStream(w, deadline, func() { stampTiming(w, r) })
	req := call.req
	req.OnDelta = func(text string) {
		rec.firstToken(text)
		es.delta(text)
	}
	start := time.Now()
	resp, err := s.Chat.Complete(ctx, &req)
	// The keep-alive's goroutine reads rec's phases (Server-Timing) when it
	// starts the stream: end stops it before the upstream phase is added.
	started := es.end()
	rec.since("upstream", start)

	generated := partialOf(err)
	if err == nil {
		generated = resp.Content
		s.noteAnswer(ctx, *resp)
	}
	s.note(r, err)
	callerGone := err != nil && errors.Is(err, context.Canceled) && !errors.Is(context.Cause(ctx), budget.ErrExhausted)
	switch {
	case callerGone || es.gone():
	case !started && err != nil:
		s.fail(w, r, err)
		return
	case err == nil && resp.FinishReason == "content_filter":
		err = errAnswerFiltered
		fallthrough
	case err != nil:
		a := rowFor(err)
		rec.code = a.code
		s.countTokens(rec, generated, es.delivered())
		es.last(eventError, streamError(ctx, a, es.delivered() != ""))
	default:
		es.last(eventDone, chatResponse(ctx, *resp, call.fit))
	}
	if es.gone() || callerGone {
		// The caller went away, or stopped reading: nobody reads the rest.
		rec.code = codeClientGone
		s.countTokens(rec, generated, es.delivered())
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

// countTokens puts on the log line the completion tokens the caller was
// sent, and those generated that it never got (abandoned).
func (s *server) countTokens(rec *record, generated, delivered string) {
	rec.completionTokens = s.Tokens.Text(delivered)
	if n := s.Tokens.Text(generated) - rec.completionTokens; n > 0 {
		rec.abandonedTokens = n
	}
}
