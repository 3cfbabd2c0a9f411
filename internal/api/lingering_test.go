package api

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Shutdown's wait for lingering connections ends when the last one is
// closed, or at the shutdown's own limit if that comes first; with none
// lingering it does not wait at all.
func TestLingeringWaitEndsWithTheLastConnectionOrTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Lingering
		start := time.Now()
		l.Wait(t.Context())
		if d := time.Since(start); d != 0 {
			t.Errorf("nothing lingers, yet Wait took %v", d)
		}

		l.begin()
		l.begin()
		go func() {
			time.Sleep(100 * time.Millisecond)
			l.end()
			time.Sleep(300 * time.Millisecond)
			l.end()
		}()
		start = time.Now()
		l.Wait(t.Context())
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Errorf("Wait returned after %v, want when the last connection closed (400ms)", d)
		}

		l.begin()
		defer l.end()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start = time.Now()
		l.Wait(ctx)
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Errorf("Wait returned after %v, want the shutdown's limit (200ms)", d)
		}
	})
}
