package aoai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/tmaxmax/go-sse"
)

// maxEventBytes bounds one upstream event. Azure's chat chunks are a few
// hundred bytes; their content-filter annotations make the largest ones.
const maxEventBytes = 1 << 20

// errNoEnd is the cause of a stream that stopped before its end: the
// connection closed, or the body ended, without a finish reason.
var errNoEnd = errors.New("stream ended before the answer did")

// errTooLong is the cause of a stream longer than maxResponseBytes.
var errTooLong = errors.New("stream longer than the limit")

// decoder turns the events of one upstream stream into answer text. Chat
// Completions (chatDecoder) sends unnamed events and ends with "[DONE]";
// the Responses API names every event (response.output_text.delta,
// response.completed, error), which sse.Event.Type carries, so a decoder
// for it fits here beside chatDecoder and the reading loop stays the same.
type decoder interface {
	// decode reads one event: the text it adds to the answer (possibly
	// empty), and whether it was the stream's last.
	decode(ev sse.Event) (text string, last bool, err error)
	// result is the finished answer; ok is false when the stream had not
	// reached its end (no finish reason).
	result() (finish string, usage Usage, ok bool)
}

// readStream reads an upstream stream with dec, handing each piece of text
// to onDelta (when set) as it arrives. It returns the text so far with any
// failure: a read error (the connection broke, or ctx ended), an event that
// could not be read, or the end of the body before the end of the answer.
func readStream(body io.Reader, dec decoder, onDelta func(string)) (string, error) {
	var text strings.Builder
	for ev, err := range sse.Read(&limited{r: body, n: maxResponseBytes}, &sse.ReadConfig{MaxEventSize: maxEventBytes}) {
		if err != nil {
			return text.String(), fmt.Errorf("read stream: %w", err)
		}
		piece, last, err := dec.decode(ev)
		if err != nil {
			return text.String(), err
		}
		if piece != "" {
			text.WriteString(piece)
			if onDelta != nil {
				onDelta(piece)
			}
		}
		if last {
			break
		}
	}
	if _, _, ok := dec.result(); !ok {
		return text.String(), errNoEnd
	}
	return text.String(), nil
}

// limited is io.LimitReader with its own error: a stream past the limit is
// a failure, not a quiet end.
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// chatChunk is the part of Azure OpenAI's chat.completion.chunk that
// timebox reads. Azure sends chunks with an empty choices array: the first
// one carries prompt_filter_results, and with stream_options.include_usage
// the last one before [DONE] carries usage (every other chunk then has
// "usage": null). A server failure mid-stream arrives as {"error": {...}}.
type chatChunk struct {
	Choices []chunkChoice   `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`

	ID                  annotation `json:"id"`
	Created             annotation `json:"created"`
	Model               annotation `json:"model"`
	SystemFingerprint   annotation `json:"system_fingerprint"`
	PromptFilterResults annotation `json:"prompt_filter_results"`
}

// chunkChoice is one choice of a chatChunk. Strings, not pointers: null
// reads as "", which is what both mean here, and a string costs no
// allocation of its own per token.
type chunkChoice struct {
	Delta struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
		// ToolCalls is only noted (Chunk.ToolCalls): the OpenAI dialect
		// passes the chunk on as it came.
		ToolCalls jsontext.Value `json:"tool_calls"`
	} `json:"delta"`
	FinishReason         string     `json:"finish_reason"`
	ContentFilterResults annotation `json:"content_filter_results"`
}

// annotation is a member of a chunk that only the OpenAI dialect's answer
// reads (Annotations): the chunk's id, model and the like, and Azure's
// content filter results. It is skipped, as an unknown member would be, unless the chunk
// is read with keepAnnotations (a Passthrough request's), which keeps it
// as Azure sent it: the dialect then reads each chunk once, here.
type annotation []byte

func (*annotation) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }

// keepAnnotations reads a chunk as lenient does, keeping its annotations
// in the buffers of the chunk read before (merging into it, which
// chatDecoder.decode empties first), so that no chunk costs them an
// allocation.
var keepAnnotations = jsonv2.JoinOptions(lenient, jsonv1.MergeWithLegacySemantics(true),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, a *annotation) error {
		v, err := dec.ReadValue()
		*a = append((*a)[:0], v...)
		return err
	})))

// lenient reads upstream chunks with go-json-experiment/json, letting
// through what encoding/json did (duplicate names, invalid UTF-8): a chunk
// is decoded in one pass, where encoding/json validates it first, and
// decoding chunks is most of a request's CPU. Names match exactly: Azure's
// are lower case, and folding would fold every unknown name (the content
// filter results) too.
var lenient = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// chatDecoder reads a Chat Completions stream.
type chatDecoder struct {
	finish  string
	usage   Usage
	onChunk func(Chunk) // Request.OnChunk

	// Reused from one event to the next, so that a token costs no
	// allocation for its bytes or its chunk. Decoded strings never alias
	// buf (the decoder copies them).
	buf   []byte
	chunk chatChunk
}

func (d *chatDecoder) decode(ev sse.Event) (string, bool, error) {
	if ev.Data == "[DONE]" {
		return "", true, nil
	}
	d.buf = append(d.buf[:0], ev.Data...)
	for i, ch := range d.chunk.Choices[:cap(d.chunk.Choices)] {
		d.chunk.Choices[:cap(d.chunk.Choices)][i] = chunkChoice{ContentFilterResults: ch.ContentFilterResults[:0]}
	}
	d.chunk = chatChunk{Choices: d.chunk.Choices[:0], Error: d.chunk.Error[:0],
		ID: d.chunk.ID[:0], Created: d.chunk.Created[:0], Model: d.chunk.Model[:0], SystemFingerprint: d.chunk.SystemFingerprint[:0],
		PromptFilterResults: d.chunk.PromptFilterResults[:0]}
	c := &d.chunk
	opts := lenient
	if d.onChunk != nil {
		opts = keepAnnotations
	}
	if err := jsonv2.Unmarshal(d.buf, c, opts); err != nil {
		return "", false, fmt.Errorf("%w: chunk: %v", errBadBody, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		var eb errorBody
		_ = json.Unmarshal([]byte(ev.Data), &eb)
		return "", false, fmt.Errorf("upstream error event (code %q)", eb.code())
	}
	if c.Usage != nil {
		d.usage = *c.Usage
	}
	var text string
	calls := false
	for _, ch := range c.Choices {
		// One choice is asked for (n defaults to 1); index 0 is the answer.
		text += ch.Delta.Content
		calls = calls || len(ch.Delta.ToolCalls) > 0
		if ch.FinishReason != "" {
			d.finish = ch.FinishReason
		}
	}
	if d.onChunk != nil {
		out := Chunk{Data: ev.Data, Text: text, ToolCalls: calls, Usage: c.Usage != nil && len(c.Choices) == 0, Annotations: Annotations{
			ID: orNil(c.ID), Created: orNil(c.Created), Model: orNil(c.Model), SystemFingerprint: orNil(c.SystemFingerprint),
			PromptFilterResults: orNil(c.PromptFilterResults),
		}}
		if len(c.Choices) > 0 {
			ch := &c.Choices[0]
			out.Refusal, out.Finish, out.Annotations.FilterResults = ch.Delta.Refusal, ch.FinishReason, orNil(ch.ContentFilterResults)
		}
		d.onChunk(out)
	}
	return text, false, nil
}

// orNil is a, nil when the chunk had no such member.
func orNil(a annotation) []byte {
	if len(a) == 0 {
		return nil
	}
	return a
}

func (d *chatDecoder) result() (string, Usage, bool) {
	return d.finish, d.usage, d.finish != ""
}
