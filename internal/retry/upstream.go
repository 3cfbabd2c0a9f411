package retry

import (
	"cmp"
	"net/http"
	"strings"
	"time"
)

// DefaultUpstreamAttempts is the server's own attempts at one call to
// Azure OpenAI, over all the backends of its pool, when
// Upstream.MaxAttempts is 0 (UPSTREAM_MAX_ATTEMPTS).
const DefaultUpstreamAttempts = 2

// ReasonFailover is the server's decision to send a fast failure's call to
// another backend of its pool at once, with no wait.
const ReasonFailover Reason = "failover"

// Upstream is the rule as the server applies it to its own calls to Azure
// OpenAI, over a pool of backends (deployments), which differs from a
// client's in three ways. Every failure Azure may not repeat (429, 413 as
// the server's name for a 429 no wait clears, any 5xx, a network error or
// an unreadable answer, given as status 0) that took FastFailure or longer
// is a timeout, whatever its headers say: the time and the money are spent,
// and the call is tried nowhere else. A fast one goes at once to another
// backend that can take the call, while MinTime is left. And where no
// other can, only a throttle is tried again, after the pool's shortest
// cooldown, while that wait fits the time left: a fast 5xx or network
// error goes back to the caller, who knows its own deadline and retries
// it, so that the server's attempts and the caller's do not multiply.
type Upstream struct {
	// MaxAttempts caps the attempts at one call, the first included, over
	// all backends; 0 means DefaultUpstreamAttempts.
	MaxAttempts int
	// FastFailure is the threshold; 0 means DefaultFastFailure.
	FastFailure time.Duration
	// MinTime is the least time that must be left for another attempt
	// (MIN_UPSTREAM_TIME); 0 means any time at all.
	MinTime time.Duration
}

// Failure is one failed attempt of the server's call, as the pool sees
// the call's next step.
type Failure struct {
	// Number is the attempt's 1-based position in the call, over all
	// backends.
	Number int
	// Elapsed is how long the attempt took.
	Elapsed time.Duration
	// Status is the attempt's HTTP status; 0 for a network error or an
	// unreadable answer, 413 for a 429 no wait clears (the request alone
	// exceeds the deployment's tokens-per-minute limit).
	Status int
	// Header is the answer's header (x-should-retry); nil for a network
	// error.
	Header http.Header
	// Remaining is the time left before the call's deadline.
	Remaining time.Duration
	// Elsewhere is true when another backend, not tried yet in this call,
	// can take it now.
	Elsewhere bool
	// Wait is what is left of the pool's shortest cooldown: when a
	// backend that was throttled can take the call again.
	Wait time.Duration
}

// Decide applies the server's rule to a failed attempt, in this order: a
// status that fails the same everywhere (a 4xx but 429 and 413, or
// x-should-retry: false) is answered (ReasonNotRetryable,
// ReasonShouldNotRetry); a slow transient failure is a timeout
// (ReasonSlowFailure, Timeout set); the last attempt is answered
// (ReasonLastAttempt); a fast one fails over when another backend can take
// the call and MinTime is left (ReasonFailover, Failover set); else a
// throttle waits the shortest cooldown when it fits (ReasonRetry, Retry
// and Wait set), or is answered with the wait that did not fit
// (ReasonWaitTooLong); any other is answered (ReasonNotRetryable).
func (u Upstream) Decide(f Failure) Decision {
	switch {
	case !transient(f.Status):
		return Decision{Reason: ReasonNotRetryable}
	case u.Slow(f.Status, f.Elapsed):
		return Decision{Reason: ReasonSlowFailure, Timeout: true}
	case strings.EqualFold(strings.TrimSpace(f.Header.Get("X-Should-Retry")), "false"):
		return Decision{Reason: ReasonShouldNotRetry}
	case f.Number >= cmp.Or(u.MaxAttempts, DefaultUpstreamAttempts):
		return Decision{Reason: ReasonLastAttempt}
	case f.Elsewhere && f.Remaining >= u.MinTime:
		return Decision{Failover: true, Reason: ReasonFailover}
	case f.Status != http.StatusTooManyRequests:
		return Decision{Reason: ReasonNotRetryable}
	case !u.Fits(f.Wait, f.Remaining):
		return Decision{Wait: f.Wait, Reason: ReasonWaitTooLong}
	}
	return Decision{Retry: true, Wait: f.Wait, Reason: ReasonRetry}
}

// Slow reports whether a failed attempt of status that took elapsed is a
// timeout: a transient failure that took FastFailure or longer. The pool
// learns nothing of its backend from it (a slow failure says nothing of
// the backend's health that a deadline does not).
func (u Upstream) Slow(status int, elapsed time.Duration) bool {
	return transient(status) && elapsed >= cmp.Or(u.FastFailure, DefaultFastFailure)
}

// transient reports whether status is a failure Azure may not repeat.
func transient(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status == http.StatusRequestEntityTooLarge || status >= 500
}

// Fits reports whether a wait for a backend fits the time left: after it,
// MinTime must still be left for the attempt. The pool asks it before a
// call's first attempt too, when every backend is cooling.
func (u Upstream) Fits(wait, remaining time.Duration) bool {
	return wait+u.MinTime < remaining
}
