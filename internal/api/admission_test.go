package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// fiveDocuments asks question with five small text documents: the
// admission estimate of its material is five times the text cap's working
// set (30 MiB), whatever their size, since that is what extraction may take.
func fiveDocuments(question string) string {
	docs := make([]doc, 5)
	for i := range docs {
		docs[i] = doc{Name: fmt.Sprintf("d%d.txt", i), ContentType: "text/plain", Data: b64([]byte("some text"))}
	}
	return chatWith(question, docs, nil)
}

// The 16-request row, as admission: with the limit at 128 MiB, four
// requests of five documents each (30 MiB estimated) are in flight; the
// fifth is answered at once 503 overloaded with Retry-After, before its body
// is used or anything is sent upstream; once the four end, room comes back.
func TestOverloadedIsFastAndRetryable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"MATERIAL_IN_FLIGHT_MB": "128"}, aoaitest.Options{})
		done := make(chan *httptest.ResponseRecorder, 4)
		for range 4 {
			go func() { done <- h.do(chatRequest(fiveDocuments("[[sim:hang]] hello"))) }()
		}
		synctest.Wait() // the four wait on the upstream, holding their material
		require.Equal(t, 4, h.sim.Stats().Requests)

		start := time.Now()
		w := h.do(chatRequest(fiveDocuments("hello")))
		assert.Zero(t, time.Since(start), "answered at once")
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		e := decodeError(t, w).Error
		assert.Equal(t, "overloaded", e.Code)
		// It carries retry-after-ms, so its message says when (the clients
		// then add nothing of their own; docs/api.md).
		assert.Equal(t, "The service is busy with other requests. Try again in 1 s.", e.Message)
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		assert.Equal(t, "1000", w.Header().Get("retry-after-ms"))
		assert.Empty(t, w.Header().Get("x-should-retry"), "clients retry it")
		assertCORS(t, w.Header())
		assert.Equal(t, 4, h.sim.Stats().Requests, "nothing sent upstream for it")

		for range 4 {
			assert.Equal(t, http.StatusInternalServerError, (<-done).Code) // their budget ran out
		}
		w = h.do(chatRequest(fiveDocuments("hello")))
		assert.Equal(t, http.StatusOK, w.Code, "the material was given back: %s", w.Body)
	})
}

// The "127k-token upstream call made with 0.5 s left": when reading
// the material leaves less than MIN_UPSTREAM_TIME, the answer is 500
// deadline_exceeded, at once, and no upstream call is made.
func TestNoUpstreamCallWithoutTimeForAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := map[string]string{"REQUEST_BUDGET": "20s", "FAST_FAILURE_THRESHOLD": "2s", "EXTRACT_TIMEOUT": "30s", "MIN_UPSTREAM_TIME": "5s"}
		h := newHarness(t, env, aoaitest.Options{}, withExtractor(takesExtractor{16 * time.Second}))
		start := time.Now()
		w := h.do(chatRequest(chatWith("hello", []doc{{Name: "a.txt", ContentType: "text/plain", Data: b64([]byte("x"))}}, nil)))
		assert.Equal(t, 16*time.Second, time.Since(start), "answered when the material was in, not at the deadline")
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		e := decodeError(t, w)
		assert.Equal(t, "deadline_exceeded", e.Error.Code)
		assert.Contains(t, e.Error.Message, "was not asked")
		assert.Equal(t, 0, h.sim.Stats().Requests, "no tokens spent")

		// With the time, the same request is answered.
		h = newHarness(t, env, aoaitest.Options{}, withExtractor(takesExtractor{10 * time.Second}))
		w = h.do(chatRequest(chatWith("hello", []doc{{Name: "a.txt", ContentType: "text/plain", Data: b64([]byte("x"))}}, nil)))
		assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	})
}
