package aoai

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// This file holds the pool's state: which backend a call goes to, and
// which are skipped for now. It is per instance and in memory: a throttle
// or an outage is learnt from an answer in a few milliseconds, so each
// instance learns it at the cost of one fast failure, which is cheaper
// than a shared store's round trip on every call (docs/operations.md,
// "The pool's state is per instance"). A pool of one keeps no state, as
// LiteLLM's router does not cool a model group's only deployment
// (BerriAI/litellm#5673): skipping the only backend spares nothing, and
// each call waits its own throttle's wait as before the pool.

// The pool's fixed figures.
const (
	// outAfter is how many fast failures in a row take a backend out.
	outAfter = 3
	// outFor is how long a backend that is out is skipped before one call
	// probes it.
	outFor = 5 * time.Second
	// unnamedCooldown is how long a 429 that names no wait cools its
	// backend.
	unnamedCooldown = time.Second
	// probeWait is the wait a call counts on for a backend whose probe is
	// in flight.
	probeWait = time.Second
)

// pool is the backends and their state, guarded by mu.
type pool struct {
	backends    []*backend
	cooldownMax time.Duration
	logger      *slog.Logger

	mu    sync.Mutex
	state []health // by backend index
}

// health is one backend's state. The zero value is available.
type health struct {
	coolUntil time.Time // skipped until then: it was throttled
	outUntil  time.Time // skipped until then: it failed; then probed
	fails     int       // fast failures in a row
	out       bool      // taken out: the next call after outUntil probes it
	probing   bool      // a probe is in flight
}

// single reports whether the pool has one backend, which keeps no state.
func (p *pool) single() bool { return len(p.backends) == 1 }

func newPool(backends []*backend, cooldownMax time.Duration, logger *slog.Logger) *pool {
	for i, b := range backends {
		b.index = i
	}
	return &pool{backends: backends, cooldownMax: cooldownMax, logger: logger, state: make([]health, len(backends))}
}

// usable reports whether backend i can take a call at now: not cooling,
// and not out but for its probe, which one call makes.
func (p *pool) usable(i int, now time.Time) bool {
	h := &p.state[i]
	return !now.Before(h.coolUntil) && (!h.out || (!now.Before(h.outUntil) && !h.probing))
}

// pick chooses the backend of the next attempt among those not skipped
// (tried, for this call): the lowest priority number of the usable ones,
// at random by weight within it. It reports nil when none is usable; a
// backend picked while out is its probe.
func (p *pool) pick(now time.Time, skip []bool) *backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, total := 0, 0
	for i, b := range p.backends {
		if skip[i] || !p.usable(i, now) {
			continue
		}
		switch {
		case total == 0 || b.priority < best:
			best, total = b.priority, b.weight
		case b.priority == best:
			total += b.weight
		}
	}
	if total == 0 {
		return nil
	}
	n := rand.IntN(total)
	for i, b := range p.backends {
		if skip[i] || !p.usable(i, now) || b.priority != best {
			continue
		}
		if n -= b.weight; n < 0 {
			if p.state[i].out {
				p.state[i].probing = true
			}
			return b
		}
	}
	return nil
}

// elsewhere reports whether a backend not skipped can take a call now.
func (p *pool) elsewhere(now time.Time, skip []bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.backends {
		if !skip[i] && p.usable(i, now) {
			return true
		}
	}
	return false
}

// wait is what is left, at now, of the shortest wait until a backend can
// take a call.
func (p *pool) wait(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	shortest := time.Duration(-1)
	for i := range p.backends {
		h := &p.state[i]
		d := max(h.coolUntil.Sub(now), 0)
		if h.out {
			d = max(d, h.outUntil.Sub(now))
			if h.probing {
				d = max(d, probeWait)
			}
		}
		if shortest < 0 || d < shortest {
			shortest = d
		}
	}
	return max(shortest, 0)
}

// counts are how many backends can take a call now, and how many are
// skipped (cooling, or out), for GET /api/health.
func (p *pool) counts(now time.Time) (available, cooling int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.backends {
		if p.usable(i, now) || p.state[i].probing {
			available++
		} else {
			cooling++
		}
	}
	return available, cooling
}

// The outcomes of an attempt, as they change its backend's state.

// succeeded: the backend answered. A backend that was out is back.
func (p *pool) succeeded(b *backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &p.state[b.index]
	if h.out {
		p.logger.Info("backend back in the pool", "backend", b.name)
	}
	*h = health{coolUntil: h.coolUntil}
}

// throttled: the backend asked for wait (429, or 503 with a wait); it
// cools for that long, at most cooldownMax. A throttle is no failure: the
// backend is up, and busy.
func (p *pool) throttled(b *backend, now time.Time, wait time.Duration, named bool) {
	if p.single() {
		return
	}
	if !named {
		wait = unnamedCooldown
	}
	wait = min(wait, p.cooldownMax)
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &p.state[b.index]
	if until := now.Add(wait); until.After(h.coolUntil) {
		h.coolUntil = until
	}
	h.fails, h.probing = 0, false
}

// failed: the backend failed fast (a 5xx, a reset connection, a broken
// answer before its text, or a 401/403/404 of its own); at once when at
// once (a refused connection), else after outAfter in a row, it is out
// for outFor, then probed by one call. why is the log's reason.
func (p *pool) failed(b *backend, now time.Time, atOnce bool, why string) {
	if p.single() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &p.state[b.index]
	h.fails++
	if !atOnce && h.fails < outAfter && !h.probing {
		return
	}
	if !h.out {
		p.logger.Warn("backend out of the pool", "backend", b.name, "reason", why, "fastFailuresInARow", h.fails,
			"skippedForMs", outFor.Milliseconds())
	}
	h.out, h.probing, h.outUntil = true, false, now.Add(outFor)
}

// released: the attempt ended with nothing learnt of its backend (a slow
// failure, the caller gone): a probe it was is left to the next call.
func (p *pool) released(b *backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state[b.index].probing = false
}
