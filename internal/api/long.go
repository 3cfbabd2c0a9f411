package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tmaxmax/go-sse"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/longanswer"
	"github.com/timebox-dev/timebox/internal/prompt"
)

// This file holds long answers: a generation in the Responses API's
// background mode (Options.LongAnswers), delivered across hops. A hop is
// one request with its own budget; when the budget is about to run out
// and the answer is still being written, a stream ends with a continue
// event and a JSON answer is a 202, each with the cursor that
// POST /api/chat/continue goes on with (docs/api.md, "Long answers").

// eventContinue ends a stream whose hop is over before its answer.
var eventContinue = sse.Type("continue")

// continuePoll is the wait a 202 names before its continue: none is
// needed (a continue waits for the answer itself, up to its own hop), and
// Retry-After counts whole seconds.
const continuePoll = time.Second

// maxCursorBody bounds the body of a continue or a cancel: a cursor is
// well under a hundred bytes.
const maxCursorBody = 4 << 10

var (
	errCursorNotFound = &Error{http.StatusNotFound, apiwire.CodeNotFound,
		"This answer cannot be continued: it has ended, was cancelled, is too old, or was not started by you."}
	errCursorBodyTooLarge = &Error{http.StatusRequestEntityTooLarge, apiwire.CodeBodyTooLarge,
		fmt.Sprintf(`A continue or a cancel takes only the cursor the answer gave, {"cursor": "..."}, within %s; this request is larger. Send the cursor as it came.`, sizeForPeople(maxCursorBody))}
	// errAnswerCancelled ends a hop whose generation a cancel stopped
	// while it streamed (a cancel sent to another instance): final, as
	// asking again finds nothing to continue.
	errAnswerCancelled = &Error{http.StatusConflict, apiwire.CodeCancelled,
		"The answer was cancelled (a cancel was sent for it), so it stopped here; what was written so far is kept."}
	errLongAnswerLimit = &Error{http.StatusInternalServerError, apiwire.CodeDeadlineExceeded,
		"The answer took longer than this service allows for one answer, so it was stopped; what was written so far is kept. Try a shorter question."}
)

// hop runs one hop, relaying its text to onDelta.
type hop func(onDelta func(string)) (*longanswer.Result, error)

// longAnswer answers a prepared chat call as a long answer's first hop.
func (s *server) longAnswer(w http.ResponseWriter, r *http.Request, call *chatCall) {
	ctx := r.Context()
	req := &aoai.GenerationRequest{Messages: call.req.Messages, MaxTokens: call.req.MaxTokens, RequestID: call.req.RequestID,
		Metadata: quotaMetadata(ctx)}
	run := func(onDelta func(string)) (*longanswer.Result, error) {
		req.OnDelta = onDelta
		return s.LongAnswers.Start(ctx, req, ownerOf(ctx))
	}
	s.answerHop(w, r, call.fit, run)
}

// handleContinue is POST /api/chat/continue: the next hop of a long
// answer, streamed after where the cursor stopped, or, to a caller that
// does not stream, waited for up to the hop's own budget.
func (s *server) handleContinue() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		c, err := s.decodeCursor(ctx, w, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		stream := wantsStream(r)
		run := func(onDelta func(string)) (*longanswer.Result, error) {
			return s.LongAnswers.Continue(ctx, c, ownerOf(ctx), !stream, requestID(ctx), onDelta)
		}
		s.answerHop(w, r, prompt.Result{}, run)
	})
}

// handleCancel is POST /api/chat/cancel: the generation is cancelled
// upstream, 204; one that has ended already is not an error.
func (s *server) handleCancel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		c, err := s.decodeCursor(ctx, w, r)
		if err == nil {
			recordFrom(ctx).responseID, recordFrom(ctx).hop = c.ResponseID, c.Hop
			var res *longanswer.Result
			res, err = s.LongAnswers.Cancel(ctx, c, ownerOf(ctx))
			s.settleHop(ctx, res, http.StatusNoContent, false)
		}
		if err != nil {
			s.fail(w, r, longError(err, ""))
			return
		}
		recordFrom(ctx).cancelledUpstream = true
		stampTiming(w, r)
		w.WriteHeader(http.StatusNoContent)
	})
}

// decodeCursor reads the cursor of a continue or a cancel: a cursor that
// does not open (edited, forged, another deployment's, sealed under a key
// no longer kept) is not found, as one that is not the caller's, before
// anything goes upstream.
func (s *server) decodeCursor(ctx context.Context, w http.ResponseWriter, r *http.Request) (cursor.Cursor, error) {
	if s.LongAnswers == nil {
		return cursor.Cursor{}, errCursorNotFound
	}
	body, err := readJSON(ctx, w, r, maxCursorBody)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return cursor.Cursor{}, errCursorBodyTooLarge
	}
	if err != nil {
		return cursor.Cursor{}, err
	}
	var req apiwire.CursorRequest
	if err := Decode(body, &req); err != nil {
		return cursor.Cursor{}, err
	}
	if req.Cursor == "" {
		return cursor.Cursor{}, invalid("cursor is required.")
	}
	c, err := s.Cursors.Open(req.Cursor)
	if err != nil {
		return cursor.Cursor{}, errCursorNotFound
	}
	return c, nil
}

// ownerOf is the verified caller, as a long answer's owner.
func ownerOf(ctx context.Context) cursor.Owner {
	c := callerOf(ctx)
	return cursor.Owner{OID: c.OID, TID: c.TID}
}

// answerHop runs a hop and answers it: as server-sent events to a caller
// that streams, else as JSON.
func (s *server) answerHop(w http.ResponseWriter, r *http.Request, fit prompt.Result, run hop) {
	if wantsStream(r) {
		s.relayHop(w, r, fit, run)
		return
	}
	ctx := r.Context()
	rec := recordFrom(ctx)
	start := time.Now()
	res, err := run(s.tallied(ctx))
	rec.since("upstream", start)
	s.noteHop(ctx, res)
	s.settleHop(ctx, res, hopStatus(res, err), true)
	switch {
	case err != nil:
		s.fail(w, r, longError(err, textOf(res)))
	case res.Next != nil:
		h := w.Header()
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(continuePoll), 10))
		h.Set("retry-after-ms", strconv.FormatInt(continuePoll.Milliseconds(), 10))
		stampTiming(w, r)
		writeJSON(w, http.StatusAccepted, apiwire.InProgress{Status: apiwire.StatusInProgress, Cursor: s.sealNext(ctx, res, true),
			Partial: apiwire.PartialAnswer{Answer: res.Text, CompletionTokens: billOf(ctx).hopTokens}})
		_, _ = sendWhole(w)
		s.chargeHop(ctx, res, true)
	default:
		stampTiming(w, r)
		writeJSON(w, http.StatusOK, longResponse(ctx, res, fit))
	}
}

// relayHop streams a hop (relay): a delta per piece as it arrives, then
// done (the whole answer and the generation's usage), continue (the
// cursor) or error. As for a question, a failure before anything went out
// is the JSON error with its status, so that a fast 503 on a continue is
// retried with the same cursor, and yields the same text.
func (s *server) relayHop(w http.ResponseWriter, r *http.Request, fit prompt.Result, run hop) {
	h := &hopRelay{s: s, fit: fit, run: run}
	s.relay(w, r, h)
	// Once the cursor has gone, or could not go: the hop received what it
	// received either way.
	s.chargeHop(r.Context(), h.res, false)
}

// hopRelay is a long answer's hop relayed.
type hopRelay struct {
	s   *server
	fit prompt.Result
	run hop
	res *longanswer.Result
}

// call runs the hop under the request's own context (run's): a hop whose
// caller goes away cancels its generation (longanswer); the first frame's
// bound only stops the stream from beginning.
func (h *hopRelay) call(ctx context.Context, es *eventStream) error {
	h.s.tallied(ctx)
	var err error
	h.res, err = h.run(deltas(ctx, es))
	return err
}

func (h *hopRelay) ended(ctx context.Context, err error, gone bool) error {
	h.s.noteHop(ctx, h.res)
	h.s.settleHop(ctx, h.res, hopStatus(h.res, err), false)
	err = longError(err, "")
	if err == nil && h.res.Done && h.res.FinishReason == "content_filter" {
		err = errAnswerFiltered
	}
	if !gone {
		noteErr(ctx, err)
	}
	return err
}

// count does nothing: the hop's tokens are on the bill already (noteHop).
func (h *hopRelay) count(context.Context) {}

func (h *hopRelay) done(ctx context.Context, es *eventStream) {
	if h.res.Next != nil {
		es.last(eventContinue, apiwire.Continue{Cursor: h.s.sealNext(ctx, h.res, false)})
		return
	}
	es.last(eventDone, longResponse(ctx, h.res, h.fit))
}

func (h *hopRelay) failed(ctx context.Context, es *eventStream, row errorRow, _ error) {
	es.last(eventError, streamError(ctx, row, es.sentDelta()))
}

func (h *hopRelay) refused(err error) error { return err }

// noteHop puts a hop on the log line: the response, the hop's number and
// the tokens it delivered; the generation's usage only on the hop that
// saw its end, so that it is counted once; and whether it was cancelled
// upstream.
func (s *server) noteHop(ctx context.Context, res *longanswer.Result) {
	if res == nil {
		return
	}
	rec, b := recordFrom(ctx), billOf(ctx)
	rec.responseID, rec.hop = res.ResponseID, res.Hop
	b.hopTokens = b.tally.of(res.Text) // counted as its pieces came
	rec.attempts, rec.upstreamID = res.Attempts, res.UpstreamRequestID
	rec.backend, rec.trail, b.backend = res.Backend, res.Trail, res.Backend
	if res.Attempts > 0 {
		rec.upstreamStatus = http.StatusOK
	}
	rec.cancelledUpstream = res.Cancelled
	if res.Done {
		b.prompt, b.completion = res.Usage.PromptTokens, res.Usage.CompletionTokens
	}
}

// longError is the error of a hop as the error table answers it: a cursor
// that may not be continued is not found; the limit is a deadline, with
// the text so far.
func longError(err error, partial string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cursor.ErrNotFound):
		return errCursorNotFound
	case errors.Is(err, longanswer.ErrLimit):
		return &withPartial{err: errLongAnswerLimit, partial: partial}
	case errors.Is(err, longanswer.ErrCancelled):
		return &withPartial{err: errAnswerCancelled, partial: partial}
	}
	return err
}

// withPartial is an error that keeps the text the answer had reached.
type withPartial struct {
	err     error
	partial string
}

func (e *withPartial) Error() string { return e.err.Error() }
func (e *withPartial) Unwrap() error { return e.err }

// textOf is a hop's text, "" without a hop.
func textOf(res *longanswer.Result) string {
	if res == nil {
		return ""
	}
	return res.Text
}

// longResponse is a finished long answer's JSON: the 200 body and the data
// of a stream's done event, the whole answer with the generation's usage.
func longResponse(ctx context.Context, res *longanswer.Result, fit prompt.Result) ChatResponse {
	return chatResponse(ctx, aoai.Response{
		Content: res.Answer, FinishReason: res.FinishReason, Usage: res.Usage, Attempts: res.Attempts,
	}, fit)
}
