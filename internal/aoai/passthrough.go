package aoai

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/timebox-dev/timebox/internal/modelfacts"
)

// Passthrough is what a request in the OpenAI dialect (package
// openaiwire) sends besides the token limit: its messages as the caller
// wrote them (content parts, tool calls, tool results), and its other
// fields as Azure OpenAI takes them (temperature, tools, response_format,
// ...). The body is still this package's: the deployment, the limit under
// the name the model takes, and always a stream with its usage.
type Passthrough struct {
	// Messages is the JSON array sent as messages, in place of
	// Request.Messages.
	Messages json.RawMessage
	// Fields is a JSON object whose members are added to the body; empty
	// for none. It must not name a member the body has already (model,
	// messages, the token limits, stream, stream_options).
	Fields json.RawMessage
}

// Chunk is one chat.completion.chunk of the upstream stream, as Azure
// OpenAI sent it, handed to Request.OnChunk as it arrives, before its text
// goes to Request.OnDelta.
type Chunk struct {
	// Data is the event's data: one JSON object.
	Data string
	// Text is the answer's text the chunk adds (what OnDelta is handed
	// next); empty for most chunks of a tool call.
	Text string
	// ToolCalls is true for a chunk that carries a piece of a tool call.
	ToolCalls bool
	// Usage is true for the chunk that carries only the usage, the last
	// before [DONE]: this package always asks for it.
	Usage bool
}

// passthroughBody is chatBody with the caller's messages as they came.
type passthroughBody struct {
	Model               string          `json:"model,omitempty"`
	Messages            json.RawMessage `json:"messages"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

var errFields = errors.New("passthrough fields must be a JSON object")

// bodyWith is the body of a request with p: the body's own members, then
// p's fields.
func (c *Client) bodyWith(req *Request, p *Passthrough) ([]byte, error) {
	b := passthroughBody{Messages: p.Messages, Stream: true}
	b.StreamOptions.IncludeUsage = true
	if c.v1 {
		b.Model = c.deployment
	}
	if c.tokenField == modelfacts.MaxCompletionTokens {
		b.MaxCompletionTokens = &req.MaxTokens
	} else {
		b.MaxTokens = &req.MaxTokens
	}
	out, err := json.Marshal(&b)
	if err != nil {
		return nil, err
	}
	f := bytes.TrimSpace(p.Fields)
	if len(f) == 0 {
		return out, nil
	}
	if f[0] != '{' || f[len(f)-1] != '}' || !json.Valid(f) {
		return nil, errFields
	}
	if inner := bytes.TrimSpace(f[1 : len(f)-1]); len(inner) > 0 {
		out = append(append(append(out[:len(out)-1], ','), inner...), '}')
	}
	return out, nil
}

// errorObject is the error object of an error answer's body ({"error":
// {...}}'s value), as Azure OpenAI sent it; nil when it sent none.
func errorObject(body []byte) json.RawMessage {
	var eb struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &eb) != nil || len(eb.Error) == 0 || eb.Error[0] != '{' {
		return nil
	}
	return eb.Error
}
