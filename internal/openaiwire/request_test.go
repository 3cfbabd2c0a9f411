package openaiwire_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// sdkBody is what openai-node sends for a chat with every field this
// dialect takes, tools and a tool round trip included.
const sdkBody = `{"model":"gpt-4o-mini","messages":[
 {"role":"system","content":"Be brief."},
 {"role":"developer","content":[{"type":"text","text":"Use tools."}]},
 {"role":"user","content":[{"type":"text","text":"Weather in "},{"type":"text","text":"Paris?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
 {"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"sunny"},
 {"role":"user","content":"Thanks","name":"ann"}],
 "max_tokens":100,"max_completion_tokens":50,"temperature":0,"top_p":1,"stop":["\n\n"],"seed":7,"n":1,
 "presence_penalty":0.5,"frequency_penalty":-0.5,"response_format":{"type":"text"},
 "tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"},"strict":false}}],
 "tool_choice":"auto","parallel_tool_calls":false,"user":"u1","stream":true,"stream_options":{"include_usage":true},
 "reasoning_effort":"low"}`

func TestDecodeTakesWhatTheSDKsSend(t *testing.T) {
	req, err := openaiwire.DecodeChat([]byte(sdkBody))
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", req.Model)
	assert.Len(t, req.Messages, 6)
	assert.Equal(t, 50, req.Limit(), "max_completion_tokens wins over max_tokens")
	assert.True(t, req.IsStream())
	assert.True(t, req.IncludeUsage())
	assert.Equal(t, "Weather in Paris?", req.Messages[2].Content.String())
	assert.True(t, req.Messages[3].Content.Null)

	members, err := req.Upstream()
	require.NoError(t, err)
	var sent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(members, &sent))
	msgs := sent["messages"]
	delete(sent, "messages")
	fields, err := json.Marshal(sent)
	require.NoError(t, err)
	assert.JSONEq(t, `[
 {"role":"system","content":"Be brief."},
 {"role":"developer","content":[{"type":"text","text":"Use tools."}]},
 {"role":"user","content":[{"type":"text","text":"Weather in "},{"type":"text","text":"Paris?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"sunny"},
 {"role":"user","content":"Thanks","name":"ann"}]`, string(msgs), "annotations and a null refusal are an answer's, not sent on")
	assert.JSONEq(t, `{"temperature":0,"top_p":1,"stop":["\n\n"],"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,
 "response_format":{"type":"text"},"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"},"strict":false}}],
 "tool_choice":"auto","parallel_tool_calls":false,"user":"u1","reasoning_effort":"low"}`, string(fields),
		"n, the limits and the stream's fields are the upstream client's to write")

	texts := req.Texts()
	assert.Equal(t, openaiwire.Text{Role: "assistant", Content: `get_weather{"city":"Paris"}`}, texts[3], "a call's name and arguments count")
}

func TestDecodeMinimal(t *testing.T) {
	req, err := openaiwire.DecodeChat([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	assert.False(t, req.IsStream())
	assert.Equal(t, 0, req.Limit())
	members, err := req.Upstream()
	require.NoError(t, err)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"hi"}]}`, string(members), "only the messages")
}

func TestNullFieldGoesOnAsItCame(t *testing.T) {
	req, err := openaiwire.DecodeChat([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":null}`))
	require.NoError(t, err)
	members, err := req.Upstream()
	require.NoError(t, err)
	assert.JSONEq(t, `{"messages":[{"role":"user","content":"hi"}],"stop":null}`, string(members))
}

func TestDecodeRefusals(t *testing.T) {
	tests := []struct {
		name, body, param, code string
	}{
		{"unknown top-level field", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true}`, "logprobs", "unknown_parameter"},
		{"unknown field in a message", `{"messages":[{"role":"user","content":"hi","audio":{}}]}`, "messages[0].audio", "unknown_parameter"},
		{"unknown field in a part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache":1}]}]}`, "messages[0].content[0].cache", "unknown_parameter"},
		{"unknown field in a tool", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"},"x":1}]}`, "tools[0].x", "unknown_parameter"},
		{"unknown stream option", `{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_obfuscation":true}}`, "stream_options.include_obfuscation", "unknown_parameter"},
		{"n above 1", `{"messages":[{"role":"user","content":"hi"}],"n":2}`, "n", "invalid_request"},
		{"no messages", `{"messages":[]}`, "messages", "invalid_request"},
		{"unknown role", `{"messages":[{"role":"function","content":"hi"}]}`, "messages[0].role", "invalid_request"},
		{"content of the wrong kind", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "invalid_request"},
		{"null content without calls", `{"messages":[{"role":"user","content":null}]}`, "messages[0].content", "invalid_request"},
		{"tool message without its call", `{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", "invalid_request"},
		{"image in a system message", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`, "messages[0].content[0].type", "invalid_request"},
		{"unknown part type", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "messages[0].content[0].type", "invalid_request"},
		{"zero max_tokens", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, "max_tokens", "invalid_request"},
		{"fractional max_tokens", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1.5}`, "max_tokens", "invalid_request"},
		{"temperature out of range", `{"messages":[{"role":"user","content":"hi"}],"temperature":3}`, "temperature", "invalid_request"},
		{"five stops", `{"messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, "stop", "invalid_request"},
		{"stop of the wrong kind", `{"messages":[{"role":"user","content":"hi"}],"stop":5}`, "stop", "invalid_request"},
		{"tool_choice unknown", `{"messages":[{"role":"user","content":"hi"}],"tool_choice":"always"}`, "tool_choice", "invalid_request"},
		{"tool of another type", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"code_interpreter","function":{"name":"f"}}]}`, "tools[0].type", "invalid_request"},
		{"stream_options without a stream", `{"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "stream_options", "invalid_request"},
		{"reasoning effort unknown", `{"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"max"}`, "reasoning_effort", "invalid_request"},
		{"a field twice", `{"messages":[{"role":"user","content":"hi"}],"seed":1,"seed":2}`, "seed", "invalid_request"},
		{"a field in another case", `{"Messages":[{"role":"user","content":"hi"}]}`, "Messages", "unknown_parameter"},
		{"not an object", `[]`, "", "invalid_request"},
		{"not JSON", `{"messages":`, "", "invalid_request"},
		{"two objects", `{} {}`, "", "invalid_request"},
		{"not UTF-8", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "", "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openaiwire.DecodeChat([]byte(tt.body))
			var e *openaiwire.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 400, e.Status)
			assert.Equal(t, "invalid_request_error", e.Type)
			assert.Equal(t, tt.param, e.Param)
			assert.Equal(t, tt.code, e.Code)
			assert.NotEmpty(t, e.Message)
		})
	}
}

func TestUnknownParameterIsOpenAIsOwnError(t *testing.T) {
	_, err := openaiwire.DecodeChat([]byte(`{"messages":[{"role":"user","content":"hi"}],"thinking":{}}`))
	var e *openaiwire.Error
	require.ErrorAs(t, err, &e)
	// OpenAI's answer to an unknown parameter of Chat Completions.
	assert.Equal(t, "Unknown parameter: 'thinking'.", e.Message)
	assert.Equal(t, "unknown_parameter", e.Code)
	assert.Equal(t, "thinking", e.Param)
}

// FuzzDecodeChat: no body makes the decoder panic; what it accepts it can
// send on (Upstream encodes it) and what it refuses is an *Error.
func FuzzDecodeChat(f *testing.F) {
	f.Add([]byte(sdkBody))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[]}],"stop":null,"tool_choice":{"type":"function"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := openaiwire.DecodeChat(body)
		if err != nil {
			var e *openaiwire.Error
			if !assert.ErrorAs(t, err, &e) {
				return
			}
			assert.Equal(t, 400, e.Status)
			return
		}
		_, err = req.Upstream()
		assert.NoError(t, err)
		_ = req.Texts()
	})
}
