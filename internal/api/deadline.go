package api

import (
	"net/http"
	"strconv"
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
// timeout is its x-client-timeout-ms, or the timeout the OpenAI SDKs
// send, whichever is shorter. A malformed value is left to
// refuseBadDeadline, which runs once the caller is known.
func (s *server) clientDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := s.callerTimeout(r)
		if err != nil || d == 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := budget.ShortenForClient(r.Context(), d, s.ClientTimeoutMargin)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuseBadDeadline answers 400 to a malformed x-client-timeout-ms. It runs
// after the caller check: a caller without a valid token is told only that.
func (s *server) refuseBadDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.callerTimeout(r); err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// callerTimeout is the caller's timeout: the shorter of x-client-timeout-ms
// and the SDK's timeout headers (openaiwire.Timeout), 0 when it sent
// neither. An SDK's timeout shorter than the least x-client-timeout-ms
// accepted counts as that least: the SDK's user chose it, and is answered
// as soon as the server can.
func (s *server) callerTimeout(r *http.Request) (time.Duration, error) {
	ms, err := clientTimeout(r, s.minClientTimeout())
	if err != nil {
		return 0, err
	}
	d := time.Duration(ms) * time.Millisecond
	sdk, err := openaiwire.Timeout(r.Header)
	if err != nil {
		return 0, err
	}
	if sdk > 0 {
		sdk = max(sdk, time.Duration(s.minClientTimeout())*time.Millisecond)
		if d == 0 || sdk < d {
			d = sdk
		}
	}
	return d, nil
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
