package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/apiwire"
)

// A cancel sent to another instance while a hop streams the answer (the
// page's Stop, routed elsewhere) ends that hop with error cancelled, the
// text so far kept: probed, it ended with upstream_error, "The AI service
// stopped in the middle of the answer". Azure ends a cancelled
// response's stream with no event; the hop reads the response to tell.
// Not streamed, the continue is the 409 with the text so far.
func TestLongAnswerCancelledOnAnotherInstanceSaysSo(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := longHarness(t, nil)
				other := h.twin()
				c := continueOf(t, h.send(context.Background(), "/api/chat", ask(long600), true).last())
				time.AfterFunc(60*time.Second, func() {
					r := chatRequest(cursorBody(c))
					r.URL.Path = "/api/chat/cancel"
					// Not send: its synctest.Wait would race the continue's.
					assert.Equal(t, http.StatusNoContent, other.do(r).Code)
				})
				got := h.send(context.Background(), "/api/chat/continue", cursorBody(c), stream)
				var code, msg string
				if stream {
					require.NotEmpty(t, got.events)
					e := decodeStreamError(t, got.last())
					assert.True(t, e.Partial)
					assert.NotEmpty(t, got.text(t), "the text so far came first")
					code, msg = e.Error.Code, e.Error.Message
				} else {
					require.Equal(t, http.StatusConflict, got.resp.StatusCode)
					assert.Equal(t, "false", got.resp.Header.Get("x-should-retry"))
					var e apiwire.ErrorBody
					require.NoError(t, json.Unmarshal([]byte(got.events[0].data), &e))
					require.NotNil(t, e.Partial)
					assert.NotEmpty(t, e.Partial.Answer, "the text so far is kept")
					code, msg = e.Error.Code, e.Error.Message
				}
				assert.Equal(t, apiwire.CodeCancelled, code)
				assert.Equal(t, "The answer was cancelled (a cancel was sent for it), so it stopped here; what was written so far is kept.", msg)
			})
		})
	}
}

// A continue or a cancel whose body is over 4 KiB (a cursor is well under
// a hundred bytes) is 413 body_too_large naming the cursor, declared or
// sent chunked, and read no further than the limit: probed, it said "Send
// fewer or smaller documents", of a route that takes none. Nothing goes
// upstream.
func TestCursorBodyOverItsLimitNamesTheCursor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		big := cursorBody(strings.Repeat("c", 5000))
		for _, path := range []string{"/api/chat/continue", "/api/chat/cancel"} {
			for _, chunked := range []bool{false, true} {
				r := chatRequest(big)
				r.URL.Path = path
				if chunked {
					r.ContentLength = -1 // read to its end: the limit is met while reading
				}
				w := h.do(r)
				require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "%s chunked %v: %s", path, chunked, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, apiwire.CodeBodyTooLarge, e.Error.Code)
				assert.Equal(t, `A continue or a cancel takes only the cursor the answer gave, {"cursor": "..."}, within 4 KiB; this request is larger. Send the cursor as it came.`, e.Error.Message)
				assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
			}
		}
		assert.Empty(t, h.sim.Requests(), "nothing upstream")
	})
}
