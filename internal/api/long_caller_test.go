package api_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// A long answer's cursor works only for the caller who started it, and only
// until LONG_ANSWER_LIMIT after its start (easyauth, the platform naming the
// caller, through the whole stack): another user's continue and cancel are
// 404 not_found with no text, and cancel nothing; the owner's cursor past
// the limit is 404 with no text too, and its generation is cancelled.
func TestLongAnswerCursorIsItsCallersUntilItsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, map[string]string{
			"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "timebox", "WEBSITE_AUTH_ENABLED": "True", "AUTH_TENANTS": authTenant,
			"LONG_ANSWER_LIMIT": "300s",
		})
		const bobOID = "00000000-0000-4000-8000-00000000b0b0"
		alice := []string{"X-MS-CLIENT-PRINCIPAL", principalOf(issuertest.TestUserOID, authTenant)}
		bob := []string{"X-MS-CLIENT-PRINCIPAL", principalOf(bobOID, authTenant)}

		ans := h.send(context.Background(), "/api/chat", ask(long600), true, alice...)
		require.Equal(t, http.StatusOK, ans.resp.StatusCode)
		c := continueOf(t, ans.last())
		id := h.responseID()

		for _, path := range []string{"/api/chat/continue", "/api/chat/cancel"} {
			for _, stream := range []bool{true, false} {
				got := h.send(context.Background(), path, cursorBody(c), stream, bob...)
				assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, "%s stream=%v", path, stream)
				require.Len(t, got.events, 1, "one JSON error, no event: %s", path)
				assert.Contains(t, got.events[0].data, `"code":"`+apiwire.CodeNotFound+`"`)
				assert.NotContains(t, got.events[0].data, "Count", "nothing of the answer")
			}
		}
		info, _ := h.sim.Generation(id)
		assert.Equal(t, "in_progress", info.Status, "another caller's cancel cancels nothing")

		// Past the limit (the generation started about 200 s ago).
		time.Sleep(150 * time.Second)
		got := h.send(context.Background(), "/api/chat/continue", cursorBody(c), true, alice...)
		assert.Equal(t, http.StatusNotFound, got.resp.StatusCode)
		require.Len(t, got.events, 1)
		assert.Contains(t, got.events[0].data, `"code":"`+apiwire.CodeNotFound+`"`)
		info, _ = h.sim.Generation(id)
		assert.Equal(t, "cancelled", info.Status, "an expired generation is cancelled upstream")
	})
}
