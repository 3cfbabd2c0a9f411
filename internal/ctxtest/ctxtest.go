// Package ctxtest holds context helpers for tests.
package ctxtest

import (
	"context"
	"sync/atomic"
)

// Expiring is a context whose Err is nil for its first n calls and then
// context.DeadlineExceeded: a deterministic stand-in for "the deadline
// passes while the work runs", which virtual time (testing/synctest) cannot
// express for CPU-bound work, where the clock does not move. Safe for
// concurrent use.
type Expiring struct {
	context.Context
	calls atomic.Int64
	n     int64
}

// ExpireAfter returns a background context that ends after n calls of Err.
func ExpireAfter(n int64) *Expiring {
	return &Expiring{Context: context.Background(), n: n}
}

func (c *Expiring) Err() error {
	if c.calls.Add(1) <= c.n {
		return nil
	}
	return context.DeadlineExceeded
}

// Calls is how many times Err has been called.
func (c *Expiring) Calls() int64 { return c.calls.Load() }
