package openaiwire

import (
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

// chunk is the part of a chat.completion.chunk an Assembler reads.
type chunk struct {
	ID                  string         `json:"id"`
	Created             int64          `json:"created"`
	Model               string         `json:"model"`
	SystemFingerprint   *string        `json:"system_fingerprint"`
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
	content bool // any content delta, even empty ""
	refused bool
	calls   []ToolCall
	finish  string
	filter  jsontext.Value
	ch      chunk // reused from one chunk to the next
	// last is the last chunk added by its text alone (AddText), decoded
	// only for its content filter results when the answer is complete.
	last string
}

// AddText adds a chunk whose only part of the answer is text, already
// read from it (package aoai's Chunk.Text): most chunks of a text answer.
// It is Add without decoding the chunk again: of a run of such chunks only
// the last one's content filter results are kept, and it is decoded once,
// by Completion. The first chunks of the stream (its id and model), and
// one with no text (a refusal, the finish, the usage) go to Add; a chunk
// that carries a tool call must be given to Add.
func (a *Assembler) AddText(data, text string) {
	if a.c.ID == "" || text == "" {
		a.Add(data)
		return
	}
	a.content = true
	a.text.WriteString(text)
	a.last = data
}

// Add reads one chunk (an event's data, "[DONE]" excluded). A chunk that
// cannot be read is skipped: package aoai has read the same chunk and
// fails the stream if it was broken.
func (a *Assembler) Add(data string) {
	if a.last != "" {
		a.filterOf(a.last)
	}
	a.ch = chunk{Choices: a.ch.Choices[:0]}
	if err := json.Unmarshal([]byte(data), &a.ch, lenient); err != nil {
		return
	}
	c := &a.ch
	if a.c.ID == "" && c.ID != "" {
		a.c.ID, a.c.Created, a.c.Model, a.c.SystemFingerprint = c.ID, c.Created, c.Model, c.SystemFingerprint
	}
	if len(c.PromptFilterResults) > 0 && c.PromptFilterResults.Kind() != 'n' {
		a.c.PromptFilterResults = append(jsontext.Value(nil), c.PromptFilterResults...)
	}
	if c.Usage != nil {
		u := *c.Usage
		a.c.Usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for (n = 1)
		}
		if d := ch.Delta.Content; d != nil {
			a.content = true
			a.text.WriteString(*d)
		}
		if d := ch.Delta.Refusal; d != nil {
			a.refused = true
			a.refusal.WriteString(*d)
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
		if k := ch.ContentFilterResults.Kind(); k == '{' && len(ch.ContentFilterResults) > 2 {
			a.filter = append(a.filter[:0], ch.ContentFilterResults...)
		}
	}
}

// filterOf keeps the content filter results of a chunk added by its text.
func (a *Assembler) filterOf(data string) {
	a.last = ""
	var c struct {
		Choices []struct {
			Index                int            `json:"index"`
			ContentFilterResults jsontext.Value `json:"content_filter_results"`
		} `json:"choices"`
	}
	if json.Unmarshal([]byte(data), &c, lenient) != nil {
		return
	}
	for _, ch := range c.Choices {
		if ch.Index == 0 && ch.ContentFilterResults.Kind() == '{' && len(ch.ContentFilterResults) > 2 {
			a.filter = append(a.filter[:0], ch.ContentFilterResults...)
		}
	}
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
	if a.last != "" {
		a.filterOf(a.last)
	}
	c := a.c
	c.Object = "chat.completion"
	if c.Model == "" {
		c.Model = model
	}
	if c.Created == 0 {
		c.Created = time.Now().Unix()
	}
	m := AnswerMessage{Role: "assistant", ToolCalls: a.calls}
	if a.content || len(a.calls) == 0 {
		s := a.text.String()
		m.Content = &s
	}
	if a.refused {
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
