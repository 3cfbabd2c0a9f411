package openaiwire

import (
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Completion is a chat.completion: the answer of a request that does not
// stream, assembled from the chunks Azure OpenAI streamed (timebox always
// streams upstream, so that the text so far survives a failure).
type Completion struct {
	ID                  string         `json:"id"`
	Object              string         `json:"object"` // "chat.completion"
	Created             int64          `json:"created"`
	Model               string         `json:"model"`
	SystemFingerprint   *string        `json:"system_fingerprint,omitempty"`
	Choices             []Choice       `json:"choices"`
	Usage               *Usage         `json:"usage,omitempty"`
	PromptFilterResults jsontext.Value `json:"prompt_filter_results,omitempty"`
}

// Choice is the completion's one choice.
type Choice struct {
	Index        int            `json:"index"`
	Message      AnswerMessage  `json:"message"`
	FinishReason string         `json:"finish_reason"`
	Logprobs     jsontext.Value `json:"logprobs"`
	// ContentFilterResults are Azure OpenAI's for the answer: those of its
	// last chunk that had any.
	ContentFilterResults jsontext.Value `json:"content_filter_results,omitempty"`
}

// AnswerMessage is the assistant's message: its text (null when it only
// called tools), its refusal, and its tool calls.
type AnswerMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage is the token accounting of an answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// chunk is the part of a chat.completion.chunk an Assembler reads; its
// annotations as Azure sent them, as package aoai hands them on.
type chunk struct {
	ID                  jsontext.Value `json:"id"`
	Created             jsontext.Value `json:"created"`
	Model               jsontext.Value `json:"model"`
	SystemFingerprint   jsontext.Value `json:"system_fingerprint"`
	PromptFilterResults jsontext.Value `json:"prompt_filter_results"`
	Choices             []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string         `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason         *string        `json:"finish_reason"`
		ContentFilterResults jsontext.Value `json:"content_filter_results"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

// toolCallDelta is a piece of a streamed tool call: the first piece of a
// call (by Index) has its id, type and name, the later ones more of its
// arguments.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// lenient reads Azure OpenAI's chunks as package aoai does: duplicate names
// and invalid UTF-8 let through, unknown names skipped.
var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// Assembler builds a Completion from the chunks of one upstream stream.
// The zero value is ready; it is not safe for concurrent use.
type Assembler struct {
	c       Completion
	text    strings.Builder
	refusal strings.Builder
	calls   []ToolCall
	finish  string
	filter  jsontext.Value
	ch      chunk  // reused from one chunk to the next
	buf     []byte // a chunk's data, reused
}

// Read is what package aoai read of a chunk as it streamed it
// (aoai.Chunk): the answer's text, refusal and finish reason the chunk
// adds, and its annotations.
type Read struct {
	Text, Refusal, Finish string
	Annotations           Annotations
}

// Annotations are the members of a chunk the answer takes as Azure sent
// them (aoai.Annotations): JSON values, nil when absent.
type Annotations struct {
	ID, Created, Model, SystemFingerprint []byte
	// FilterResults are the content_filter_results of the chunk's choice,
	// PromptFilterResults those of the prompt.
	FilterResults, PromptFilterResults []byte
}

// AddRead adds a chunk by what package aoai read of it. A chunk that
// carries a tool call must go to Add; the usage chunk to SetUsage.
func (a *Assembler) AddRead(r *Read) {
	n := &r.Annotations
	if a.c.ID == "" && len(n.ID) > 0 {
		a.head(n)
	}
	if p := jsontext.Value(n.PromptFilterResults); len(p) > 0 && p.Kind() != 'n' {
		a.c.PromptFilterResults = append(jsontext.Value(nil), p...)
	}
	a.text.WriteString(r.Text)
	a.refusal.WriteString(r.Refusal)
	if r.Finish != "" {
		a.finish = r.Finish
	}
	if f := jsontext.Value(n.FilterResults); f.Kind() == '{' && len(f) > 2 {
		a.filter = append(a.filter[:0], f...)
	}
}

// head takes the completion's id, created, model and system fingerprint
// from a chunk that has an id (Azure's first chunk, of the prompt's
// filter results, has ""). Package aoai has read each value as JSON, so
// each is only looked at, not decoded again.
func (a *Assembler) head(n *Annotations) {
	id, ok := unquote(n.ID)
	if !ok || id == "" {
		return
	}
	a.c.ID = id
	if model, ok := unquote(n.Model); ok {
		a.c.Model = model
	}
	if created, err := strconv.ParseInt(string(n.Created), 10, 64); err == nil {
		a.c.Created = created
	}
	if fp, ok := unquote(n.SystemFingerprint); ok {
		a.c.SystemFingerprint = &fp
	}
}

// unquote is the string a JSON value read by package aoai holds; ok is
// false for any other kind. Invalid UTF-8, which aoai lets through, comes
// out as U+FFFD, as decoding it would.
func unquote(v jsontext.Value) (s string, ok bool) {
	if v.Kind() != '"' {
		return "", false
	}
	var buf [64]byte // Azure's ids, model names and fingerprints fit
	u, _ := jsontext.AppendUnquote(buf[:0], v)
	return string(u), true
}

// SetUsage sets the completion's usage: Azure's count, which package aoai
// read from the stream's usage chunk.
func (a *Assembler) SetUsage(u Usage) { a.c.Usage = &u }

// Add reads one chunk (an event's data, "[DONE]" excluded) and adds it
// as AddRead does, with its tool calls and usage. A chunk that cannot be
// read is skipped: package aoai has read the same chunk and fails the
// stream if it was broken.
func (a *Assembler) Add(data string) {
	a.ch = chunk{Choices: a.ch.Choices[:0]}
	a.buf = append(a.buf[:0], data...)
	if err := json.Unmarshal(a.buf, &a.ch, lenient); err != nil {
		return
	}
	c := &a.ch
	r := Read{Annotations: Annotations{ID: c.ID, Created: c.Created, Model: c.Model, SystemFingerprint: c.SystemFingerprint,
		PromptFilterResults: c.PromptFilterResults}}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for (n = 1)
		}
		d := &ch.Delta
		r.Text, r.Refusal, r.Finish = deref(d.Content), deref(d.Refusal), deref(ch.FinishReason)
		r.Annotations.FilterResults = ch.ContentFilterResults
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
	}
	a.AddRead(&r)
	if c.Usage != nil {
		a.SetUsage(*c.Usage)
	}
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// addCall adds a piece of a tool call: a new call at a new index, more
// arguments at a known one.
func (a *Assembler) addCall(d toolCallDelta) {
	if d.Index < 0 || d.Index > MaxTools {
		return
	}
	for len(a.calls) <= d.Index {
		a.calls = append(a.calls, ToolCall{Type: "function"})
	}
	c := &a.calls[d.Index]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Type != "" {
		c.Type = d.Type
	}
	c.Function.Name += d.Function.Name
	c.Function.Arguments += d.Function.Arguments
}

// Completion is the answer the chunks made, with model as its model when
// the chunks named none.
func (a *Assembler) Completion(model string) Completion {
	c := a.c
	c.Object = "chat.completion"
	if c.Model == "" {
		c.Model = model
	}
	if c.Created == 0 {
		c.Created = time.Now().Unix()
	}
	// An answer with no text has content "" when it calls no tool, null
	// when it does; a refusal is null unless there is one.
	m := AnswerMessage{Role: "assistant", ToolCalls: a.calls}
	if a.text.Len() > 0 || len(a.calls) == 0 {
		s := a.text.String()
		m.Content = &s
	}
	if a.refusal.Len() > 0 {
		s := a.refusal.String()
		m.Refusal = &s
	}
	c.Choices = []Choice{{Message: m, FinishReason: a.finish, Logprobs: jsontext.Value("null"), ContentFilterResults: a.filter}}
	return c
}

// Model is one entry of GET /openai/v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the body of GET /openai/v1/models: the deployment this
// service serves, under its deployment name and its model's.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// Models lists names as models owned by ownedBy.
func Models(ownedBy string, names ...string) ModelList {
	l := ModelList{Object: "list", Data: []Model{}}
	for _, n := range names {
		l.Data = append(l.Data, Model{ID: n, Object: "model", OwnedBy: ownedBy})
	}
	return l
}
