package aoaitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/testlog"
	"github.com/timebox-dev/timebox/internal/tokens"
)

const deploymentsURL = "http://aoai/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"

// bubble serves a simulator on an in-memory listener; call it inside a
// synctest bubble. The server and client close when the test ends.
func bubble(t *testing.T, o aoaitest.Options) (*aoaitest.Server, *http.Client) {
	t.Helper()
	if o.Deployments == nil {
		o.Deployments = []string{"gpt-4o"}
	}
	sim := aoaitest.New(o)
	_, c := memnet.Serve(t, sim)
	return sim, c
}

// advance lets d pass on the bubble's fake clock.
func advance(d time.Duration) { <-time.After(d) }

// call posts body to url and reads the whole answer; err is a transport or
// read error.
func call(ctx context.Context, c *http.Client, url, body string, header http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

type result struct {
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct{ Content string }
	}
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
}

func parse(t *testing.T, b []byte) result {
	t.Helper()
	var r result
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	require.Len(t, r.Choices, 1)
	return r
}

func TestRoutes(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	body := chatBody("hello", 0, false)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"deployments path", "POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", body, 200, ""},
		{"v1 path", "POST", "/openai/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"v1 unknown deployment", "POST", "/openai/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, "DeploymentNotFound"},
		{"v1 without model", "POST", "/openai/v1/chat/completions", body, 400, ""},
		{"unknown deployment", "POST", "/openai/deployments/nope/chat/completions?api-version=2024-10-21", body, 404, "DeploymentNotFound"},
		{"no api-version", "POST", "/openai/deployments/gpt-4o/chat/completions", body, 404, "404"},
		{"wrong method", "GET", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", "", 404, "404"},
		{"other path", "POST", "/openai/deployments/gpt-4o/embeddings?api-version=2024-10-21", body, 404, "404"},
		{"root", "GET", "/", "", 404, "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode, "%s", b)
			if tt.code != "" {
				assert.Equal(t, tt.code, errorCode(t, b))
			}
			if tt.code == "404" {
				assert.JSONEq(t, `{"error":{"code":"404","message":"Resource not found"}}`, string(b))
			}
		})
	}
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name   string
		opts   aoaitest.Options
		header map[string]string
		status int
		auth   string
	}{
		{"key accepted", aoaitest.Options{APIKey: "k"}, map[string]string{"api-key": "k"}, 200, "api-key"},
		{"header name case-insensitive", aoaitest.Options{APIKey: "k"}, map[string]string{"API-KEY": "k"}, 200, "api-key"},
		{"wrong key", aoaitest.Options{APIKey: "k"}, map[string]string{"api-key": "x"}, 401, ""},
		{"no key", aoaitest.Options{APIKey: "k"}, nil, 401, ""},
		{"bearer when only keys", aoaitest.Options{APIKey: "k"}, map[string]string{"Authorization": "Bearer t"}, 401, ""},
		{"bearer accepted", aoaitest.Options{AcceptBearer: true}, map[string]string{"Authorization": "Bearer t"}, 200, "bearer"},
		{"bearer scheme case-insensitive", aoaitest.Options{AcceptBearer: true}, map[string]string{"Authorization": "bearer t"}, 200, "bearer"},
		{"empty bearer", aoaitest.Options{AcceptBearer: true}, map[string]string{"Authorization": "Bearer "}, 401, ""},
		{"basic is not bearer", aoaitest.Options{AcceptBearer: true}, map[string]string{"Authorization": "Basic dTpw"}, 401, ""},
		{"key when only bearer", aoaitest.Options{AcceptBearer: true}, map[string]string{"api-key": "k"}, 401, ""},
		{"either: key", aoaitest.Options{APIKey: "k", AcceptBearer: true}, map[string]string{"api-key": "k"}, 200, "api-key"},
		{"either: bearer", aoaitest.Options{APIKey: "k", AcceptBearer: true}, map[string]string{"Authorization": "Bearer t"}, 200, "bearer"},
		{"open: nothing", aoaitest.Options{}, nil, 200, ""},
		{"open: key recorded", aoaitest.Options{}, map[string]string{"api-key": "anything"}, 200, "api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Deployments = []string{"gpt-4o"}
			sim := aoaitest.New(tt.opts)
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			// A 401 is plain JSON even for a stream request.
			resp, b := post(t, sim, "gpt-4o", chatBody("hi", 0, true), h)
			assert.Equal(t, tt.status, resp.StatusCode, "%s", b)
			if tt.status == 401 {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.Equal(t, "401", errorCode(t, b))
			}
			require.Len(t, sim.Requests(), 1)
			assert.Equal(t, tt.auth, sim.Requests()[0].Auth)
		})
	}
}

func TestBadRequests(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	tests := []struct {
		name, body, param, code, message string
	}{
		{"not JSON", `{"messages": [`, "", "", "We could not parse the JSON body"},
		{"empty body", ``, "", "", "We could not parse the JSON body"},
		{"wrong content type", `{"messages":[{"role":"user","content":42}]}`, "", "", "Invalid request body"},
		{"no messages", `{"messages":[]}`, "messages", "", "[] is too short - 'messages'"},
		{"max_tokens 0", `{"max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", "integer_below_min_value", "Expected a value >= 1, but got 0"},
		{"max_completion_tokens -1", `{"max_completion_tokens":-1,"messages":[{"role":"user","content":"hi"}]}`, "max_completion_tokens", "integer_below_min_value", "got -1"},
		{"bad directive", chatBody("[[sim:status code=abc]]", 0, false), "messages", "", "Simulator: directive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, sim, "gpt-4o", tt.body, nil)
			assert.Equal(t, 400, resp.StatusCode)
			var e struct {
				Error struct {
					Message string
					Type    string
					Param   *string
					Code    *string
				}
			}
			require.NoError(t, json.Unmarshal(b, &e))
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Contains(t, e.Error.Message, tt.message)
			if tt.param == "" {
				assert.Nil(t, e.Error.Param)
			} else if assert.NotNil(t, e.Error.Param) {
				assert.Equal(t, tt.param, *e.Error.Param)
			}
			if tt.code == "" {
				assert.Nil(t, e.Error.Code)
			} else if assert.NotNil(t, e.Error.Code) {
				assert.Equal(t, tt.code, *e.Error.Code)
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	t.Run("count to N", func(t *testing.T) {
		_, b := post(t, sim, "gpt-4o", chatBody("Please count to 5.", 0, false), nil)
		assert.Equal(t, "1, 2, 3, 4, 5.", parse(t, b).Choices[0].Message.Content)
	})
	t.Run("other prompts quote the question and are deterministic", func(t *testing.T) {
		_, b1 := post(t, sim, "gpt-4o", chatBody("What is the capital of France? [[sim:slow ms=0]]", 0, false), nil)
		_, b2 := post(t, sim, "gpt-4o", chatBody("What is the capital of France?", 0, false), nil)
		a1, a2 := parse(t, b1).Choices[0].Message.Content, parse(t, b2).Choices[0].Message.Content
		assert.Contains(t, a1, "What is the capital of France?")
		assert.NotContains(t, a1, "[[sim:")
		assert.Equal(t, a1, a2)
	})
	t.Run("max_tokens cuts the answer", func(t *testing.T) {
		_, b := post(t, sim, "gpt-4o", chatBody("Count to 10", 5, false), nil)
		r := parse(t, b)
		assert.Equal(t, "length", r.Choices[0].FinishReason)
		assert.Equal(t, 5, r.Usage.CompletionTokens)
		assert.Equal(t, "1, 2,", r.Choices[0].Message.Content)
	})
	t.Run("content parts", func(t *testing.T) {
		parts := `{"messages":[{"role":"user","content":[{"type":"text","text":"Count to 3"},{"type":"image_url","image_url":{"url":"x"}}]}]}`
		_, b := post(t, sim, "gpt-4o", parts, nil)
		assert.Equal(t, "1, 2, 3.", parse(t, b).Choices[0].Message.Content)
	})
	t.Run("prompt tokens follow the model's encoding", func(t *testing.T) {
		// The recorded prompt is 42 tokens for gpt-4 (cl100k_base); gpt-4o
		// counts with o200k_base, which splits this text differently.
		text := recordedPrompt + " Größenordnung, naïveté, 東京タワー"
		for _, model := range []string{"gpt-4", "gpt-4o"} {
			sim := aoaitest.New(aoaitest.Options{Deployments: []string{model}})
			c, err := tokens.ForModel(model)
			require.NoError(t, err)
			_, b := post(t, sim, model, chatBody(text, 0, false), nil)
			assert.Equal(t, c.Prompt([]tokens.Message{{Role: "user", Content: text}}), parse(t, b).Usage.PromptTokens, model)
		}
		cl, err := tokens.ForModel("gpt-4")
		require.NoError(t, err)
		o, err := tokens.ForModel("gpt-4o")
		require.NoError(t, err)
		assert.NotEqual(t, cl.Text(text), o.Text(text), "the text must tell the encodings apart")
	})
	t.Run("client request id echoed", func(t *testing.T) {
		resp, _ := post(t, sim, "gpt-4o", chatBody("hi", 0, false), http.Header{"X-Ms-Client-Request-Id": {"abc"}})
		assert.Equal(t, "abc", resp.Header.Get("x-ms-client-request-id"))
		assert.Equal(t, "gpt-4o", resp.Header.Get("x-ms-deployment-name"))
	})
}

const recordedPrompt = "Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."

func TestStreamUsageChunk(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4"}})
	body := `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"` + recordedPrompt + `"}]}`
	resp, b := post(t, sim, "gpt-4", body, nil)
	require.Equal(t, 200, resp.StatusCode)
	events := sseData(t, bytes.NewReader(b))
	require.Len(t, events, 34, "the 33 recorded events plus the usage chunk")
	assert.Equal(t, "[DONE]", events[33])
	var u struct {
		Choices []any
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(events[32]), &u))
	for i, ev := range events[1:32] {
		assert.Contains(t, ev, `"usage":null`, "chunk %d", i+1)
	}
	assert.NotContains(t, events[0], "usage")
	assert.Empty(t, u.Choices)
	assert.Equal(t, 42, u.Usage.PromptTokens)
	assert.Equal(t, 29, u.Usage.CompletionTokens)
	assert.Equal(t, 71, u.Usage.TotalTokens)
}

func TestContextWindowByModel(t *testing.T) {
	// The default applies when Options.ContextWindow is 0: 8192 tokens for
	// gpt-4, so 8000 prompt tokens + 1000 is too many.
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4"}})
	resp, b := post(t, sim, "gpt-4", chatBody(strings.Repeat("word ", 7990), 1000, false), nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "context_length_exceeded", errorCode(t, b))
	assert.Contains(t, errorMessage(t, b), "maximum context length is 8192 tokens")

	// gpt-5 takes 400,000 tokens in all but 272,000 of prompt at most.
	sim = aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-5"}})
	long := `{"messages":[{"role":"user","content":"` + strings.Repeat("word ", 272_100) + `"}],"max_completion_tokens":100}`
	resp, b = post(t, sim, "gpt-5", long, nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "context_length_exceeded", errorCode(t, b))
	assert.Contains(t, errorMessage(t, b), "maximum context length is 272000 tokens")

	// A reasoning model refuses max_tokens, as Azure does.
	resp, b = post(t, sim, "gpt-5", chatBody("hi", 100, false), nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "unsupported_parameter", errorCode(t, b))
}

func TestLatencyModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{TimeToFirstToken: 2 * time.Second, PerToken: 50 * time.Millisecond})
		start := time.Now()
		resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("Count to 10", 0, false), nil)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		n := parse(t, b).Usage.CompletionTokens
		assert.Equal(t, 2*time.Second+time.Duration(n)*50*time.Millisecond, time.Since(start))

		// A stream sends its first event at the time to first token and
		// then one delta per token.
		start = time.Now()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, deploymentsURL, strings.NewReader(chatBody("Count to 10", 0, true)))
		require.NoError(t, err)
		resp, err = c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 2*time.Second, time.Since(start), "headers after the time to first token")
		events := sseData(t, resp.Body)
		assert.Len(t, events, n+4)
		assert.Equal(t, 2*time.Second+time.Duration(n)*50*time.Millisecond, time.Since(start))
		assert.Equal(t, 2, sim.Stats().Completed)
	})
}

func TestSlowDirective(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := bubble(t, aoaitest.Options{TimeToFirstToken: time.Second})
		start := time.Now()
		resp, _, err := call(t.Context(), c, deploymentsURL, chatBody("hi [[sim:slow ms=250000]]", 0, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, 250*time.Second, time.Since(start))
	})
}

func TestHangIsCancelledByTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Second)
		defer cancel()
		start := time.Now()
		_, _, err := call(ctx, c, deploymentsURL, chatBody("hi [[sim:hang]]", 0, false), nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 200*time.Second, time.Since(start))
		synctest.Wait() // the handler notices the disconnect
		require.Len(t, sim.Requests(), 1, "the handler has finished")
		st := sim.Stats()
		assert.Equal(t, 1, st.Cancelled)
		assert.Equal(t, 0, st.Completed)
		assert.Equal(t, 0, st.InFlight)
		rec := sim.Requests()[0]
		assert.True(t, rec.Cancelled)
		assert.Equal(t, "hang", rec.Fault)
		assert.Equal(t, 0, rec.Status)
	})
}

func TestCancelledWhileStreaming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{PerToken: time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, deploymentsURL, strings.NewReader(chatBody("Count to 10", 0, true)))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		time.AfterFunc(3500*time.Millisecond, cancel)
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		synctest.Wait()
		require.Len(t, sim.Requests(), 1, "the handler has finished")
		rec := sim.Requests()[0]
		assert.True(t, rec.Cancelled)
		assert.Equal(t, 200, rec.Status)
		assert.Equal(t, 1, sim.Stats().Cancelled)
	})
}

func TestStatusDirective(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{})
		body := chatBody("hi [[sim:status code=503 after=1500 times=2 id=flaky]]", 0, false)
		for i, want := range []int{503, 503, 200, 200} {
			start := time.Now()
			resp, b, err := call(t.Context(), c, deploymentsURL, body, nil)
			require.NoError(t, err)
			assert.Equal(t, want, resp.StatusCode, "request %d: %s", i, b)
			if want == 503 {
				assert.Equal(t, 1500*time.Millisecond, time.Since(start))
				assert.Contains(t, string(b), "server_error")
			}
		}
		// Another id has its own counter; no times means every request.
		resp, _, err := call(t.Context(), c, deploymentsURL, chatBody("[[sim:status code=503 times=1 id=other]]", 0, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		for range 3 {
			resp, _, err := call(t.Context(), c, deploymentsURL, chatBody("[[sim:status code=502]]", 0, false), nil)
			require.NoError(t, err)
			assert.Equal(t, 502, resp.StatusCode)
		}
		faults := 0
		for _, r := range sim.Requests() {
			if r.Fault != "" {
				faults++
			}
		}
		assert.Equal(t, 6, faults, "requests past times= are not faults")
	})
}

func TestThrottleDirective(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	resp, b := post(t, sim, "gpt-4o", chatBody("[[sim:throttle s=12 times=1 id=t]]", 0, false), nil)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "12", resp.Header.Get("retry-after"))
	assert.Equal(t, "12000", resp.Header.Get("retry-after-ms"))
	assert.Equal(t, "429", errorCode(t, b))
	assert.Contains(t, errorMessage(t, b), "Please retry after 12 seconds.")
	resp, _ = post(t, sim, "gpt-4o", chatBody("[[sim:throttle s=12 times=1 id=t]]", 0, false), nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 1, sim.Stats().Throttled)
}

func TestStatusDirectiveBodies(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	tests := []struct {
		code int
		want string
	}{
		{401, "401"}, {404, "DeploymentNotFound"}, {403, "403"}, {408, "408"},
	}
	for _, tt := range tests {
		resp, b := post(t, sim, "gpt-4o", chatBody(fmt.Sprintf("[[sim:status code=%d]]", tt.code), 0, false), nil)
		assert.Equal(t, tt.code, resp.StatusCode)
		assert.Equal(t, tt.want, errorCode(t, b))
	}
}

func TestStatus429DirectiveHasNoRetryAfter(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	resp, b := post(t, sim, "gpt-4o", chatBody("[[sim:status code=429]]", 0, false), nil)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("retry-after"))
	assert.Empty(t, resp.Header.Get("retry-after-ms"))
	assert.Equal(t, "429", errorCode(t, b))
}

func TestFilterDirective(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	resp, b := post(t, sim, "gpt-4o", chatBody("[[sim:filter]]", 0, false), nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "content_filter", errorCode(t, b))
	assert.Equal(t, "model_error", resp.Header.Get("ms-azureml-model-error-reason"))
}

func TestFilterCompletionDirective(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	full := parse(t, must(post(t, sim, "gpt-4o", chatBody("Count to 10", 0, false), nil)))
	resp, b := post(t, sim, "gpt-4o", chatBody("Count to 10 [[sim:filter part=completion]]", 0, false), nil)
	require.Equal(t, 200, resp.StatusCode)
	var got struct {
		Choices []struct {
			FinishReason         string `json:"finish_reason"`
			Message              struct{ Content string }
			ContentFilterResults struct {
				Violence struct{ Filtered bool } `json:"violence"`
			} `json:"content_filter_results"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal(b, &got))
	c := got.Choices[0]
	assert.Equal(t, "content_filter", c.FinishReason)
	assert.True(t, c.ContentFilterResults.Violence.Filtered)
	assert.True(t, strings.HasPrefix(full.Choices[0].Message.Content, c.Message.Content))
	assert.Less(t, got.Usage.CompletionTokens, full.Usage.CompletionTokens)
	assert.Positive(t, got.Usage.CompletionTokens)

	_, b = post(t, sim, "gpt-4o", chatBody("Count to 10 [[sim:filter part=completion]]", 0, true), nil)
	events := sseData(t, bytes.NewReader(b))
	require.GreaterOrEqual(t, len(events), 4)
	assert.Contains(t, events[len(events)-2], `"finish_reason":"content_filter"`)
	assert.Contains(t, events[len(events)-3], `"violence":{"filtered":true,"severity":"medium"}`)
}

// must drops the response of post and keeps the body.
func must(_ *http.Response, b []byte) []byte { return b }

func TestMalformedDirective(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	resp, b := post(t, sim, "gpt-4o", chatBody("[[sim:malformed]]", 0, false), nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, b)
	var v any
	assert.Error(t, json.Unmarshal(b, &v), "the body must not parse: %s", b)
}

func TestResetDirective(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
		srv := httptest.NewServer(sim)
		defer srv.Close()
		_, _, err := call(t.Context(), srv.Client(), srv.URL+"/openai/deployments/gpt-4o/chat/completions?api-version=1", chatBody("[[sim:reset]]", 0, false), nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, syscall.ECONNRESET, "linger 0 makes the close an RST, not a FIN")
		st := sim.Stats()
		assert.Equal(t, 1, st.Reset)
		assert.Equal(t, 0, st.Completed)
		assert.Equal(t, "reset", sim.Requests()[0].Fault)
	})
	t.Run("memnet after a wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sim, c := bubble(t, aoaitest.Options{})
			start := time.Now()
			_, _, err := call(t.Context(), c, deploymentsURL, chatBody("[[sim:reset after=3000]]", 0, false), nil)
			require.Error(t, err)
			assert.Equal(t, 3*time.Second, time.Since(start))
			synctest.Wait()
			assert.Equal(t, 1, sim.Stats().Reset)
		})
	})
}

func TestRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{TPM: 1000})
		// Each request is estimated at its prompt tokens + 300.
		var est int
		for i := range 3 {
			resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 300, false), nil)
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode, "request %d: %s", i, b)
			est = parse(t, b).Usage.PromptTokens + 300
			assert.Equal(t, strconv.Itoa(1000-(i+1)*est), resp.Header.Get("x-ratelimit-remaining-tokens"))
			assert.Equal(t, "1000", resp.Header.Get("x-ratelimit-limit-tokens"))
			advance(10 * time.Second) // virtual time inside the bubble
		}
		// 30 s into the window, the fourth does not fit until the first
		// request's estimate leaves it at 60 s.
		resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 300, false), nil)
		require.NoError(t, err)
		require.Equal(t, 429, resp.StatusCode, "%s", b)
		assert.Equal(t, "30", resp.Header.Get("retry-after"))
		assert.Equal(t, "30000", resp.Header.Get("retry-after-ms"))
		assert.Equal(t, strconv.Itoa(1000-3*est), resp.Header.Get("x-ratelimit-remaining-tokens"))
		assert.Contains(t, errorMessage(t, b), "Please retry after 30 seconds.")

		wait, err := strconv.Atoi(resp.Header.Get("retry-after"))
		require.NoError(t, err)
		advance(time.Duration(wait)*time.Second - time.Millisecond) // virtual time
		resp, _, err = call(t.Context(), c, deploymentsURL, chatBody("hi", 300, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode, "a millisecond early is still too early")
		assert.Equal(t, "1", resp.Header.Get("retry-after"), "rounded up")
		advance(time.Millisecond) // virtual time
		resp, _, err = call(t.Context(), c, deploymentsURL, chatBody("hi", 300, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode, "recovers once the window has moved on")
		assert.Equal(t, 2, sim.Stats().Throttled)
	})
}

// TestCallRateLimiter: the request rate Azure pairs with a TPM quota, 6 RPM
// per 1000 TPM evaluated per 10 s, refuses a burst that fits the tokens,
// and says when the oldest request in the window leaves it.
func TestCallRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{TPM: 2000}) // 12 RPM: 2 per 10 s
		for i, gap := range []time.Duration{3 * time.Second, time.Second} {
			resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 10, false), nil)
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode, "request %d: %s", i, b)
			assert.Equal(t, "2", resp.Header.Get("x-ratelimit-limit-requests"))
			assert.Equal(t, strconv.Itoa(1-i), resp.Header.Get("x-ratelimit-remaining-requests"))
			advance(gap) // virtual time
		}
		// 4 s in: the third fits the tokens but not the rate until the first
		// request leaves the 10 s window, 6 s from now.
		resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 10, false), nil)
		require.NoError(t, err)
		require.Equal(t, 429, resp.StatusCode, "%s", b)
		assert.Equal(t, "6", resp.Header.Get("retry-after"))
		assert.Equal(t, "6000", resp.Header.Get("retry-after-ms"))
		assert.Equal(t, "DeploymentRatelimit-Call", resp.Header.Get("policy-id"))
		assert.Equal(t, "0", resp.Header.Get("x-ratelimit-remaining-requests"))
		assert.Contains(t, errorMessage(t, b), "exceeded call rate limit")
		assert.Contains(t, errorMessage(t, b), "Please retry after 6 seconds.")

		advance(6*time.Second - time.Millisecond) // virtual time
		resp, _, err = call(t.Context(), c, deploymentsURL, chatBody("hi", 10, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode, "a millisecond early is still too early")
		advance(time.Millisecond) // virtual time
		resp, _, err = call(t.Context(), c, deploymentsURL, chatBody("hi", 10, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode, "the first request has left the window")
		assert.Equal(t, 2, sim.Stats().Throttled)
	})
}

func TestRequestOverTPMNeverFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{TPM: 1000})
		for range 2 {
			resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 1000, false), nil)
			require.NoError(t, err)
			assert.Equal(t, 429, resp.StatusCode)
			assert.Equal(t, "86400", resp.Header.Get("retry-after"))
			assert.Contains(t, errorMessage(t, b), "Please retry after 86400 seconds.")
			advance(2 * time.Minute) // virtual time: an empty window does not help
		}
		// The refused requests spent nothing.
		resp, _, err := call(t.Context(), c, deploymentsURL, chatBody("hi", 900, false), nil)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, 900, sim.Requests()[2].MaxTokens)
	})
}

func TestRecordsAndStats(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, APIKey: "k"})
	_, _ = post(t, sim, "gpt-4o", chatBody("hi", 50, true), http.Header{"Api-Key": {"k"}, "X-Ms-Client-Request-Id": {"c1"}})
	_, _ = post(t, sim, "gpt-4o", chatBody("hi", 0, false), nil)
	recs := sim.Requests()
	require.Len(t, recs, 2)
	assert.Equal(t, "/openai/deployments/gpt-4o/chat/completions", recs[0].Path)
	assert.Equal(t, "gpt-4o", recs[0].Deployment)
	assert.Equal(t, "api-key", recs[0].Auth)
	assert.Equal(t, 50, recs[0].MaxTokens)
	assert.True(t, recs[0].Stream)
	assert.Equal(t, 200, recs[0].Status)
	assert.Equal(t, "c1", recs[0].ClientRequestID)
	assert.NotEmpty(t, recs[0].RequestID)
	assert.Positive(t, recs[0].PromptTokens)
	assert.Positive(t, recs[0].CompletionTokens)
	assert.Equal(t, 401, recs[1].Status)
	st := sim.Stats()
	assert.Equal(t, aoaitest.Stats{Requests: 2, Completed: 2, PromptTokens: recs[0].PromptTokens, CompletionTokens: recs[0].CompletionTokens}, st)
}

func TestLogsNeitherPromptsNorKeys(t *testing.T) {
	var buf testlog.Buffer
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}, APIKey: "secret-key", Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	_, _ = post(t, sim, "gpt-4o", chatBody("my private question", 0, false), http.Header{"Api-Key": {"secret-key"}})
	out := buf.String()
	assert.Contains(t, out, `"status":200`)
	assert.Contains(t, out, `"deployment":"gpt-4o"`)
	assert.NotContains(t, out, "private")
	assert.NotContains(t, out, "secret-key")
	assert.Equal(t, 1, strings.Count(out, "\n"), "one line per request")
}

func BenchmarkServeHTTP(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run("stream="+strconv.FormatBool(stream), func(b *testing.B) {
			sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4"}})
			body := chatBody(recordedPrompt, 1024, stream)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/openai/deployments/gpt-4/chat/completions?api-version=2024-10-21", strings.NewReader(body))
				w := httptest.NewRecorder()
				sim.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

func TestRequestsKeepsTheLast10000(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{})
	for i := range 20001 {
		req := httptest.NewRequest(http.MethodGet, "/nothing/"+strconv.Itoa(i), nil)
		sim.ServeHTTP(httptest.NewRecorder(), req)
	}
	recs := sim.Requests()
	require.Len(t, recs, 10000)
	assert.Equal(t, "/nothing/10001", recs[0].Path)
	assert.Equal(t, "/nothing/20000", recs[9999].Path)
	assert.Equal(t, 20001, sim.Stats().Requests)
}

// A client that has read the whole answer (or seen the reset) finds the
// request already recorded: no synctest.Wait or polling needed.
func TestRecordVisibleOnceTheAnswerIsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := bubble(t, aoaitest.Options{PerToken: time.Millisecond})
		bodies := []string{
			chatBody("hi", 0, false),
			chatBody("hi", 0, true),
			chatBody("[[sim:malformed]]", 0, false),
			chatBody("[[sim:status code=503]]", 0, false),
			chatBody("[[sim:throttle]]", 0, false),
			chatBody("[[sim:reset]]", 0, false),
			"not json",
		}
		for i, body := range bodies {
			_, _, _ = call(t.Context(), c, deploymentsURL, body, nil)
			require.Len(t, sim.Requests(), i+1, body)
			assert.Equal(t, 0, sim.Stats().InFlight, body)
		}
	})
}

func TestModelOption(t *testing.T) {
	tests := []struct {
		name, deployment, model, want string
	}{
		{"derived: version dropped", "gpt-4-0613", "", "gpt-4"},
		{"derived: dated version dropped", "gpt-4o-2024-08-06", "", "gpt-4o"},
		{"derived: plain name", "chat", "", "chat"},
		{"set", "chat", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := aoaitest.New(aoaitest.Options{Deployments: []string{tt.deployment}, Model: tt.model})
			_, b := post(t, sim, tt.deployment, chatBody("hi", 0, false), nil)
			var got struct{ Model string }
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, tt.want, got.Model)
		})
	}
}

func TestTimesWithoutIDCountsPerText(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
	statuses := func(text string, n int) []int {
		var out []int
		for range n {
			resp, _ := post(t, sim, "gpt-4o", chatBody(text, 0, false), nil)
			out = append(out, resp.StatusCode)
		}
		return out
	}
	assert.Equal(t, []int{502, 200, 200}, statuses("[[sim:status code=502 times=1]] a", 3))
	// The same directive in another question shares the counter; another
	// directive text does not.
	assert.Equal(t, []int{200}, statuses("b [[sim:status code=502 times=1]]", 1))
	assert.Equal(t, []int{503, 200}, statuses("[[sim:status code=503 times=1]]", 2))
}

// Mid-stream faults strike after the given number of tokens: the stream
// stalls, the connection drops, or the output filter ends the answer.
func TestMidStreamDirectives(t *testing.T) {
	t.Run("stall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sim, c := bubble(t, aoaitest.Options{PerToken: time.Second})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, b, err := call(ctx, c, deploymentsURL, chatBody("Count to 10 [[sim:hang tokens=4]]", 0, true), nil)
			require.Error(t, err, "nothing ends the stream but the client")
			events := sseData(t, bytes.NewReader(b))
			assert.Equal(t, "1, 2", contentOf(t, events), "four tokens, then silence")
			synctest.Wait()
			assert.Equal(t, 1, sim.Stats().Cancelled)
			assert.Equal(t, "hang", sim.Requests()[0].Fault)
		})
	})
	t.Run("reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sim, c := bubble(t, aoaitest.Options{PerToken: time.Second})
			start := time.Now()
			resp, b, err := call(t.Context(), c, deploymentsURL, chatBody("Count to 10 [[sim:reset tokens=3]]", 0, true), nil)
			require.Error(t, err, "the body ends without its last chunk")
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, 3*time.Second, time.Since(start))
			events := sseData(t, bytes.NewReader(b))
			assert.Equal(t, "1, ", contentOf(t, events))
			assert.NotContains(t, events, "[DONE]")
			synctest.Wait()
			assert.Equal(t, 1, sim.Stats().Reset)
		})
	})
	t.Run("filter", func(t *testing.T) {
		sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o"}})
		_, b := post(t, sim, "gpt-4o", chatBody("Count to 10 [[sim:filter tokens=5]]", 0, true), nil)
		events := sseData(t, bytes.NewReader(b))
		assert.Equal(t, "1, 2,", contentOf(t, events))
		assert.Contains(t, events[len(events)-2], `"finish_reason":"content_filter"`)
		assert.Equal(t, "[DONE]", events[len(events)-1])
	})
	t.Run("not streamed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sim, c := bubble(t, aoaitest.Options{PerToken: time.Second})
			start := time.Now()
			_, _, err := call(t.Context(), c, deploymentsURL, chatBody("Count to 10 [[sim:reset tokens=3]]", 0, false), nil)
			require.Error(t, err)
			assert.Equal(t, 3*time.Second, time.Since(start), "when the tokens would have been generated")
			synctest.Wait()
			assert.Equal(t, 1, sim.Stats().Reset)
		})
	})
}

// contentOf joins the delta contents of a stream's events.
func contentOf(t *testing.T, events []string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		if ev == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &c), ev)
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
}

// A directive that names a backend plays only on the simulator playing it:
// two simulators are a pool of two, one throttled, one with room. The
// last directive that plays here wins.
func TestDirectiveScopedToABackend(t *testing.T) {
	for _, tt := range []struct {
		backend, text string
		want          int
	}{
		{"a", "hi [[sim:throttle s=20 backend=a]]", 429},
		{"b", "hi [[sim:throttle s=20 backend=a]]", 200},
		{"", "hi [[sim:throttle s=20 backend=a]]", 200},
		{"b", "hi [[sim:status code=500 backend=b]] [[sim:throttle s=20 backend=a]]", 500},
		{"b", "hi [[sim:throttle s=20]]", 429},
	} {
		resp, _ := post(t, aoaitest.New(aoaitest.Options{Backend: tt.backend}), aoaitest.DefaultDeployment, chatBody(tt.text, 0, false), nil)
		assert.Equal(t, tt.want, resp.StatusCode, "%s on %q", tt.text, tt.backend)
	}
}
