package main

import (
	"io"
	"net"
	"net/http"
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

// upstream is the local Azure OpenAI stand-in both subjects call: it reads
// the request and answers completionBody at once, or, while hang is set,
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
	io.Copy(io.Discard, r.Body)
	if u.hang.Load() {
		u.held.Add(1)
		<-r.Context().Done()
		u.held.Add(-1)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("apim-request-id", "00000000-0000-0000-0000-000000000000")
	io.WriteString(w, completionBody)
	u.served.Add(1)
}

func (u *upstream) close() { u.srv.Close() }
