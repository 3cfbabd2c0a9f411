package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// startBudget starts the request's budget (package budget): its context
// ends Options.Budget after the request's first line, with the cause
// budget.ErrExhausted, and every step and the upstream call run under it.
// When it runs out the answer is a 500 deadline_exceeded: chi's
// middleware.Timeout and http.TimeoutHandler are not used because they
// answer 504 and 503, which clients retry.
func (s *server) startBudget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel, _ := budget.Start(r.Context(), s.Budget)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// boundWrites makes every write of the answer give up budget.AnswerGrace
// after the request's deadline in force: the end of an answer (the
// deadline's own 500, a stream's last event, the rest of a JSON answer to a
// caller reading slowly) still goes out, and a caller that stopped reading
// holds the request, its memory and the instance's shutdown no longer than
// that. It is listed after each middleware that sets the deadline
// (startBudget, clientDeadline), so that it follows the shorter one.
// net/http clears the connection's write deadline once the answer is
// finished, so a kept-alive connection's next request starts with none.
func (s *server) boundWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if deadline, ok := r.Context().Deadline(); ok {
			// A writer with no connection (a test's recorder) has no write
			// to bound.
			_ = http.NewResponseController(w).SetWriteDeadline(deadline.Add(budget.AnswerGrace))
		}
		next.ServeHTTP(w, r)
	})
}

// clientDeadline shortens the budget to the caller's timeout less
// ClientTimeoutMargin, when that ends earlier, so that the caller is
// answered before it gives up (budget.ShortenForClient). The caller's
// timeout is its x-client-timeout-ms, or the OpenAI SDKs' timeout that
// bounds the whole answer (openaiwire.Timeouts.Whole), whichever is
// shorter. The SDKs' other bounds go on the budget for the answer's
// writer: the one on the answer's beginning (Timeouts.First, the budget's
// FirstByte) bounds the whole wait for an answer written whole
// (untilWhole) and the first frame of a stream (firstFrameBy); the one on
// a silence (Timeouts.Gap, Silence) the keep-alives. A malformed value is
// left to refuseBadDeadline, which runs once the caller is known.
func (s *server) clientDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, sdk, err := s.callerTimeout(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		if b := budget.From(r.Context()); b != nil {
			b.FirstByte, b.Silence = sdk.First, sdk.Gap
		}
		if d == 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := budget.ShortenForClient(r.Context(), d, s.ClientTimeoutMargin)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// untilWhole shortens r's deadline, for an answer written whole, to the
// caller's bound on the answer's beginning (budget.Budget.FirstByte) less
// ClientTimeoutMargin: the headers of a whole answer come with its end.
// The write bound follows it (boundWrites).
func (s *server) untilWhole(w http.ResponseWriter, r *http.Request) (*http.Request, context.CancelFunc) {
	b := budget.From(r.Context())
	if b == nil || b.FirstByte == 0 || b.ClientTimeout > 0 && b.ClientTimeout <= b.FirstByte {
		return r, func() {}
	}
	ctx, cancel := budget.ShortenForClient(r.Context(), b.FirstByte, s.ClientTimeoutMargin)
	if deadline, ok := ctx.Deadline(); ok {
		_ = http.NewResponseController(w).SetWriteDeadline(deadline.Add(budget.AnswerGrace))
	}
	return r.WithContext(ctx), cancel
}

// errFirstFrameLate ends a stream whose first frame did not go out within
// the SDK's bound on the answer's beginning less ClientTimeoutMargin: the
// deadline's 500, before the SDK gives up and asks again.
var errFirstFrameLate = fmt.Errorf("no first frame within the caller's timeout: %w", budget.ErrClientTimeout)

// firstFrameBy bounds the wait for a stream's first frame (a chunk, or
// the first keep-alive) by the caller's bound on the answer's beginning
// (budget.Budget.FirstByte) less ClientTimeoutMargin: then, if nothing
// went out, es starts no more and stop is called. Once the stream has
// begun it runs on the request's own deadline, with keep-alives often
// enough for the caller's bound on a silence (Silence). late reports
// whether the bound passed first; done releases its timer.
func (s *server) firstFrameBy(r *http.Request, es *eventStream, stop func()) (late func() bool, done func()) {
	b := budget.From(r.Context())
	if b == nil {
		return func() bool { return false }, func() {}
	}
	es.beatEvery(openaiwire.Timeouts{Gap: b.Silence}.KeepAlive(keepAlive))
	if b.FirstByte == 0 {
		return func() bool { return false }, func() {}
	}
	if b.ClientTimeout == 0 {
		b.ClientTimeout = b.FirstByte
	}
	var passed atomic.Bool
	t := time.AfterFunc(time.Until(b.Started.Add(b.FirstByte-s.ClientTimeoutMargin)), func() {
		if es.startNoMore() {
			passed.Store(true)
			stop()
		}
	})
	return passed.Load, func() { t.Stop() }
}

// refuseBadDeadline answers 400 to a malformed x-client-timeout-ms or SDK
// timeout header. It runs after the caller check: a caller without a valid
// token is told only that.
func (s *server) refuseBadDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := s.callerTimeout(r); err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// callerTimeout is the caller's timeout that bounds its whole answer: the
// shorter of x-client-timeout-ms and the SDK's Timeouts.Whole, 0 when it
// sent neither; and the SDK's timeouts (openaiwire.Timeout). An SDK's
// timeout shorter than the least x-client-timeout-ms accepted counts as
// that least: the SDK's user chose it, and is answered as soon as the
// server can.
func (s *server) callerTimeout(r *http.Request) (time.Duration, openaiwire.Timeouts, error) {
	ms, err := clientTimeout(r, s.minClientTimeout())
	if err != nil {
		return 0, openaiwire.Timeouts{}, err
	}
	d := time.Duration(ms) * time.Millisecond
	sdk, err := openaiwire.Timeout(r.Header)
	if err != nil {
		return 0, openaiwire.Timeouts{}, err
	}
	least := time.Duration(s.minClientTimeout()) * time.Millisecond
	if sdk.First > 0 {
		sdk.First = max(sdk.First, least)
	}
	if sdk.Whole > 0 {
		sdk.Whole = max(sdk.Whole, least)
		if d == 0 || sdk.Whole < d {
			d = sdk.Whole
		}
	}
	return d, sdk, nil
}

// minClientTimeout is the least x-client-timeout-ms accepted, in ms: the
// margin plus a second, so that the server keeps time to work and to
// answer.
func (s *server) minClientTimeout() int64 {
	return (s.ClientTimeoutMargin + time.Second).Milliseconds()
}

// clientTimeout reads x-client-timeout-ms: absent is fine (0); otherwise a
// positive whole number of milliseconds of at least minimum.
func clientTimeout(r *http.Request, minimum int64) (int64, error) {
	vs := r.Header.Values("x-client-timeout-ms")
	if len(vs) == 0 || len(vs) == 1 && vs[0] == "" {
		return 0, nil
	}
	if len(vs) > 1 {
		// Two deadlines (a proxy that appended one?): which the caller
		// keeps is unknown, so neither is guessed, as with two Origins.
		return 0, invalid("x-client-timeout-ms must be sent once.")
	}
	ms, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil || ms <= 0 {
		return 0, invalid("x-client-timeout-ms must be a positive whole number of milliseconds.")
	}
	if ms > MaxClientTimeout {
		return 0, invalid("x-client-timeout-ms must be at most %d (a day).", MaxClientTimeout)
	}
	if ms < minimum {
		return 0, invalid("x-client-timeout-ms must be at least %d.", minimum)
	}
	return ms, nil
}
