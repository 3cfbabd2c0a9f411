package admission

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGateAdmitsUpToTheLimitAndReleases(t *testing.T) {
	g := New(100, nil)
	a, b := g.Ticket(), g.Ticket()
	require.NoError(t, a.Take(60))
	require.NoError(t, a.Take(20))
	assert.ErrorIs(t, b.Take(30), ErrOverloaded, "80 + 30 is over 100")
	assert.Equal(t, int64(80), g.Held(), "a refused cost takes nothing")
	require.NoError(t, b.Take(20))
	a.Release()
	a.Release()
	assert.Equal(t, int64(20), g.Held())
	require.NoError(t, b.Take(80))
	b.Release()
	assert.Equal(t, int64(0), g.Held())
}

func TestNilGateAdmitsEverything(t *testing.T) {
	var g *Gate
	tk := g.Ticket()
	require.NoError(t, tk.Take(1<<40))
	tk.Release()
}

func TestGateUnderConcurrency(t *testing.T) {
	g := New(1000, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 100 {
		wg.Go(func() {
			tk := g.Ticket()
			if tk.Take(100) == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 10, admitted)
	assert.Equal(t, int64(1000), g.Held())
}

func TestCosts(t *testing.T) {
	assert.Equal(t, int64(3*1000), BodyCost(1000, 16<<20))
	assert.Equal(t, int64(3*16<<20), BodyCost(-1, 16<<20), "unknown length counts as the most")
	assert.Equal(t, int64(2*3*10+1*(5+3*10)), MaterialCost(2, 1, 10, 5))
}

// Memory goes back once the last request ends after large material, and
// not after small material or while a request is still in flight.
func TestIdleGateGivesMemoryBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		g := New(1<<30, func() { calls++ })
		a, b := g.Ticket(), g.Ticket()
		require.NoError(t, a.Take(48<<20))
		require.NoError(t, b.Take(48<<20))
		a.Release()
		synctest.Wait()
		assert.Equal(t, 0, calls, "b is still in flight")
		b.Release()
		synctest.Wait()
		assert.Equal(t, 1, calls)

		c := g.Ticket()
		require.NoError(t, c.Take(1<<20))
		c.Release()
		synctest.Wait()
		assert.Equal(t, 1, calls, "1 MiB is not worth a collection")
	})
}
