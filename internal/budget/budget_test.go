package budget_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/budget"
)

func TestBudgetEndsAtItsTotalWithItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel, b := budget.Start(context.Background(), 200*time.Second)
		defer cancel()
		require.Same(t, b, budget.From(ctx))
		<-ctx.Done()
		assert.Equal(t, 200*time.Second, time.Since(start))
		assert.ErrorIs(t, context.Cause(ctx), budget.ErrExhausted)
	})
}

func TestClientTimeoutShortensTheDeadline(t *testing.T) {
	tests := []struct {
		name          string
		client        time.Duration
		wantAfter     time.Duration
		wantCause     error
		wantClientSet bool
	}{
		{"shorter than the budget", 10 * time.Second, 8 * time.Second, budget.ErrClientTimeout, true},
		{"longer than the budget", 300 * time.Second, 200 * time.Second, budget.ErrExhausted, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				ctx, cancel, b := budget.Start(context.Background(), 200*time.Second)
				defer cancel()
				ctx, cancel2 := budget.ShortenForClient(ctx, tt.client, 2*time.Second)
				defer cancel2()
				<-ctx.Done()
				assert.Equal(t, tt.wantAfter, time.Since(start))
				assert.ErrorIs(t, context.Cause(ctx), tt.wantCause)
				assert.Equal(t, start.Add(tt.wantAfter), b.Deadline)
				assert.Equal(t, tt.client, b.ClientTimeout)
			})
		})
	}
}

// A caller's timeout that ends after the budget leaves the request's
// deadline and its cause (the budget's) as they were, and its cancel leaves
// the request's context alone.
func TestClientTimeoutThatDoesNotShortenKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel, b := budget.Start(context.Background(), 200*time.Second)
		defer cancel()
		got, cancel2 := budget.ShortenForClient(ctx, 300*time.Second, 2*time.Second)
		cancel2()
		assert.NoError(t, ctx.Err(), "its cancel ended the request's context")
		assert.Equal(t, 300*time.Second, b.ClientTimeout)
		deadline, _ := got.Deadline()
		assert.Equal(t, b.Started.Add(200*time.Second), deadline)
		<-got.Done()
		assert.Equal(t, 200*time.Second, time.Since(b.Started))
		assert.ErrorIs(t, context.Cause(got), budget.ErrExhausted)
	})
}

// BenchmarkShortenForClient reports what a caller's timeout costs a request
// when it does not shorten the budget (the SPFx client's, on every request).
func BenchmarkShortenForClient(b *testing.B) {
	ctx, cancel, _ := budget.Start(context.Background(), 200*time.Second)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		_, cancel := budget.ShortenForClient(ctx, 300*time.Second, 2*time.Second)
		cancel()
	}
}

func TestStepEndsBeforeItsParentAndNamesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		parent, cancel, _ := budget.Start(context.Background(), 10*time.Second)
		defer cancel()

		// Its own timeout is the shorter: it ends then.
		step, cancelStep := budget.Step(parent, "fetch", "https://example.com/", 3*time.Second)
		<-step.Done()
		cancelStep()
		assert.Equal(t, 3*time.Second, time.Since(start))
		st, ok := budget.StepCause(step)
		require.True(t, ok)
		assert.Equal(t, "https://example.com/", st.Name)
		assert.True(t, errors.Is(st, context.DeadlineExceeded))

		// The parent's deadline is the shorter: the step still ends first, and names itself.
		step, cancelStep = budget.Step(parent, "extract", "report.pdf", time.Minute)
		defer cancelStep()
		<-step.Done()
		assert.Equal(t, 10*time.Second-budget.StepMargin, time.Since(start))
		st, ok = budget.StepCause(step)
		require.True(t, ok)
		assert.Equal(t, "extract", st.Step)
		assert.NoError(t, parent.Err(), "the request itself still has time to answer")
	})
}

func TestRemaining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel, _ := budget.Start(context.Background(), 5*time.Second)
		defer cancel()
		<-time.After(2 * time.Second)
		assert.Equal(t, 3*time.Second, budget.Remaining(ctx))
		<-time.After(4 * time.Second)
		assert.Equal(t, time.Duration(0), budget.Remaining(ctx))
	})
}
