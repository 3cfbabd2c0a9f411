package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A stream stopped before it began (its first frame came too late for the
// SDK's timeout: firstFrameBy) sends nothing after, not even a frame that
// arrives at the same instant: the handler answers the deadline's 500 on
// a writer with nothing written. One that has begun is not stopped.
func TestAStreamStoppedBeforeItBeganSendsNothing(t *testing.T) {
	w := httptest.NewRecorder()
	es := openStream(w, func() {})
	assert.True(t, es.startNoMore())
	assert.False(t, es.chunk(`{"choices":[]}`), "the late frame does not go out")
	es.keepAlive()
	assert.False(t, es.end(), "not started")
	assert.False(t, w.Flushed)
	assert.Empty(t, w.Body.String())
	assert.Empty(t, w.Header().Get("Content-Type"))

	w = httptest.NewRecorder()
	es = openStream(w, func() {})
	assert.True(t, es.chunk(`{"choices":[]}`))
	assert.False(t, es.startNoMore(), "begun: it runs on")
	assert.True(t, es.chunk(`{"choices":[]}`))
	assert.True(t, es.end())
	assert.Equal(t, http.StatusOK, w.Code)
}
