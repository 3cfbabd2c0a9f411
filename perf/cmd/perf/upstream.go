package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// completionBody is a chat.completion as Azure OpenAI answers a short
// question, in the shape of the recordings in internal/aoaitest.
const completionBody = `{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},` +
	`"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},` +
	`"violence":{"filtered":false,"severity":"safe"}},"finish_reason":"stop","index":0,"logprobs":null,` +
	`"message":{"annotations":[],"content":"Trains are allowed for trips under four hours; book second class.",` +
	`"refusal":null,"role":"assistant"}}],"created":1764547200,"id":"chatcmpl-perf","model":"gpt-4o-mini-2024-07-18",` +
	`"object":"chat.completion","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}],` +
	`"system_fingerprint":"fp_perf","usage":{"completion_tokens":14,"prompt_tokens":60,"total_tokens":74}}`

// streamBody is the same answer as Azure OpenAI streams it (stream: true
// with stream_options.include_usage), in the shape of the recordings in
// internal/aoaitest/testdata/aoai: the prompt filter results, the role, one
// content delta per token, the finish reason, the usage, [DONE].
var streamBody = func() []byte {
	const safe = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	chunk := func(choices string) string {
		return `data: {"choices":[` + choices + `],"created":1764547200,"id":"chatcmpl-perf","model":"gpt-4o-mini-2024-07-18",` +
			`"object":"chat.completion.chunk","system_fingerprint":"fp_perf"}` + "\n\n"
	}
	var b strings.Builder
	b.WriteString(`data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + safe + `}]}` + "\n\n")
	b.WriteString(chunk(`{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}`))
	for _, tok := range []string{"Tr", "ains", " are", " allowed", " for", " trips", " under", " four", " hours", ";", " book", " second", " class", "."} {
		b.WriteString(chunk(`{"content_filter_results":` + safe + `,"delta":{"content":"` + tok + `"},"finish_reason":null,"index":0,"logprobs":null}`))
	}
	b.WriteString(chunk(`{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}`))
	b.WriteString(`data: {"choices":[],"created":1764547200,"id":"chatcmpl-perf","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk",` +
		`"system_fingerprint":"fp_perf","usage":{"completion_tokens":14,"prompt_tokens":60,"total_tokens":74}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}()

// upstream is the local Azure OpenAI stand-in both subjects call: it reads
// the request and answers at once (streamBody to a request that asks for a
// stream, as the handler's always do; completionBody to the floor's), or, while hang is set,
// holds every request until its caller goes away.
type upstream struct {
	url    string
	hang   atomic.Bool
	held   atomic.Int64 // requests being held now
	served atomic.Int64 // requests answered
	srv    *http.Server
}

func startUpstream() (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{url: "http://" + ln.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve)}
	go u.srv.Serve(ln)
	return u, nil
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if u.hang.Load() {
		u.held.Add(1)
		<-r.Context().Done()
		u.held.Add(-1)
		return
	}
	h := w.Header()
	h.Set("apim-request-id", "00000000-0000-0000-0000-000000000000")
	if bytes.Contains(body, []byte(`"stream":true`)) {
		h.Set("Content-Type", "text/event-stream")
		w.Write(streamBody)
	} else {
		h.Set("Content-Type", "application/json")
		io.WriteString(w, completionBody)
	}
	u.served.Add(1)
}

func (u *upstream) close() { u.srv.Close() }
