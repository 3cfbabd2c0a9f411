// Package openaiwire is the OpenAI dialect of timebox's chat API: the wire of
// OpenAI's Chat Completions as the official SDKs speak it (openai-node,
// openai-python, openai-go, OpenAI .NET), read and written here so that the
// server's one pipeline (caller, budget, admission, prompt check, upstream
// call) is the same under both dialects. It decodes a request against the
// fields OpenAI's SDKs send and chat apps use, refusing any other with
// OpenAI's own 400 naming it; it says what is sent to Azure OpenAI; and it
// writes answers in OpenAI's shapes: a chat.completion, chat.completion.chunk
// frames as data-only server-sent events ending in "data: [DONE]", and the
// error object {"error": {"message", "type", "param", "code"}}.
package openaiwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/timebox-dev/timebox/internal/apiwire"
)

// Limits of a request, beyond the body's size (the server's).
const (
	MaxMessages     = 256
	MaxMessageChars = 1 << 20 // a message's text, all its parts together
	MaxTools        = 128     // OpenAI's own limit
	MaxStops        = 4       // OpenAI's own limit
)

// ChatRequest is the body of POST /openai/v1/chat/completions and of
// POST /openai/deployments/{deployment}/chat/completions. A field absent
// from it is refused (DecodeChat); the free-form ones (a tool's
// parameters, response_format's schema, tool_choice, stop) are kept as
// they came, checked only to be JSON of the right kind, and sent on to
// Azure OpenAI as they are.
type ChatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	// MaxTokens and MaxCompletionTokens are the same limit under two names
	// (max_tokens is deprecated for max_completion_tokens); the latter wins
	// when both are sent. The server bounds either by its MAX_TOKENS.
	MaxTokens           *int           `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	Stop                jsontext.Value `json:"stop,omitempty"` // a string, an array of strings, or null
	Seed                *int64         `json:"seed,omitempty"`
	N                   *int           `json:"n,omitempty"` // 1 only: one answer per request
	PresencePenalty     *float64       `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64       `json:"frequency_penalty,omitempty"`
	ResponseFormat      jsontext.Value `json:"response_format,omitempty"` // an object
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          jsontext.Value `json:"tool_choice,omitempty"` // "none", "auto", "required" or an object
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	User                *string        `json:"user,omitempty"`
	Stream              *bool          `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	ReasoningEffort     *string        `json:"reasoning_effort,omitempty"`
}

// StreamOptions asks for the usage chunk before [DONE].
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of the conversation: system or developer (the
// instructions), user, assistant (with its tool calls, its content then
// possibly null) or tool (a tool's result, for ToolCallID).
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Name    string  `json:"name,omitempty"`
	// ToolCalls are an assistant message's calls, as the answer gave them.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Refusal is an assistant message's refusal, as the answer gave it
	// (the SDKs send an answer's message back as it came).
	Refusal *string `json:"refusal,omitempty"`
	// Annotations of an assistant message as the answer gave them; read,
	// and not sent on.
	Annotations jsontext.Value `json:"annotations,omitempty"`
}

// Content is a message's content: a string, null, or an array of parts.
type Content struct {
	// Text is the string form; Parts is nil for it.
	Text string
	// Parts is the array form.
	Parts []Part
	// Null is true for null (an assistant message with tool calls only).
	Null bool
}

// Part is one content part: {"type": "text", "text"} or {"type":
// "image_url", "image_url": {"url", "detail"}}.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image part's image: an https URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// Tool is one tool the model may call.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function is a tool's function: its name, what it does, and its
// parameters' JSON Schema, sent on as it came.
type Function struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  jsontext.Value `json:"parameters,omitempty"`
	Strict      *bool          `json:"strict,omitempty"`
}

// ToolCall is one call of a tool, in an assistant message.
type ToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"` // "function"
	Function CallArgs `json:"function"`
}

// CallArgs is the function a call names and its arguments, a JSON text.
type CallArgs struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MarshalJSONTo writes the content as it came: a string, null or parts.
func (c Content) MarshalJSONTo(enc *jsontext.Encoder) error {
	switch {
	case c.Null:
		return enc.WriteToken(jsontext.Null)
	case c.Parts != nil:
		return json.MarshalEncode(enc, c.Parts)
	}
	return enc.WriteToken(jsontext.String(c.Text))
}

// UnmarshalJSONFrom reads a string, null, or an array of parts (strictly:
// a part's unknown field is refused like any other).
func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		*c = Content{Null: true}
		_, err := dec.ReadToken()
		return err
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*c = Content{Text: tok.String()}
		return nil
	case '[':
		var parts []Part
		if err := json.UnmarshalDecode(dec, &parts); err != nil {
			return err
		}
		*c = Content{Parts: parts}
		if c.Parts == nil {
			c.Parts = []Part{}
		}
		return nil
	}
	return errContentKind
}

var errContentKind = errors.New("content must be a string, an array of content parts, or null")

// String is the content's text: the string, or its text parts joined.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// IsStream reports whether the caller asked for a stream.
func (r *ChatRequest) IsStream() bool { return r.Stream != nil && *r.Stream }

// IncludeUsage reports whether the caller asked for the usage chunk.
func (r *ChatRequest) IncludeUsage() bool {
	return r.IsStream() && r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// Limit is the completion limit the caller asked for (max_completion_tokens,
// else max_tokens), or 0 when it asked for none.
func (r *ChatRequest) Limit() int {
	switch {
	case r.MaxCompletionTokens != nil:
		return *r.MaxCompletionTokens
	case r.MaxTokens != nil:
		return *r.MaxTokens
	}
	return 0
}

// DecodeChat decodes and checks a chat request body. Its errors are
// *Error, 400 invalid_request_error: an unknown field is
// "unknown_parameter" naming it (param), as OpenAI answers one; a value
// of the wrong kind or out of range is "invalid_request" naming it.
func DecodeChat(body []byte) (ChatRequest, error) {
	var req ChatRequest
	if !utf8.Valid(body) {
		return req, Invalid("", "The request body is not valid UTF-8.")
	}
	err := json.Unmarshal(body, &req, strict)
	if err != nil {
		return req, decodeError(body, err)
	}
	return req, req.validate()
}

// strict reads a request as OpenAI does: an unknown or repeated member is
// refused.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(false))

// decodeError turns a decoding failure into OpenAI's 400 for it.
func decodeError(body []byte, err error) *Error {
	var (
		se  *json.SemanticError
		syn *jsontext.SyntacticError
	)
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		p := Param(syn.JSONPointer)
		return Invalid(p, fmt.Sprintf("The parameter '%s' appears twice.", p))
	case errors.As(err, &se) && errors.Is(se.Err, json.ErrUnknownName):
		p := Param(se.JSONPointer)
		return &Error{Status: 400, Type: TypeInvalidRequest, Param: p, Code: apiwire.CodeUnknownParameter,
			Message: fmt.Sprintf("Unknown parameter: '%s'.", p)}
	case errors.As(err, &se) && se.JSONPointer != "":
		p := Param(se.JSONPointer)
		if errors.Is(se.Err, errContentKind) {
			return Invalid(p, fmt.Sprintf("Invalid type for '%s': %v.", p, errContentKind))
		}
		return Invalid(p, fmt.Sprintf("Invalid type for '%s'.", p))
	case errors.As(err, &se) && se.JSONKind != 0:
		return Invalid("", "The request body must be a JSON object.")
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		if jsontext.NewDecoder(bytes.NewReader(body)).SkipValue() == nil {
			return Invalid("", "The request body must hold exactly one JSON object.")
		}
	}
	return Invalid("", "We could not parse the JSON body of your request.")
}

// Param names a location in the body as OpenAI's errors do:
// "messages[0].content[1].type".
func Param(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func (r *ChatRequest) validate() error {
	if len(r.Messages) == 0 {
		return Invalid("messages", "'messages' must hold at least one message.")
	}
	if len(r.Messages) > MaxMessages {
		return Invalid("messages", fmt.Sprintf("'messages' may hold at most %d messages.", MaxMessages))
	}
	for i, m := range r.Messages {
		if err := m.validate(i); err != nil {
			return err
		}
	}
	for _, f := range [...]struct {
		name string
		v    *int
	}{{"max_tokens", r.MaxTokens}, {"max_completion_tokens", r.MaxCompletionTokens}} {
		if name, v := f.name, f.v; v != nil && *v < 1 {
			return Invalid(name, fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", name, *v))
		}
	}
	if r.N != nil && *r.N != 1 {
		return Invalid("n", "Invalid 'n': this service gives one choice per request; send n = 1 or leave it out.")
	}
	if err := r.validateRanges(); err != nil {
		return err
	}
	if err := validateStop(r.Stop); err != nil {
		return err
	}
	if len(r.ResponseFormat) > 0 && r.ResponseFormat.Kind() != '{' {
		return Invalid("response_format", "Invalid type for 'response_format': expected an object.")
	}
	if len(r.Tools) > MaxTools {
		return Invalid("tools", fmt.Sprintf("'tools' may hold at most %d tools.", MaxTools))
	}
	for i, t := range r.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return Invalid(p+".type", fmt.Sprintf("Invalid value for '%s.type': only 'function' is supported.", p))
		case t.Function.Name == "" || len(t.Function.Name) > 64:
			return Invalid(p+".function.name", fmt.Sprintf("'%s.function.name' must be 1 to 64 characters.", p))
		case len(t.Function.Parameters) > 0 && t.Function.Parameters.Kind() != '{':
			return Invalid(p+".function.parameters", fmt.Sprintf("Invalid type for '%s.function.parameters': expected an object.", p))
		}
	}
	switch k := r.ToolChoice.Kind(); {
	case len(r.ToolChoice) == 0, k == '{':
	case k == '"':
		var s string
		_ = json.Unmarshal(r.ToolChoice, &s)
		if s != "none" && s != "auto" && s != "required" {
			return Invalid("tool_choice", "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or an object.")
		}
	default:
		return Invalid("tool_choice", "Invalid type for 'tool_choice': expected a string or an object.")
	}
	if r.StreamOptions != nil && !r.IsStream() {
		return Invalid("stream_options", "Invalid value for 'stream_options': only allowed when 'stream' is true.")
	}
	if r.ReasoningEffort != nil {
		switch *r.ReasoningEffort {
		case "none", "minimal", "low", "medium", "high", "xhigh":
		default:
			return Invalid("reasoning_effort", "Invalid value for 'reasoning_effort': expected 'minimal', 'low', 'medium' or 'high'.")
		}
	}
	return nil
}

// validateRanges checks the sampling numbers against OpenAI's ranges.
func (r *ChatRequest) validateRanges() error {
	for _, f := range []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"temperature", r.Temperature, 0, 2},
		{"top_p", r.TopP, 0, 1},
		{"presence_penalty", r.PresencePenalty, -2, 2},
		{"frequency_penalty", r.FrequencyPenalty, -2, 2},
	} {
		if f.v != nil && (*f.v < f.min || *f.v > f.max) {
			return Invalid(f.name, fmt.Sprintf("Invalid '%s': expected a number from %g to %g.", f.name, f.min, f.max))
		}
	}
	return nil
}

// validateStop checks stop: null, a string, or up to MaxStops strings.
func validateStop(v jsontext.Value) error {
	switch v.Kind() {
	case 0, 'n', '"':
		return nil
	case '[':
		var stops []string
		if err := json.Unmarshal(v, &stops); err != nil {
			return Invalid("stop", "Invalid type for 'stop': expected a string or an array of strings.")
		}
		if len(stops) > MaxStops {
			return Invalid("stop", fmt.Sprintf("Invalid 'stop': at most %d sequences.", MaxStops))
		}
		return nil
	}
	return Invalid("stop", "Invalid type for 'stop': expected a string or an array of strings.")
}

func (m Message) validate(i int) error {
	p := fmt.Sprintf("messages[%d]", i)
	switch m.Role {
	case "system", "developer", "user", "assistant", "tool":
	default:
		return Invalid(p+".role", fmt.Sprintf("Invalid value for '%s.role': expected 'system', 'developer', 'user', 'assistant' or 'tool'.", p))
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return Invalid(p+".tool_calls", fmt.Sprintf("'%s.tool_calls' is only allowed on an assistant message.", p))
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return Invalid(p+".tool_call_id", fmt.Sprintf("Missing required parameter: '%s.tool_call_id'.", p))
	}
	if m.Role != "tool" && m.ToolCallID != "" {
		return Invalid(p+".tool_call_id", fmt.Sprintf("'%s.tool_call_id' is only allowed on a tool message.", p))
	}
	if m.Content.Null && (m.Role != "assistant" || len(m.ToolCalls) == 0) {
		return Invalid(p+".content", fmt.Sprintf("Invalid value for '%s.content': only an assistant message with tool calls may have null content.", p))
	}
	for j, part := range m.Content.Parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		switch {
		case part.Type == "text" && part.ImageURL == nil:
		case part.Type == "image_url" && part.ImageURL != nil && part.Text == "" && m.Role == "user":
		default:
			return Invalid(pp+".type", fmt.Sprintf("Invalid content part '%s': expected {\"type\": \"text\", \"text\"}, or on a user message {\"type\": \"image_url\", \"image_url\"}.", pp))
		}
	}
	for j, c := range m.ToolCalls {
		if c.Type != "function" || c.ID == "" || c.Function.Name == "" {
			pp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
			return Invalid(pp, fmt.Sprintf("Invalid '%s': a call needs an id, type 'function' and a function name.", pp))
		}
	}
	if utf8.RuneCountInString(m.Content.String()) > MaxMessageChars {
		return Invalid(p+".content", fmt.Sprintf("'%s.content' is longer than %d characters.", p, MaxMessageChars))
	}
	return nil
}
