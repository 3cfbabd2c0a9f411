package aoaitest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

const toolRequest = `{"messages":[{"role":"user","content":"What is the weather in Paris?"}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`

func TestToolCallAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := bubble(t, aoaitest.Options{})
		resp, body, err := call(context.Background(), c, deploymentsURL, toolRequest+`}`, nil)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(body))
		var got struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(body, &got))
		ch := got.Choices[0]
		assert.Equal(t, "tool_calls", ch.FinishReason)
		assert.Nil(t, ch.Message.Content, "a call alone has null content")
		require.Len(t, ch.Message.ToolCalls, 1)
		tc := ch.Message.ToolCalls[0]
		assert.Equal(t, "function", tc.Type)
		assert.Equal(t, "get_weather", tc.Function.Name)
		assert.True(t, strings.HasPrefix(tc.ID, "call_"))
		assert.JSONEq(t, `{"question":"What is the weather in Paris?"}`, tc.Function.Arguments)
	})
}

func TestToolCallStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := bubble(t, aoaitest.Options{})
		resp, body, err := call(context.Background(), c, deploymentsURL, toolRequest+`,"stream":true}`, nil)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(body))
		var args, name, finish string
		for _, line := range strings.Split(string(body), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Index    *int `json:"index"`
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &ch))
			for _, c := range ch.Choices {
				for _, tc := range c.Delta.ToolCalls {
					require.NotNil(t, tc.Index, "every piece names its call")
					name += tc.Function.Name
					args += tc.Function.Arguments
				}
				if c.FinishReason != nil {
					finish = *c.FinishReason
				}
			}
		}
		assert.Equal(t, "get_weather", name)
		assert.JSONEq(t, `{"question":"What is the weather in Paris?"}`, args)
		assert.Equal(t, "tool_calls", finish)
	})
}

func TestToolResultIsAnsweredInText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := bubble(t, aoaitest.Options{})
		req := `{"messages":[{"role":"user","content":"Weather in Paris?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"sunny"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather"}}]}`
		resp, body, err := call(context.Background(), c, deploymentsURL, req, nil)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.Contains(t, string(body), `"finish_reason":"stop"`)
		assert.NotContains(t, string(body), "tool_calls")
	})
}
