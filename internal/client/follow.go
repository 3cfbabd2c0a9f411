package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// cancelTimeout bounds the cancel Follow sends when its caller gives up
// between hops.
const cancelTimeout = 10 * time.Second

// Follow asks POST /api/chat with body and follows a long answer across its
// hops until it ends: streamed, each continue event's cursor is sent to
// POST /api/chat/continue and the deltas go on as one text; not streamed,
// each 202's cursor is, until the 200. Each hop is one call under the rule
// (a fast 503 on a continue is retried with the same cursor, and yields the
// same text), and its attempts' lines name the part of the answer it is.
// onText, when set, gets the answer's text as it arrives: streamed, each
// delta; not streamed, what each 202's answer so far adds, then the rest of
// the 200's answer. The Result is the last hop's: its Body the whole
// answer's JSON. When ctx ends between hops, the answer is cancelled
// upstream.
func (c *Client) Follow(ctx context.Context, body []byte, stream bool, onText func(string)) (Result, error) {
	path, next := "/api/chat", body
	given := "" // not streamed: the text handed to onText so far
	give := func(soFar string) {
		if onText == nil || !strings.HasPrefix(soFar, given) || len(soFar) == len(given) {
			// An answer so far that is not an extension of what was
			// given is never expected; it is left out rather than
			// written twice.
			return
		}
		onText(soFar[len(given):])
		given = soFar
	}
	for hop := 1; ; hop++ {
		part := *c
		part.part = hop
		var res Result
		var err error
		if stream {
			onDelta := onText
			if onDelta == nil {
				onDelta = func(string) {}
			}
			res, err = part.Stream(ctx, path, next, onDelta)
		} else {
			res, err = part.Call(ctx, http.MethodPost, path, next)
		}
		if err != nil {
			return res, err
		}
		cur := res.Cursor
		if !stream && res.Status == http.StatusAccepted {
			var p apiwire.InProgress
			if err := json.Unmarshal(res.Body, &p); err != nil || p.Cursor == "" {
				return res, &CallError{Status: res.Status, Code: "invalid_response", Message: "The service sent an answer that could not be read.",
					RequestID: res.Header.Get("x-request-id"), Attempts: res.Attempts, Elapsed: res.Elapsed, Reason: retry.ReasonNotRetryable}
			}
			cur = p.Cursor
			give(p.Partial.Answer)
		}
		if cur == "" {
			if !stream {
				var r ChatResponse
				if json.Unmarshal(res.Body, &r) == nil {
					give(r.Answer)
				}
			}
			return res, nil
		}
		next, _ = json.Marshal(apiwire.CursorRequest{Cursor: cur})
		path = "/api/chat/continue"
		if ctx.Err() != nil {
			c.cancel(ctx, next)
			return res, context.Cause(ctx)
		}
	}
}

// cancel asks the server to cancel a long answer, on behalf of a caller
// whose ctx has ended: best effort, once.
func (c *Client) cancel(ctx context.Context, body []byte) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	once := *c
	once.Policy.MaxAttempts, once.Log = 1, nil
	_, _ = once.Call(ctx, http.MethodPost, "/api/chat/cancel", body)
}
