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

// stream makes the upstream call and writes its answer as server-sent
// events, in the call's dialect, as its pieces arrive. Until the first
// frame or keep-alive, a failure is the ordinary error answer with its
// status, so a fast failure stays retryable by status; after that the
// dialect ends the stream with an error frame.
func (s *server) stream(w http.ResponseWriter, r *http.Request, call *chatCall) {
	ctx := r.Context()
	rec := recordFrom(ctx)
	rec.stream = true
	// A caller that goes away cancels r's context, and with it the
	// upstream call; one that stops reading is cut by the answer's bound
	// (boundWrites).
	es := openStream(w, func() { stampTiming(w, r) })
	// The SDK's timeout bounds the first frame only (firstFrameBy).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	late, release := s.firstFrameBy(r, es, stop)
	req := call.req
	call.out.streamed(&req, es, rec)
	start := time.Now()
	resp, err := s.Chat.Complete(ctx, &req)
	release()
	// The keep-alive's goroutine reads rec's phases (Server-Timing) when it
	// starts the stream: end stops it before the upstream phase is added.
	started := es.end()
	rec.since("upstream", start)
	if late() {
		resp, err = nil, errFirstFrameLate
	}
	ctx = r.Context()

	if err == nil {
		s.noteAnswer(ctx, *resp)
	}
	s.note(r, err)
	callerGone := err != nil && errors.Is(err, context.Canceled) && !errors.Is(context.Cause(ctx), budget.ErrExhausted)
	switch {
	case callerGone || es.failure() != nil:
	case !started && err != nil:
		s.fail(w, r, call.out.refused(err))
		return
	case err == nil && resp.FinishReason == "content_filter":
		err = errAnswerFiltered
		fallthrough
	case err != nil:
		row := rowFor(err)
		rec.code = row.code
		countTokens(rec)
		call.out.failed(ctx, es, row, err)
	default:
		s.settleAnswered(ctx)
		call.out.done(ctx, es, resp)
	}
	if failed := es.failure(); failed != nil || callerGone {
		countTokens(rec)
		noteUntaken(rec, failed, err)
	}
}

// noteUntaken puts on the log line a stream its caller did not take to its
// end (failed: the write it did not take; nil when it went away, which
// ended the call with err). Nobody reads the rest. A caller that went away
// is logged 499 client_gone; one still there that stopped reading, with
// the answer's own status and code, and writeTimedOut.
func noteUntaken(rec *record, failed, err error) {
	rec.noteWrite(failed)
	switch {
	case !writeTimedOut(failed):
		rec.code = codeClientGone
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

// countTokens puts on the log line the completion tokens the caller was
// sent, and those generated that it never got (abandoned), from the
// answer's tally: nothing is counted here.
func countTokens(rec *record) {
	rec.completionTokens = rec.tally.sent()
	if n := rec.tally.generated() - rec.completionTokens; n > 0 {
		rec.abandonedTokens = n
	}
}
