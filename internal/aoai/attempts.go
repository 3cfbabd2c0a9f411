package aoai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/retry"
)

// This file holds the one attempt loop of every call to Azure OpenAI (a
// chat completion, a long answer's create, resume, retrieve and cancel):
// which backend each attempt goes to, and whether there is another, by the
// rule of package retry (retry.Upstream). It is not an azcore policy: an
// attempt's outcome is known only once its answer's stream has been read
// up to its first text (a stream that breaks before it fails over like a
// 5xx), which is after the pipeline has returned, and each backend has a
// pipeline of its own, with its own credential (docs/upstream.md).

// Attempt is one upstream attempt of a call, as the log line lists it.
type Attempt struct {
	// Backend is the name of the backend it went to.
	Backend string
	// Status is its HTTP status; 0 for a network error.
	Status int
	// Elapsed is how long it took.
	Elapsed time.Duration
}

// try makes one attempt at b and returns its answer's status and header
// (0 and nil when none came) and nil, or its failure: an *Error, or
// another error, which ends the call as it is.
type try func(ctx context.Context, b *backend) (status int, h http.Header, err error)

// errAllCooling is the cause of a call that no backend could take in its
// time: every one was throttled, or out, for longer than was left.
var errAllCooling = errors.New("every backend is cooling")

// attempts makes a call's attempts: at pinned, when it is not nil (a long
// answer's later calls go to the backend that holds the response), else at
// the backends the pool picks. It returns the backend that answered, and
// every attempt; a failure is an *Error with the trail and the last
// attempt's backend.
func (c *Client) attempts(ctx context.Context, pinned *backend, do try) (*backend, []Attempt, error) {
	var trail []Attempt
	skip := make([]bool, len(c.pool.backends)) // tried, in this call
	for {
		b := pinned
		if b == nil {
			if b = c.pool.pick(time.Now(), skip); b == nil {
				// No backend can take the call now: what is left of the
				// shortest cooldown is waited if it fits, else the
				// caller is told when to come back, with no call made
				// to a backend known to be cooling.
				wait := c.pool.wait(time.Now())
				if len(trail) >= c.rule.MaxAttempts || !c.rule.Fits(wait, budget.Remaining(ctx)) {
					return nil, trail, &Error{Kind: KindThrottled, RetryAfter: max(wait, time.Second), Attempts: len(trail),
						Trail: trail, Err: errAllCooling}
				}
				if err := sleep(ctx, wait); err != nil {
					return nil, trail, &Error{Kind: KindCanceled, Attempts: len(trail), Trail: trail, Err: err}
				}
				clear(skip)
				continue
			}
		}
		start := time.Now()
		status, h, err := do(ctx, b)
		elapsed := time.Since(start)
		var e *Error
		if err != nil && errors.As(err, &e) {
			status = e.Status
		}
		trail = append(trail, Attempt{Backend: b.name, Status: status, Elapsed: elapsed})
		if err == nil {
			c.pool.succeeded(b)
			return b, trail, nil
		}
		if e == nil {
			c.pool.released(b)
			return b, trail, err
		}
		e.Backend, e.Trail, e.Attempts, e.Elapsed, e.UpstreamRequestID = b.name, trail, len(trail), elapsed, upstreamRequestID(h)
		if e.Status == http.StatusNotFound {
			e.Path = b.path
		}
		if e.Kind == KindCanceled || e.Kind == KindCredential {
			c.pool.released(b)
			return b, trail, e
		}
		slow := c.rule.Slow(e.ruleStatus(), elapsed)
		c.learn(b, e, h, slow)
		skip[b.index] = true
		if e.delivered {
			// Text, or a chunk, has gone to the caller: nothing is tried
			// again anywhere, or it would be written twice.
			return b, trail, e
		}
		now := time.Now()
		f := retry.Failure{Number: len(trail), Elapsed: elapsed, Status: e.ruleStatus(), Header: h, Remaining: budget.Remaining(ctx)}
		if pinned == nil && !c.pool.single() {
			f.Elsewhere, f.Wait = c.pool.elsewhere(now, skip), c.pool.wait(now)
		} else {
			// Its backend is the only one the call may go to: the wait
			// is the one it named.
			f.Wait = ownWait(h)
		}
		d := c.rule.Decide(f)
		switch {
		case d.Timeout:
			// The time is spent and so is the money (Azure bills
			// processing): the caller must not try the same again, and
			// neither does any backend.
			e.Kind = KindSlowFailure
			return b, trail, e
		case d.Failover:
			continue
		case d.Retry:
			if err := sleep(ctx, d.Wait); err != nil {
				e.Kind, e.Err = KindCanceled, fmt.Errorf("waiting to retry: %w", err)
				return b, trail, e
			}
			clear(skip)
			continue
		}
		if e.Kind == KindThrottled {
			// The caller is told when to come back: the wait that did not
			// fit, what is left of the pool's shortest cooldown, and at
			// least a second.
			e.RetryAfter = max(d.Wait, f.Wait, time.Second)
		}
		return b, trail, e
	}
}

// learn changes b's state by what its failed attempt says of it.
func (c *Client) learn(b *backend, e *Error, h http.Header, slow bool) {
	now := time.Now()
	wait, named := retry.ServerWait(h, time.Time{})
	switch {
	case slow:
		// A deadline says nothing of the backend's health.
		c.pool.released(b)
	case e.Kind == KindThrottled, e.Kind == KindUnavailable && named:
		c.pool.throttled(b, now, wait, named)
	case e.Kind == KindTransient, e.Kind == KindUnavailable, e.Kind == KindBroken:
		refused := errors.Is(e, syscall.ECONNREFUSED)
		why := "fast failure"
		if refused {
			why = "connection refused"
		}
		c.pool.failed(b, now, refused, why)
	case e.Kind == KindMisconfigured && !errors.Is(e, ErrUnknownResponse):
		// A 401, 403 or 404 of the deployment: this backend is broken (its
		// key, its role assignment, its deployment), not the request.
		c.pool.failed(b, now, false, fmt.Sprintf("answered %d", e.Status))
	case e.Kind == KindTooLarge:
		// The request, not the backend: too large for this deployment's
		// limits (a 429 no wait clears, or the context window).
		c.pool.released(b)
	default:
		// A 400: the backend answered, sanely.
		c.pool.succeeded(b)
	}
}

// ownWait is the wait a throttled attempt named (retry-after-ms, else
// Retry-After), or unnamedCooldown when it named none.
func ownWait(h http.Header) time.Duration {
	if wait, named := retry.ServerWait(h, time.Time{}); named {
		return wait
	}
	return unnamedCooldown
}

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
