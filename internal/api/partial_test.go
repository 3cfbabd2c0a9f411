package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
)

// longGeneration is a simulator whose answer to longQuestion takes 301 s:
// 1 s to the first token, then 1000 tokens (maxTokens) at 300 ms each.
var longGeneration = aoaitest.Options{TimeToFirstToken: time.Second, PerToken: 300 * time.Millisecond}

var longQuestion = func() string {
	b, _ := json.Marshal(map[string]any{
		"messages":  []map[string]string{{"role": "user", "content": "Count to 1000, with a comma between each number."}},
		"maxTokens": 1000,
	})
	return string(b)
}()

// tokensBy is how many tokens of longGeneration have arrived by d.
func tokensBy(d time.Duration) int {
	return int((d - longGeneration.TimeToFirstToken) / longGeneration.PerToken)
}

// A caller that does not stream still gets what was generated when the
// budget runs out: the 500 deadline_exceeded carries the text so far.
func TestDeadlineGivesTheTextSoFarToACallerThatDoesNotStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, longGeneration)
		start := time.Now()
		w := h.do(chatRequest(longQuestion))
		assert.Equal(t, 200*time.Second, time.Since(start), "the budget still cuts at exactly 200 s")
		require.Equal(t, http.StatusInternalServerError, w.Code)
		assert.Equal(t, "false", w.Header().Get("x-should-retry"))
		assertCORS(t, w.Header())
		var body apiwire.ErrorBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
		assert.Equal(t, "deadline_exceeded", body.Error.Code)
		require.NotNil(t, body.Partial, "the text generated until the deadline")
		assert.True(t, strings.HasPrefix(body.Partial.Answer, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,"), body.Partial.Answer[:40])
		assert.Equal(t, tokensBy(200*time.Second), body.Partial.CompletionTokens)

		synctest.Wait()
		st := h.sim.Stats()
		assert.Equal(t, 1, st.Requests)
		assert.Equal(t, 1, st.Cancelled, "the upstream call is cut at the deadline")
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, tokensBy(200*time.Second), lines[0]["completionTokens"], "delivered, in the 500")
		assert.Nil(t, lines[0]["abandonedTokens"])
		assert.Nil(t, lines[0]["stream"])
		assert.EqualValues(t, 1300, lines[0]["firstTokenMs"], "the time to first token, streamed from upstream though not to the caller")
	})
}

// An upstream that fails before its first token gives no partial.
func TestNoPartialBeforeTheFirstToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := h.do(chatRequest(ask("[[sim:hang]] hello")))
		require.Equal(t, http.StatusInternalServerError, w.Code)
		var body map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		assert.NotContains(t, body, "partial")
	})
}
