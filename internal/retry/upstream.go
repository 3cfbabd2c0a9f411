package retry

import (
	"cmp"
	"net/http"
	"time"
)

// DefaultUpstreamAttempts is the server's own attempts at a throttled call
// to Azure OpenAI when Upstream.MaxAttempts is 0 (UPSTREAM_MAX_ATTEMPTS).
const DefaultUpstreamAttempts = 2

// Upstream is the rule as the server applies it to its own calls to Azure
// OpenAI, which differs from a client's in two ways. Every failure Azure may
// not repeat (429, any 5xx, a network error or an unreadable answer, given
// as status 0) that took FastFailure or longer is a timeout, whatever its
// headers say: the time and the money are spent. And of the fast ones, only
// throttles are retried here, while their wait fits the time left (there is
// no cap besides it): a fast 5xx or network error goes back to the caller,
// who knows its own deadline and retries it, so that the server's attempts
// and the caller's do not multiply.
type Upstream struct {
	// MaxAttempts caps the attempts at a throttled call, the first
	// included; 0 means DefaultUpstreamAttempts.
	MaxAttempts int
	// FastFailure is the threshold; 0 means DefaultFastFailure.
	FastFailure time.Duration
}

// Decide applies the server's rule to a failed attempt. A failure judged a
// timeout has ReasonSlowFailure and Timeout set; a throttle that may be
// retried has Retry set and the wait; anything else is not retried here
// (ReasonNotRetryable, or the throttle's ReasonLastAttempt,
// ReasonShouldNotRetry or ReasonWaitTooLong with the wait that did not fit).
func (u Upstream) Decide(a Attempt) Decision {
	transient := a.Status == 0 || a.Status == http.StatusTooManyRequests || a.Status >= 500
	if transient && a.Elapsed >= cmp.Or(u.FastFailure, DefaultFastFailure) {
		return Decision{Reason: ReasonSlowFailure, Timeout: true}
	}
	throttles := Policy{
		MaxAttempts: cmp.Or(u.MaxAttempts, DefaultUpstreamAttempts),
		FastFailure: u.FastFailure,
		MaxWait:     Unbounded,
		Statuses:    []int{http.StatusTooManyRequests},
	}
	if a.Status == 0 {
		// A network error is retryable for a Policy; not here.
		return Decision{Reason: ReasonNotRetryable}
	}
	return throttles.Decide(a)
}
