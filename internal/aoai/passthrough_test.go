package aoai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// A request in the OpenAI dialect reaches Azure OpenAI with its messages
// and fields as they came, beside the body's own members.
func TestPassthroughOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
		_, hc := memnet.Serve(t, sim)
		rt := &recording{next: hc}
		endpoint, _ := url.Parse("http://127.0.0.1:8081")
		c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k", Transport: rt})
		require.NoError(t, err)
		_, err = c.Complete(context.Background(), &aoai.Request{MaxTokens: 50, Passthrough: &aoai.Passthrough{
			Members: json.RawMessage(`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"temperature":0,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`),
		}})
		require.NoError(t, err)
		body := rt.body
		assert.JSONEq(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":50,
 "stream":true,"stream_options":{"include_usage":true},"temperature":0,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`, body)
	})
}

// recording is the simulator's transport, keeping the last body sent.
type recording struct {
	next policy.Transporter
	body string
}

func (r *recording) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		r.body = string(data)
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	return r.next.Do(req)
}

// Each chunk reaches OnChunk as Azure sent it, the usage chunk marked, and
// a tool call's answer ends well with no text.
func TestOnChunkSeesEveryChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := client(t, aoai.Options{})
		var chunks []aoai.Chunk
		resp, err := c.Complete(context.Background(), &aoai.Request{MaxTokens: 50, Passthrough: &aoai.Passthrough{
			Members: json.RawMessage(`{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather"}}]}`),
		}, OnChunk: func(c aoai.Chunk) { chunks = append(chunks, c) }})
		require.NoError(t, err)
		assert.Equal(t, "tool_calls", resp.FinishReason)
		assert.Empty(t, resp.Content)
		require.NotEmpty(t, chunks)
		last := chunks[len(chunks)-1]
		assert.True(t, last.Usage, "the last chunk is the usage")
		assert.Contains(t, last.Data, `"usage":{`)
		var calls int
		for _, ch := range chunks[:len(chunks)-1] {
			assert.False(t, ch.Usage)
			calls += strings.Count(ch.Data, `"tool_calls"`)
			assert.Equal(t, strings.Contains(ch.Data, `"tool_calls":[`), ch.ToolCalls, ch.Data)
		}
		assert.Positive(t, calls)
	})
}

// Azure's error object is kept on the *Error, innererror and all.
func TestErrorKeepsAzuresObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := client(t, aoai.Options{})
		_, err := c.Complete(context.Background(), req("[[sim:filter]] hi"))
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindFiltered, e.Kind)
		var obj struct {
			Innererror struct {
				Code                string          `json:"code"`
				ContentFilterResult json.RawMessage `json:"content_filter_result"`
			} `json:"innererror"`
		}
		require.NoError(t, json.Unmarshal(e.Object, &obj))
		assert.Equal(t, "ResponsibleAIPolicyViolation", obj.Innererror.Code)
		assert.NotEmpty(t, obj.Innererror.ContentFilterResult)
	})
}

// A chunk's text is what OnDelta is handed for it, in the same order.
func TestChunkTextIsTheDelta(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := client(t, aoai.Options{})
		var fromChunks, fromDeltas string
		r := req("Count to 12.")
		r.OnChunk = func(c aoai.Chunk) { fromChunks += c.Text }
		r.OnDelta = func(s string) { fromDeltas += s }
		resp, err := c.Complete(context.Background(), r)
		require.NoError(t, err)
		assert.Equal(t, resp.Content, fromChunks)
		assert.Equal(t, resp.Content, fromDeltas)
	})
}
