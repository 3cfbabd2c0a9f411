package openaiwire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// upstreamMessage is a message as Azure OpenAI takes it: the caller's, less
// what an answer carries that a request does not (annotations, a null
// refusal).
type upstreamMessage struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Refusal    *string    `json:"refusal,omitempty"`
}

// upstreamBody is what of the request Azure OpenAI is sent as it came:
// the messages and the fields it takes. n is not among them (only 1 is
// taken, Azure's default), nor the members the upstream client writes
// itself: model (the deployment), the token limit (bounded, under the name
// the model takes), stream and stream_options (always a stream with its
// usage). The values kept as they came (stop, response_format,
// tool_choice) are left out only when absent: one the caller sent, null
// or empty, goes on as it came, and leaving them out by their zero value
// spares the encoder writing each one to see whether it is empty.
type upstreamBody struct {
	Messages          []upstreamMessage `json:"messages"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Stop              jsontext.Value    `json:"stop,omitzero"`
	Seed              *int64            `json:"seed,omitempty"`
	PresencePenalty   *float64          `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64          `json:"frequency_penalty,omitempty"`
	ResponseFormat    jsontext.Value    `json:"response_format,omitzero"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolChoice        jsontext.Value    `json:"tool_choice,omitzero"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	User              *string           `json:"user,omitempty"`
	ReasoningEffort   *string           `json:"reasoning_effort,omitempty"`
}

// Upstream is what Azure OpenAI is sent of r (aoai.Passthrough's
// members): a JSON object of its messages and the fields Azure takes as
// they came, encoded in one pass.
func (r *ChatRequest) Upstream() ([]byte, error) {
	msgs := make([]upstreamMessage, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = upstreamMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Refusal: m.Refusal}
	}
	return json.Marshal(&upstreamBody{
		Messages:    msgs,
		Temperature: r.Temperature, TopP: r.TopP, Stop: r.Stop, Seed: r.Seed,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty,
		ResponseFormat: r.ResponseFormat, Tools: r.Tools, ToolChoice: r.ToolChoice,
		ParallelToolCalls: r.ParallelToolCalls, User: r.User, ReasoningEffort: r.ReasoningEffort,
	})
}

// Text is one message's role and text, what the prompt check counts: the
// content's text, and a tool call's name and arguments.
type Text struct {
	Role, Content string
}

// Texts are the request's messages as the prompt check counts them.
func (r *ChatRequest) Texts() []Text {
	out := make([]Text, len(r.Messages))
	for i, m := range r.Messages {
		t := m.Content.String()
		for _, c := range m.ToolCalls {
			t += c.Function.Name + c.Function.Arguments
		}
		out[i] = Text{Role: m.Role, Content: t}
	}
	return out
}
