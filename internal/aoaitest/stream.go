package aoaitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// This file holds the streamed answer (server-sent events).

// stream sends the answer as server-sent events, as
// chat_200_stream_v1_endpoint.json: prompt filter results, the role, one
// delta per token, the finish reason, optionally usage, then [DONE]. A
// midStream hang or reset strikes once its Tokens have been sent: the
// stream stalls until the client goes away, or the connection drops.
func (ex *exchange) stream(a answer, prompt int, firstByte time.Duration, v verdict, includeUsage bool, midStream Directive) {
	if !ex.wait(firstByte) {
		return
	}
	ex.successHeaders(v, "text/event-stream")
	ex.rec.Status = http.StatusOK
	ex.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(ex.w)
	send := func(ev any) bool {
		b, err := json.Marshal(ev)
		if err != nil {
			panic(fmt.Sprintf("aoaitest: marshal chunk: %v", err))
		}
		return ex.sendEvent(rc, b)
	}
	jb := safeResults()
	jb.Jailbreak = &jailbreakResult{}
	if !send(chunk{Choices: []chunkChoice{}, PromptFilterResults: []promptFilterResult{{ContentFilterResults: jb}}}) {
		return
	}
	base := chunk{Created: time.Now().Unix(), ID: completionID(), Model: ex.model, Object: "chat.completion.chunk", SystemFingerprint: "fp_aoaisim"}
	if includeUsage {
		// With include_usage every chunk carries "usage": null but the last
		// (OpenAI's chat streaming reference).
		base.Usage = json.RawMessage("null")
	}
	with := func(c chunkChoice) chunk {
		ch := base
		ch.Choices = []chunkChoice{c}
		return ch
	}
	empty := ""
	first := delta{Content: &empty, Role: "assistant"}
	if a.call != nil {
		first = delta{Role: "assistant", ToolCalls: []toolCall{a.callPiece("", true)}}
	}
	if !send(with(chunkChoice{ContentFilterResults: struct{}{}, Delta: first})) {
		return
	}
	sent := 0
	for i, piece := range a.pieces {
		if midStream.Kind != "" && sent+piece.tokens > midStream.Tokens {
			ex.fault(midStream)
			return
		}
		if !ex.wait(time.Duration(piece.tokens) * ex.s.opts.PerToken) {
			return
		}
		sent += piece.tokens
		d := delta{Content: &piece.text}
		if a.call != nil {
			d = delta{ToolCalls: []toolCall{a.callPiece(piece.text, false)}}
		}
		if !send(with(chunkChoice{ContentFilterResults: a.results(i), Delta: d})) {
			return
		}
	}
	if !send(with(chunkChoice{ContentFilterResults: struct{}{}, FinishReason: &a.finish})) {
		return
	}
	if includeUsage {
		u := base
		u.Choices = []chunkChoice{}
		u.Usage, _ = json.Marshal(usage{CompletionTokens: a.tokens, PromptTokens: prompt, TotalTokens: prompt + a.tokens})
		if !send(u) {
			return
		}
	}
	ex.sendEvent(rc, []byte("[DONE]"))
}

// sendEvent writes and flushes one "data: ..." event; it reports false, and
// records a cancellation, when the client is gone.
func (ex *exchange) sendEvent(rc *http.ResponseController, data []byte) bool {
	if ex.r.Context().Err() != nil {
		ex.rec.Cancelled = true
		return false
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	if _, err := ex.w.Write(buf); err != nil {
		ex.rec.Cancelled = true
		return false
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		ex.rec.Cancelled = true
		return false
	}
	return true
}
