package api_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// An answer cut short after text came back (a deadline, a reset) was billed
// for its prompt, but Azure's usage frame, which carries the count, never
// arrived. For a small request, whose prompt fitting skipped counting, the
// log line must still carry promptTokens, as the simulator (which counts
// the same way) processed them: probed on the binary, these lines said
// promptTokens 0, and the per-caller sums in operations.md missed them.
func TestCutShortAnswerLogsItsPromptTokens(t *testing.T) {
	for _, directive := range []string{"[[sim:reset tokens=9]]", "[[sim:hang tokens=9]]"} {
		question := ask(directive + " Count to 20, with a comma between each number.")
		for _, streamed := range []bool{false, true} {
			t.Run(directive+map[bool]string{false: " json", true: " stream"}[streamed], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t, nil, aoaitest.Options{PerToken: time.Second})
					if streamed {
						h.stream(context.Background(), question)
					} else {
						h.do(chatRequest(question))
					}
					synctest.Wait()
					lines := h.logLines()
					require.Len(t, lines, 1)
					assert.EqualValues(t, 9, lines[0]["completionTokens"])
					reqs := h.sim.Requests()
					require.Len(t, reqs, 1)
					require.NotZero(t, reqs[0].PromptTokens)
					assert.EqualValues(t, reqs[0].PromptTokens, lines[0]["promptTokens"], "the prompt the simulator processed")
				})
			})
		}
	}
}

// A fast 503 bills nothing, however large the prompt that was counted to
// fit it: probed on the binary, the line of a 200 KB document's 503 said
// promptTokens 40112, and a per-caller sum of promptTokens billed the
// caller for it. The count stays on the line, named for what it is.
func TestRefusedAnswerLogsNoBilledPromptTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		text := strings.Repeat("Expenses need a receipt from the vendor. ", 5000) // ~200 KB
		body := chatWith("[[sim:status code=503]] What does the policy say?", []doc{
			{Name: "policy.txt", ContentType: "text/plain", Data: b64([]byte(text))},
		}, nil)
		w := h.do(chatRequest(body))
		assert.Equal(t, 503, w.Code)
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 503, lines[0]["upstreamStatus"])
		assert.NotContains(t, lines[0], "promptTokens", "Azure refused the call: nothing was billed")
		assert.Greater(t, lines[0]["promptTokensCounted"], 10000.0, "the counted prompt is kept, under its own name")
	})
}

// A question refused before any call, too large for the deployment's
// tokens-per-minute limit or its context window, bills nothing, but it was
// counted: the line says how large in promptTokensCounted (operations.md,
// "Tokens per caller"). Probed on the binary, a 413 line had no count.
func TestTooLargeQuestionLogsItsCountedPrompt(t *testing.T) {
	question := strings.Repeat("word ", 3000)
	for name, settings := range map[string]map[string]string{
		"tokens per minute": {"DEPLOYMENT_TPM": "1500"},
		"context window":    {"CONTEXT_WINDOW": "2048", "MAX_TOKENS": "1024"},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, settings, aoaitest.Options{})
				w := h.do(chatRequest(ask(question)))
				require.Equal(t, 413, w.Code)
				assert.Equal(t, "prompt_too_large", decodeError(t, w).Error.Code)
				assert.Zero(t, h.sim.Stats().Requests, "refused before any call")
				lines := h.logLines()
				require.Len(t, lines, 1)
				assert.NotContains(t, lines[0], "promptTokens", "nothing was billed")
				assert.Greater(t, lines[0]["promptTokensCounted"], 3000.0, "the system prompt and the question, counted")
			})
		})
	}
}
