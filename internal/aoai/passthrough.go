package aoai

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// Passthrough is what a request in the OpenAI dialect (package
// openaiwire) sends besides the token limit: its messages as the caller
// wrote them (content parts, tool calls, tool results), and its other
// fields as Azure OpenAI takes them (temperature, tools, response_format,
// ...). The body is still this package's: the deployment, the limit under
// the name the model takes, and always a stream with its usage.
type Passthrough struct {
	// Members is a JSON object whose members are added to the body:
	// messages, in place of Request.Messages, and the caller's fields. It
	// must not name a member the body has already (model, the token
	// limits, stream, stream_options).
	Members json.RawMessage
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
	// Refusal is the refusal's text the chunk adds (OpenAI's
	// delta.refusal), and Finish its finish_reason; "" for none.
	Refusal, Finish string
	// Annotations are the rest of the chunk that the OpenAI dialect's
	// answer reads.
	Annotations Annotations
}

// Annotations are the members of a chunk that only the OpenAI dialect's
// answer reads, as Azure sent them: JSON values, nil when absent. They are
// valid only until Request.OnChunk returns: they lie in the buffer of the
// chunk's data, which the next chunk reuses.
type Annotations struct {
	ID, Created, Model, SystemFingerprint []byte
	// FilterResults are Azure's content_filter_results of the chunk's
	// choice, and PromptFilterResults those of the prompt (the stream's
	// first chunk has them).
	FilterResults, PromptFilterResults []byte
}

var errMembers = errors.New("passthrough members must be a JSON object")

// members are p's members without their object's braces, checked to be
// JSON.
func (p *Passthrough) members() ([]byte, error) {
	m := bytes.TrimSpace(p.Members)
	if len(m) < 2 || m[0] != '{' || !jsontext.Value(m).IsValid() {
		return nil, errMembers
	}
	return bytes.TrimSpace(m[1 : len(m)-1]), nil
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
