// Package retry holds the one rule timebox exists for: retry a failed call
// only when it failed fast. A gateway status (502/503/504), a 429 or a
// network error that came back quickly is a hiccup worth another attempt; the
// same status after a long wait is a timeout, and retrying it multiplies both
// the wait and the bill. The server uses this package for its own upstream
// retries, the CLI for its calls to a Function App, and the TypeScript client
// (client/) implements the same rule against the same test vectors
// (testdata/vectors.json in this package's folder).
package retry

import (
	"cmp"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Unbounded is the Remaining of an attempt whose caller set no deadline.
const Unbounded = time.Duration(math.MaxInt64)

// Defaults of a zero Policy field. The TypeScript client's DEFAULTS
// (client/src/rule.ts) are checked against the same figures in
// testdata/vectors.json.
const (
	DefaultMaxAttempts = 3
	DefaultFastFailure = 30 * time.Second
	DefaultMaxWait     = 30 * time.Second
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 8 * time.Second
)

// DefaultStatuses returns the HTTP statuses the rule retries by default: a
// throttle (429) and the gateway statuses (502, 503, 504). Network errors
// (status 0) are retried too.
func DefaultStatuses() []int {
	return []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
}

// Retryable reports whether the rule retries status by default (see
// DefaultStatuses); 0, a network error, is retryable. The server sets
// x-should-retry: false on every answer it is not.
func Retryable(status int) bool {
	return status == 0 || slices.Contains(DefaultStatuses(), status)
}

// Reason says why Decide decided what it did. The strings are stable: they
// appear in logs, in the CLI's output and in the shared test vectors.
type Reason string

// The reasons Decide gives.
const (
	ReasonRetry          Reason = "retry"            // fast, retryable, and the wait fits
	ReasonNotRetryable   Reason = "not_retryable"    // a status no retry can fix (success included)
	ReasonShouldNotRetry Reason = "should_not_retry" // the server sent x-should-retry: false
	ReasonSlowFailure    Reason = "slow_failure"     // the attempt took at least FastFailure: a timeout
	ReasonLastAttempt    Reason = "last_attempt"     // no attempts left
	ReasonWaitTooLong    Reason = "wait_too_long"    // the wait exceeds MaxWait or the time left
)

// Policy is the rule's parameters. The zero value is the documented default:
// 3 attempts, 30 s fast-failure threshold, 30 s wait cap, backoff from 500 ms
// doubling to 8 s with jitter, retrying 429, 502, 503, 504 and network errors.
type Policy struct {
	// MaxAttempts counts the first attempt too; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// FastFailure is the threshold: a failed attempt that took at least this
	// long is a timeout and is never retried. 0 means DefaultFastFailure.
	FastFailure time.Duration
	// MaxWait caps a server-requested wait (Retry-After); 0 means DefaultMaxWait.
	MaxWait time.Duration
	// BaseDelay and MaxDelay shape the backoff used when the server names no
	// wait: BaseDelay doubled per attempt, capped at MaxDelay, the upper half
	// jittered. 0 means the defaults.
	BaseDelay, MaxDelay time.Duration
	// Statuses lists the HTTP statuses worth retrying; nil means 429, 502,
	// 503 and 504. Network errors (status 0) are always retryable.
	Statuses []int
	// Rand returns a number in [0, 1) for jitter; nil means math/rand/v2.
	Rand func() float64
}

// Attempt describes one failed attempt.
type Attempt struct {
	// Number is the attempt's 1-based position.
	Number int
	// Elapsed is how long the attempt took, from sending to the answer (or
	// the error).
	Elapsed time.Duration
	// Status is the HTTP status, or 0 for a network error.
	Status int
	// Header is the response's header; nil for a network error.
	Header http.Header
	// Remaining is the time left before the caller's overall deadline;
	// Unbounded when there is none.
	Remaining time.Duration
	// Now is the time the answer arrived, used only to read a Retry-After
	// given as an HTTP date; the zero value means time.Now().
	Now time.Time
}

// Decision is what to do after a failed attempt.
type Decision struct {
	// Retry is true when another attempt should be made after Wait.
	Retry bool
	// Wait is the pause before the next attempt when Retry is true. When
	// Reason is ReasonWaitTooLong it is the wait that did not fit, so the
	// caller can say "try again in N s".
	Wait time.Duration
	// Reason says why.
	Reason Reason
	// Timeout is true when the attempt was judged a timeout (slow failure).
	Timeout bool
	// Failover is true when the server sends the call to another backend
	// of its pool at once (Upstream.Decide; ReasonFailover).
	Failover bool
}

// Decide applies the rule to a failed attempt. Checks run in this order:
// a status not worth retrying, x-should-retry: false, a slow attempt, the
// last attempt, then the wait (server-requested or backoff) against MaxWait
// and the time left.
func (p Policy) Decide(a Attempt) Decision {
	if !p.retryable(a.Status) {
		return Decision{Reason: ReasonNotRetryable}
	}
	if strings.EqualFold(strings.TrimSpace(a.Header.Get("X-Should-Retry")), "false") {
		return Decision{Reason: ReasonShouldNotRetry}
	}
	if a.Elapsed >= cmp.Or(p.FastFailure, DefaultFastFailure) {
		return Decision{Reason: ReasonSlowFailure, Timeout: true}
	}
	if a.Number >= cmp.Or(p.MaxAttempts, DefaultMaxAttempts) {
		return Decision{Reason: ReasonLastAttempt}
	}
	wait, asked := ServerWait(a.Header, a.Now)
	if !asked {
		wait = p.backoff(a.Number)
	}
	if (asked && wait > cmp.Or(p.MaxWait, DefaultMaxWait)) || wait >= a.Remaining {
		return Decision{Wait: wait, Reason: ReasonWaitTooLong}
	}
	return Decision{Retry: true, Wait: wait, Reason: ReasonRetry}
}

func (p Policy) retryable(status int) bool {
	if p.Statuses == nil {
		return Retryable(status)
	}
	return status == 0 || slices.Contains(p.Statuses, status)
}

// backoff returns the wait before attempt n+1 when the server named none:
// BaseDelay·2^(n-1) capped at MaxDelay, the upper half jittered ("equal
// jitter"), so waits stay within [d/2, d).
func (p Policy) backoff(n int) time.Duration {
	base, maxDelay := cmp.Or(p.BaseDelay, DefaultBaseDelay), cmp.Or(p.MaxDelay, DefaultMaxDelay)
	d := maxDelay
	if n-1 < 30 && base<<(n-1) < maxDelay {
		d = base << (n - 1)
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	return d/2 + time.Duration(r()*float64(d/2))
}

// ServerWait reads the wait a response asks for: retry-after-ms (Azure
// OpenAI, milliseconds, may be fractional) first, then Retry-After in
// seconds or as an HTTP date (RFC 9110 section 10.2.3) relative to now (zero:
// time.Now()). Numbers are plain decimals (digits, one optional point, an
// optional sign and exponent); anything else, hexadecimal, "Inf" or "NaN"
// included, counts as absent. It reports false when neither header is present
// and valid. Negative waits count as zero.
func ServerWait(h http.Header, now time.Time) (time.Duration, bool) {
	if ms, ok := parseDecimal(h.Get("Retry-After-Ms")); ok {
		return clampDuration(ms * float64(time.Millisecond)), true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, ok := parseDecimal(v); ok {
		return clampDuration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if now.IsZero() {
			now = time.Now()
		}
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// parseDecimal parses a plain decimal number. It is stricter than
// strconv.ParseFloat (no hexadecimal, no underscores, no Inf or NaN) so that
// the TypeScript client, which has no ParseFloat, reads headers the same way.
func parseDecimal(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	digits := 0
	for i, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == 'e' || c == 'E':
		case (c == '+' || c == '-') && (i == 0 || v[i-1] == 'e' || v[i-1] == 'E'):
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func clampDuration(f float64) time.Duration {
	switch {
	case f <= 0:
		return 0
	case f >= float64(math.MaxInt64):
		return Unbounded
	}
	return time.Duration(f)
}
