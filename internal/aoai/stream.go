package aoai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
// Its annotations (A) are the members only the OpenAI dialect's answer
// reads: a chatChunk[skipped] skips them, as unknown members would be, and
// a chatChunk[kept] (a Passthrough request's) keeps them as Azure sent
// them, so that the dialect reads each chunk once, here (read twice, the
// OpenAI surface's whole answers miss BenchmarkDialects' bound:
// docs/operations.md, "JSON: what is written plainly, and what is read
// with care").
type chatChunk[A annotation] struct {
	Choices []chunkChoice[A] `json:"choices"`
	Usage   *Usage           `json:"usage"`
	Error   json.RawMessage  `json:"error"`

	ID                  A `json:"id"`
	Created             A `json:"created"`
	Model               A `json:"model"`
	SystemFingerprint   A `json:"system_fingerprint"`
	PromptFilterResults A `json:"prompt_filter_results"`
}

// chunkChoice is one choice of a chatChunk. Strings, not pointers: null
// reads as "", which is what both mean here, and a string costs no
// allocation of its own per token.
type chunkChoice[A annotation] struct {
	Delta struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
		// ToolCalls is only noted (Chunk.ToolCalls): the OpenAI dialect
		// passes the chunk on as it came.
		ToolCalls jsontext.Value `json:"tool_calls"`
	} `json:"delta"`
	FinishReason         string `json:"finish_reason"`
	ContentFilterResults A      `json:"content_filter_results"`
}

// An annotation is how a chatChunk reads its annotations: skipped or kept.
type annotation interface {
	skipped | kept
	// raw is the member as Azure sent it in data, the chunk's data; nil
	// when skipped or absent.
	raw(data []byte) []byte
}

// skipped is an annotation skipped.
type skipped struct{}

func (*skipped) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }
func (skipped) raw([]byte) []byte                              { return nil }

// kept is an annotation kept as where it lies in the chunk's data: its
// bytes are not copied, and a chunk of kept annotations holds no pointer
// that resetting it for the next chunk must write.
type kept struct{ start, end int }

func (k *kept) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	// The decoder reads the chunk's data from its start (Unmarshal), so
	// its offset is an index into it.
	k.end = int(dec.InputOffset())
	k.start = k.end - len(v)
	return nil
}

func (k kept) raw(data []byte) []byte {
	if k.end == 0 {
		return nil
	}
	return data[k.start:k.end]
}

// lenient reads upstream chunks with go-json-experiment/json, letting
// through what encoding/json did (duplicate names, invalid UTF-8): a chunk
// is decoded in one pass, where encoding/json validates it first, and
// decoding chunks is most of a request's CPU (with encoding/json, make
// perf's p50 latency and throughput miss their bounds: docs/operations.md,
// "JSON: what is written plainly, and what is read with care"). Names
// match exactly: Azure's are lower case, and folding would fold every
// unknown name (the content filter results) too.
var lenient = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// chatDecoder reads a Chat Completions stream.
type chatDecoder struct {
	finish  string
	usage   Usage
	onChunk func(Chunk) // Request.OnChunk

	// Reused from one event to the next, so that a token costs no
	// allocation for its bytes or its chunk. Decoded strings never alias
	// buf (the decoder copies them); a chunk's Annotations do, until the
	// next event.
	buf   []byte
	plain chatChunk[skipped] // without onChunk
	pass  chatChunk[kept]    // with onChunk: a Passthrough request's
}

func (d *chatDecoder) decode(ev sse.Event) (string, bool, error) {
	if ev.Data == "[DONE]" {
		return "", true, nil
	}
	d.buf = append(d.buf[:0], ev.Data...)
	if d.onChunk == nil {
		return readChunk(d, &d.plain, ev.Data)
	}
	return readChunk(d, &d.pass, ev.Data)
}

// readChunk decodes d.buf, the chunk data, into c, emptied first (a
// member the chunk lacks must not keep the last one's value; the decoder
// zeroes the choices it reads into), and hands it to onChunk when set.
func readChunk[A annotation](d *chatDecoder, c *chatChunk[A], data string) (string, bool, error) {
	*c = chatChunk[A]{Choices: c.Choices[:0], Error: c.Error[:0]}
	if err := jsonv2.Unmarshal(d.buf, c, lenient); err != nil {
		return "", false, fmt.Errorf("%w: chunk: %v", errBadBody, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		var eb errorBody
		_ = json.Unmarshal(d.buf, &eb)
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
		b := d.buf
		out := Chunk{Data: data, Text: text, ToolCalls: calls, Usage: c.Usage != nil && len(c.Choices) == 0, Annotations: Annotations{
			ID: c.ID.raw(b), Created: c.Created.raw(b), Model: c.Model.raw(b), SystemFingerprint: c.SystemFingerprint.raw(b),
			PromptFilterResults: c.PromptFilterResults.raw(b),
		}}
		if len(c.Choices) > 0 {
			ch := &c.Choices[0]
			out.Refusal, out.Finish, out.Annotations.FilterResults = ch.Delta.Refusal, ch.FinishReason, ch.ContentFilterResults.raw(b)
		}
		d.onChunk(out)
	}
	return text, false, nil
}

func (d *chatDecoder) result() (string, Usage, bool) {
	return d.finish, d.usage, d.finish != ""
}
