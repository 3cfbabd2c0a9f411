package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tmaxmax/go-sse"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/openaiwire"
)

// streamOpenAI answers as OpenAI streams: Azure OpenAI's chunks passed on
// as they came (tool-call deltas and content filter results included), as
// data-only server-sent events, the usage chunk only when the caller asked
// for it, then data: [DONE]. A silence is broken by ": keep-alive"
// comments (timebox's one SSE writer, eventStream). Until a chunk carries
// text or a tool call, the chunks are held back: a failure before then is
// the ordinary JSON error with its status and x-should-retry, as an
// attempt that failed before its first token is, and the SDK judges it by
// them. After it, a failure (the deadline, a cut upstream, the content
// filter stopping the answer) is one data: {"error": ...} frame, and the
// stream ends there, without [DONE]: the SDKs raise it as an error.
func (s *server) streamOpenAI(w http.ResponseWriter, r *http.Request, call *chatCall, includeUsage bool) {
	ctx := r.Context()
	rec := recordFrom(ctx)
	rec.stream = true
	es := openStream(w, func() { stampTiming(w, r) })
	req := call.req
	var held []aoai.Chunk // chunks before the first that carries an answer
	// The last two chunks but the usage: the content filter's verdict is
	// on the one that tripped it, the last or the one before the finish.
	var last, prev string
	// A chunk's text goes to the tally (OnDelta) after the chunk (OnChunk):
	// a chunk the caller did not take marks it, and every later one, undelivered.
	send := func(c aoai.Chunk) {
		if !es.chunk(c.Data) {
			rec.tally.undelivered()
		}
	}
	req.OnChunk = func(c aoai.Chunk) {
		if !c.Usage {
			last, prev = c.Data, last
		}
		switch {
		case c.Usage && !includeUsage:
		case held != nil && c.Text == "" && !c.ToolCalls && !c.Usage:
			held = append(held, c)
		default:
			for _, h := range held {
				send(h)
			}
			held = nil
			send(c)
		}
	}
	held = []aoai.Chunk{}
	start := time.Now()
	resp, err := s.Chat.Complete(ctx, &req)
	started := es.end()
	rec.since("upstream", start)

	if err == nil {
		s.noteAnswer(ctx, *resp)
	}
	s.note(r, err)
	callerGone := err != nil && errors.Is(err, context.Canceled) && !errors.Is(context.Cause(ctx), budget.ErrExhausted)
	switch {
	case callerGone || es.failure() != nil:
	case !started && err != nil:
		s.fail(w, r, rejected(err))
		return
	case err == nil && resp.FinishReason == "content_filter":
		err = errAnswerFiltered
		fallthrough
	case err != nil:
		row := rowFor(err)
		if err == errAnswerFiltered {
			row.inner = json.RawMessage(openaiwire.FilterVerdict(last, prev))
		}
		rec.code = row.code
		countTokens(rec)
		es.data(openAIDialect{}.errorBody(row, "", nil))
	default:
		for _, h := range held {
			send(h)
		}
		es.frame(openaiwire.Done)
	}
	if failed := es.failure(); failed != nil || callerGone {
		noteUntaken(rec, failed, err)
	}
}

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
	var m io.WriterTo = dataFrame(data)
	if strings.ContainsAny(data, "\r\n") {
		// Not one line (no JSON of Azure's or ours is): go-sse splits it.
		msg := &sse.Message{}
		msg.AppendData(data)
		m = msg
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.write(m)
}

// dataFrame is a one-line event's data, written as "data: <it>\n\n" with no
// copy of it: most frames of a stream are Azure OpenAI's chunks as they came.
type dataFrame string

func (d dataFrame) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, s := range [...]string{"data: ", string(d), "\n\n"} {
		m, err := io.WriteString(w, s)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
