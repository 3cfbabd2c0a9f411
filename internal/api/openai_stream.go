package api

import (
	"context"
	"encoding/json"

	"github.com/tmaxmax/go-sse"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// openAIAnswer writes the OpenAI surface's answers. Whole, a
// chat.completion assembled from Azure OpenAI's chunks. Streamed, Azure
// OpenAI's chunks passed on as they came (tool-call deltas and content
// filter results included), as data-only server-sent events, the usage
// chunk only when the caller asked for it, then data: [DONE]. A silence is
// broken by ": keep-alive" comments (timebox's one SSE writer,
// eventStream). Until a chunk carries text or a tool call, the chunks are
// held back: a failure before then is the ordinary JSON error with its
// status and x-should-retry, as an attempt that failed before its first
// token is, and the SDK judges it by them. After it, a failure (the
// deadline, a cut upstream, the content filter stopping the answer) is one
// data: {"error": ...} frame, and the stream ends there, without [DONE]:
// the SDKs raise it as an error.
type openAIAnswer struct {
	deployment   string // the completion's model when the chunks name none
	includeUsage bool   // stream_options.include_usage

	answer openaiwire.Assembler // whole

	// Streamed: the chunks' data before the first that carries an answer,
	// and the last two chunks' but the usage (the content filter's verdict
	// is on the one that tripped it, the last or the one before the
	// finish).
	held       []string
	last, prev string
}

func (a *openAIAnswer) whole(req *aoai.Request) {
	req.OnChunk = func(c aoai.Chunk) {
		switch {
		case c.Usage: // the response's (body)
		case c.ToolCalls:
			a.answer.Add(c.Data)
		default:
			a.answer.AddRead(&openaiwire.Read{Text: c.Text, Refusal: c.Refusal, Finish: c.Finish, Annotations: openaiwire.Annotations(c.Annotations)})
		}
	}
}

func (a *openAIAnswer) body(_ context.Context, resp *aoai.Response) []byte {
	if u := resp.Usage; u != (aoai.Usage{}) {
		a.answer.SetUsage(openaiwire.Usage(u))
	}
	return marshal(a.answer.Completion(a.deployment))
}

func (a *openAIAnswer) streamed(ctx context.Context, req *aoai.Request, es *eventStream) {
	t := &billOf(ctx).tally
	a.held = []string{}
	// A chunk's text goes to the tally (OnDelta) after the chunk (OnChunk):
	// a chunk the caller did not take marks it, and every later one, undelivered.
	send := func(data string) {
		if !es.chunk(data) {
			t.undelivered()
		}
	}
	req.OnChunk = func(c aoai.Chunk) {
		if !c.Usage {
			a.last, a.prev = c.Data, a.last
		}
		switch {
		case c.Usage && !a.includeUsage:
		case a.held != nil && c.Text == "" && !c.ToolCalls && !c.Usage:
			a.held = append(a.held, c.Data)
		default:
			for _, h := range a.held {
				send(h)
			}
			a.held = nil
			send(c.Data)
		}
	}
}

func (a *openAIAnswer) done(_ context.Context, es *eventStream, _ *aoai.Response) {
	for _, h := range a.held {
		es.chunk(h)
	}
	es.frame(openaiwire.Done)
}

func (a *openAIAnswer) failed(_ context.Context, es *eventStream, row errorRow, err error) {
	if err == errAnswerFiltered {
		row.inner = json.RawMessage(openaiwire.FilterVerdict(a.last, a.prev))
	}
	es.data(openAIDialect{}.errorBody(row, "", nil))
}

func (*openAIAnswer) refused(err error) error { return rejected(err) }

// chunk sends one of Azure OpenAI's chunks as a data-only event, and
// reports whether it went out.
func (es *eventStream) chunk(data string) bool { return es.frame(data) }

// data sends v as a data-only event.
func (es *eventStream) data(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("api: marshal an OpenAI frame: " + err.Error()) // every value is one of openaiwire's types
	}
	es.frame(string(b))
}

// frame sends data as an event with no name (OpenAI's framing: no "event:"
// line), and reports whether it went out.
func (es *eventStream) frame(data string) bool {
	m := &sse.Message{}
	m.AppendData(data)
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.write(m)
}
