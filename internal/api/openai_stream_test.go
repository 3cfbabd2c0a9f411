package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// openAIStream asks the OpenAI surface for a streamed answer to question.
func openAIStream(h *harness, question string) *httptest.ResponseRecorder {
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-4o-mini", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": question}},
	})
	r := httptest.NewRequest(http.MethodPost, "/openai/v1/chat/completions", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	return h.do(r)
}

// dataFrames are the data of a data-only event stream, one per event.
func dataFrames(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// The OpenAI stream holds back Azure's chunks that carry no answer (the
// prompt's filter results, the role's chunk) until one does: an attempt
// that fails before its first token is then the ordinary JSON error, with
// its status and x-should-retry, which the SDK retries, not a 200 stream
// that ends in an error frame.
func TestOpenAIStreamFailingBeforeItsFirstTokenIsAJSONError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := openAIStream(h, "[[sim:reset tokens=0]] Count to 5.")
		assert.Equal(t, http.StatusBadGateway, w.Code, w.Body.String())
		assert.Equal(t, "true", w.Header().Get("x-should-retry"))
		assert.Contains(t, w.Header().Get("Content-Type"), "application/json")
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
		assert.Equal(t, "upstream_error", e.Error.Code)
		assert.Len(t, h.sim.Requests(), 1)
	})
}

// The chunks held back go out, in Azure's order, with the first that
// carries text: the prompt's filter results first, then the role.
func TestOpenAIStreamSendsTheHeldChunksWithTheFirstToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := openAIStream(h, "Count to 5, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ...")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		frames := dataFrames(w.Body.String())
		require.GreaterOrEqual(t, len(frames), 4, w.Body.String())
		assert.Equal(t, "[DONE]", frames[len(frames)-1])
		type chunk struct {
			Choices []struct {
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			PromptFilterResults json.RawMessage `json:"prompt_filter_results"`
		}
		var chunks []chunk
		for _, f := range frames[:len(frames)-1] {
			var c chunk
			require.NoError(t, json.Unmarshal([]byte(f), &c), f)
			chunks = append(chunks, c)
		}
		assert.Empty(t, chunks[0].Choices, "the prompt's filter results")
		assert.NotEmpty(t, chunks[0].PromptFilterResults)
		require.NotEmpty(t, chunks[1].Choices)
		assert.Equal(t, "assistant", chunks[1].Choices[0].Delta.Role)
		var text string
		for _, c := range chunks {
			for _, ch := range c.Choices {
				text += ch.Delta.Content
			}
		}
		assert.Equal(t, "1, 2, 3, 4, 5.", text)
	})
}
