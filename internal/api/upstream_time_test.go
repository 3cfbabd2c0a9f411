package api_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// The time floor before the upstream call: a request needs
// MIN_UPSTREAM_TIME (3 s here) left once its material is read, or, when it
// was given less than four times that in all (a caller in a hurry), a
// quarter of its time. A page that takes its time to load spends the
// request's time before the check.
func TestAHurriedRequestNeedsAQuarterOfItsTimeLeft(t *testing.T) {
	tests := []struct {
		name     string
		timeout  string        // x-client-timeout-ms; the margin is 500 ms
		pageTook time.Duration // the page's load, before the check
		asked    bool          // whether Azure OpenAI was asked
	}{
		// 2 s in all: 2 s left is under the 3 s floor, over its quarter.
		{name: "nothing to read, 2 s in all", timeout: "2500", asked: true},
		{name: "a page read in 1.2 s of 2", timeout: "2500", pageTook: 1200 * time.Millisecond, asked: true},
		{name: "a page read in 1.6 s of 2", timeout: "2500", pageTook: 1600 * time.Millisecond, asked: false},
		// 14 s in all: the floor itself, 3 s, the lesser of it and a quarter (3.5 s).
		{name: "a page read in 10.8 s of 14", timeout: "14500", pageTook: 10800 * time.Millisecond, asked: true},
		{name: "a page read in 11.5 s of 14", timeout: "14500", pageTook: 11500 * time.Millisecond, asked: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					time.Sleep(tt.pageTook) // only in a synctest bubble: virtual time
					w.Header().Set("Content-Type", "text/plain; charset=utf-8")
					_, _ = io.WriteString(w, "Trains are preferred for journeys under five hours.")
				})
				h := newHarness(t, map[string]string{"MIN_UPSTREAM_TIME": "3s", "CLIENT_TIMEOUT_MARGIN": "500ms"}, aoaitest.Options{}, withWeb(web))
				var urls []string
				if tt.pageTook > 0 {
					urls = []string{"http://intranet.contoso.example/travel"}
				}
				w := h.do(chatRequest(chatWith("What does the policy say?", nil, urls), "x-client-timeout-ms", tt.timeout))
				if tt.asked {
					decodeOK(t, w)
					assert.Len(t, h.sim.Requests(), 1)
					return
				}
				assert.Equal(t, http.StatusInternalServerError, w.Code, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, "deadline_exceeded", e.Error.Code)
				assert.Contains(t, e.Error.Message, "the AI service was not asked")
				assert.Empty(t, h.sim.Requests(), "no tokens are spent on a call that would be cut")
			})
		})
	}
}
