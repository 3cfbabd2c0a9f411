package api_test

import (
	"context"
	"encoding/json"
	"net/http"
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
