package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// cancelTimeout bounds the cancel Follow sends when its caller gives up
// between hops.
const cancelTimeout = 10 * time.Second

// Follow asks POST /api/chat with body and follows a long answer across its
// hops until it ends: streamed (onDelta set), each continue event's cursor
// is sent to POST /api/chat/continue and the deltas go on as one text; not
// streamed, each 202's cursor is, until the 200. Each hop is one call under
// the rule (a fast 503 on a continue is retried with the same cursor, and
// yields the same text); onHop, when set, is told of each hop after the
// first. The Result is the last hop's: its Body the whole answer's JSON.
// When ctx ends between hops, the answer is cancelled upstream.
func (c *Client) Follow(ctx context.Context, body []byte, onDelta func(string), onHop func(hop int)) (Result, error) {
	path, next := "/api/chat", body
	for hop := 1; ; hop++ {
		if hop > 1 && onHop != nil {
			onHop(hop)
		}
		var res Result
		var err error
		if onDelta != nil {
			res, err = c.Stream(ctx, path, next, onDelta)
		} else {
			res, err = c.Call(ctx, http.MethodPost, path, next)
		}
		if err != nil {
			return res, err
		}
		cur := res.Cursor
		if onDelta == nil && res.Status == http.StatusAccepted {
			var p apiwire.InProgress
			if err := json.Unmarshal(res.Body, &p); err != nil || p.Cursor == "" {
				return res, &CallError{Status: res.Status, Code: "invalid_response", Message: "The service sent an answer that could not be read.",
					RequestID: res.Header.Get("x-request-id"), Attempts: res.Attempts, Elapsed: res.Elapsed, Reason: retry.ReasonNotRetryable}
			}
			cur = p.Cursor
		}
		if cur == "" {
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
