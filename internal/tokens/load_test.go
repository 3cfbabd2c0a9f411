package tokens

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errBudget = errors.New("budget spent")

// countLoads counts the loads; with a gate, each waits until the gate is
// closed (a channel of the test's bubble, so waiting on it lets virtual
// time run).
func countLoads(t *testing.T, gate chan struct{}) (loads *int) {
	t.Helper()
	n := new(int)
	real := load
	load = func(encoding string) *bpe {
		*n++
		if gate != nil {
			<-gate
		}
		return real(encoding)
	}
	t.Cleanup(func() { load = real })
	return n
}

func TestNewLoadsNothing(t *testing.T) {
	loads := countLoads(t, nil)
	c, err := New("o200k_base")
	require.NoError(t, err)
	assert.Equal(t, "o200k_base", c.Encoding(), "the name is known without the vocabulary")
	assert.Zero(t, *loads, "New must not load the vocabulary: the port opens first")
}

// A request that needs the vocabulary while it is still loading waits for it
// within its own deadline and no longer; the next one finds it loaded.
func TestWaitEndsWithTheRequestsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		loads := countLoads(t, gate)
		c, err := New("cl100k_base")
		require.NoError(t, err)
		c.Load() // what the handler does once it listens

		start := time.Now()
		ctx, cancel := context.WithTimeoutCause(t.Context(), 3*time.Second, errBudget)
		defer cancel()
		err = c.Wait(ctx)
		require.ErrorIs(t, err, errBudget, "the request's own cause, so the answer names its deadline")
		assert.Equal(t, 3*time.Second, time.Since(start), "no longer than the request's deadline")

		close(gate)
		require.NoError(t, c.Wait(t.Context()))
		assert.Equal(t, 42, c.Prompt([]Message{{Role: "user", Content: "Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."}}))
		assert.Equal(t, 1, *loads, "loaded once, however many callers")
	})
}

// Text on a Counter nobody loaded loads it first (callers without a deadline).
func TestTextLoadsOnFirstUse(t *testing.T) {
	c, err := New("o200k_base")
	require.NoError(t, err)
	assert.Equal(t, 2, c.Text("hello world"))
}
