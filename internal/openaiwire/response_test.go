package openaiwire_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// Chunks in Azure OpenAI's shape (prompt_filter_results first, content
// filter results per choice, the usage chunk last), as the simulator
// streams them.
var textChunks = []string{
	`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`,
	`{"choices":[{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1762463856,"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_1","usage":null}`,
	`{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}},"delta":{"content":"1, 2"},"finish_reason":null,"index":0,"logprobs":null}],"created":1762463856,"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_1","usage":null}`,
	`{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1762463856,"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_1","usage":null}`,
	`{"choices":[],"created":1762463856,"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","usage":{"completion_tokens":3,"prompt_tokens":9,"total_tokens":12}}`,
}

func TestAssemblerText(t *testing.T) {
	var a openaiwire.Assembler
	for _, c := range textChunks {
		a.Add(c)
	}
	b, err := json.Marshal(a.Completion("gpt-4o-mini"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"chatcmpl-1","object":"chat.completion","created":1762463856,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1",
 "choices":[{"index":0,"message":{"role":"assistant","content":"1, 2","refusal":null},"finish_reason":"stop","logprobs":null,
   "content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],
 "usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12},
 "prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`, string(b))
}

// Chunks added by what package aoai read of them make the same completion
// as chunks read whole.
func TestAssemblerAddRead(t *testing.T) {
	var whole, byRead openaiwire.Assembler
	head := openaiwire.Annotations{ID: []byte(`"chatcmpl-1"`), Created: []byte(`1762463856`), Model: []byte(`"gpt-4o-mini-2024-07-18"`), SystemFingerprint: []byte(`"fp_1"`)}
	with := func(filter string) openaiwire.Annotations {
		n := head
		n.FilterResults = []byte(filter)
		return n
	}
	reads := []openaiwire.Read{
		{Annotations: openaiwire.Annotations{ID: []byte(`""`), PromptFilterResults: []byte(`[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]`)}},
		{Annotations: with(`{}`)},
		{Text: "1, 2", Annotations: with(`{"hate":{"filtered":false,"severity":"safe"}}`)},
		{Finish: "stop", Annotations: with(`{}`)},
	}
	for i, c := range textChunks {
		whole.Add(c)
		if i < len(reads) {
			byRead.AddRead(&reads[i])
		}
	}
	byRead.SetUsage(openaiwire.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12})
	assert.Equal(t, whole.Completion("m"), byRead.Completion("m"))
}

// Content is null only for an answer that calls tools with no text, and
// refusal only when there is none, whether the chunks came whole (Add) or
// as package aoai read them (AddRead), an empty delta ("") included.
func TestAssemblerNullContentAndRefusal(t *testing.T) {
	var calls, empty, byRead openaiwire.Assembler
	for _, c := range []string{
		`{"choices":[{"delta":{"role":"assistant","content":"","refusal":""},"index":0}],"id":"chatcmpl-3","created":1,"model":"m"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},"index":0}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}]}`,
	} {
		calls.Add(c)
	}
	m := calls.Completion("m").Choices[0].Message
	assert.Nil(t, m.Content, "a tool call's answer with no text")
	assert.Nil(t, m.Refusal)
	require.Len(t, m.ToolCalls, 1)

	empty.Add(`{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":"stop","index":0}],"id":"chatcmpl-4","created":1,"model":"m"}`)
	byRead.AddRead(&openaiwire.Read{Finish: "stop"})
	for _, a := range []*openaiwire.Assembler{&empty, &byRead} {
		m = a.Completion("m").Choices[0].Message
		require.NotNil(t, m.Content, "an answer with no text and no tool call")
		assert.Empty(t, *m.Content)
		assert.Nil(t, m.Refusal)
	}

	byRead.AddRead(&openaiwire.Read{Refusal: "I can't help with that."})
	m = byRead.Completion("m").Choices[0].Message
	require.NotNil(t, m.Refusal)
	assert.Equal(t, "I can't help with that.", *m.Refusal)
}

func TestAssemblerToolCalls(t *testing.T) {
	var a openaiwire.Assembler
	for _, c := range []string{
		`{"choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"index":0}],"id":"chatcmpl-2","created":1,"model":"m"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"index":0}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"index":0}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"index":0}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}]}`,
	} {
		a.Add(c)
	}
	b, err := json.Marshal(a.Completion("gpt-4o-mini").Choices[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[
 {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
 {"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]}}`, string(b))
}

func TestErrorObject(t *testing.T) {
	b, err := json.Marshal(openaiwire.NewError(500, "deadline_exceeded", "Too slow.", ""))
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"Too slow.","type":"server_error","param":null,"code":"deadline_exceeded"}}`, string(b))
	b, err = json.Marshal(openaiwire.NewError(404, "model_not_found", "No such model.", "model"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"No such model.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`, string(b))
}

// TestShouldRetry: x-should-retry says true only where the fast-failure
// rule retries the answer with a wait under the threshold.
func TestShouldRetry(t *testing.T) {
	const threshold = 30 * time.Second
	tests := []struct {
		name   string
		status int
		wait   time.Duration
		want   bool
	}{
		{"a fast 502", http.StatusBadGateway, 0, true},
		{"a fast 503 naming no wait", http.StatusServiceUnavailable, 0, true},
		{"a 503 whose wait fits", http.StatusServiceUnavailable, 2 * time.Second, true},
		{"a 429 whose wait fits", http.StatusTooManyRequests, 5 * time.Second, true},
		{"a 429 whose wait does not fit", http.StatusTooManyRequests, 45 * time.Second, false},
		{"a 503 whose wait does not fit", http.StatusServiceUnavailable, 31 * time.Second, false},
		{"the deadline's 500", http.StatusInternalServerError, 0, false},
		{"a 400", http.StatusBadRequest, 0, false},
		{"a 401", http.StatusUnauthorized, 0, false},
		{"a 404", http.StatusNotFound, 0, false},
		{"a 413", http.StatusRequestEntityTooLarge, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, openaiwire.ShouldRetry(tt.status, tt.wait, threshold))
		})
	}
}

func TestModels(t *testing.T) {
	b, err := json.Marshal(openaiwire.Models("timebox", "chat", "gpt-4o-mini"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[{"id":"chat","object":"model","created":0,"owned_by":"timebox"},{"id":"gpt-4o-mini","object":"model","created":0,"owned_by":"timebox"}]}`, string(b))
}

// Azure's content filter verdict (chat_400_content_filter_prompt.json's
// error object, shortened) passes on as Azure sent it.
func TestInnerError(t *testing.T) {
	obj := []byte(`{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400,
 "innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}`)
	assert.JSONEq(t, `{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}`, string(openaiwire.InnerError(obj)))
	assert.Nil(t, openaiwire.InnerError([]byte(`{"message":"x"}`)))
	assert.Nil(t, openaiwire.InnerError(nil))
}

func TestRejected(t *testing.T) {
	e := openaiwire.Rejected([]byte(`{"message":"Unsupported parameter: 'reasoning_effort' is not supported with this model.","type":"invalid_request_error","param":"reasoning_effort","code":"unsupported_parameter"}`))
	require.NotNil(t, e)
	assert.Equal(t, 400, e.Status)
	assert.Equal(t, "reasoning_effort", e.Param)
	assert.Equal(t, "unsupported_parameter", e.Code)
	assert.Nil(t, openaiwire.Rejected([]byte(`{}`)))
}

func TestTimeout(t *testing.T) {
	// openai-go's timeout bounds the whole answer, openai-node's (Lang js)
	// the wait for its headers.
	d, err := openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"600"}, "X-Stainless-Lang": {"go"}})
	require.NoError(t, err)
	assert.Equal(t, openaiwire.Timeouts{Whole: 10 * time.Minute}, d)
	d, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"600"}, "X-Stainless-Lang": {"js"}})
	require.NoError(t, err)
	assert.Equal(t, openaiwire.Timeouts{First: 10 * time.Minute}, d)
	d, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"600"}})
	require.NoError(t, err)
	assert.Equal(t, openaiwire.Timeouts{Whole: 10 * time.Minute}, d, "an SDK not known: the safe reading")
	d, err = openaiwire.Timeout(http.Header{})
	require.NoError(t, err)
	assert.Zero(t, d)
	for _, bad := range []string{"-1", "1.5", "soon", "86401"} {
		_, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {bad}})
		assert.Error(t, err, bad)
	}
	// openai-node with a timeout under a second sends Math.trunc(ms/1000).
	d, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"0"}, "X-Stainless-Lang": {"js"}})
	require.NoError(t, err, "an SDK's own header is never a 400")
	assert.Equal(t, openaiwire.Timeouts{First: time.Second}, d)
}

// openai-python sends its timeout as X-Stainless-Read-Timeout, a float's
// str() ("600.0"), on every request: it bounds the wait for the headers
// and every silence after them.
func TestReadTimeout(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"600.0":  10 * time.Minute,
		"4.5":    4500 * time.Millisecond,
		"1e+20":  24 * time.Hour, // more than a day shortens nothing
		"1e-300": time.Nanosecond,
	} {
		d, err := openaiwire.Timeout(http.Header{"X-Stainless-Read-Timeout": {value}})
		require.NoError(t, err, value)
		assert.Equal(t, openaiwire.Timeouts{First: want, Gap: want}, d, value)
	}
	d, err := openaiwire.Timeout(http.Header{"X-Stainless-Read-Timeout": {"10.0"}})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, d.KeepAlive(15*time.Second), "half the read timeout")
	assert.Equal(t, 15*time.Second, openaiwire.Timeouts{Gap: time.Minute}.KeepAlive(15*time.Second))
	d, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"30"}, "X-Stainless-Lang": {"js"}, "X-Stainless-Read-Timeout": {"600.0"}})
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, d.First, "the shorter of the two")
	d, err = openaiwire.Timeout(http.Header{"X-Stainless-Timeout": {"600"}, "X-Stainless-Read-Timeout": {"30.0"}})
	require.NoError(t, err)
	assert.Equal(t, openaiwire.Timeouts{Whole: 10 * time.Minute, First: 30 * time.Second, Gap: 30 * time.Second}, d,
		"the read timeout bounds the headers and each silence, the SDK's timeout the whole")
	for _, bad := range []string{"0", "0.0", "-1.0", "nan", "inf", "soon", ""} {
		_, err = openaiwire.Timeout(http.Header{"X-Stainless-Read-Timeout": {bad}})
		assert.Error(t, err, bad)
	}
	_, err = openaiwire.Timeout(http.Header{"X-Stainless-Read-Timeout": {"1.0", "2.0"}})
	assert.Error(t, err, "sent twice")
}
