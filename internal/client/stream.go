package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/tmaxmax/go-sse"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// This file holds the reading of a streamed answer (docs/api.md, streaming).

// isEventStream reports whether resp is a stream that has begun: timebox
// answers 200 text/event-stream only once it sends its first event.
func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode == http.StatusOK && mt == "text/event-stream"
}

// readStream reads a stream to its done or error event, handing each delta
// to onDelta. It returns status 200 and the done event's data as the body;
// a streamErr once a piece of the answer has been handed on; for an error
// event before any (partial: false), the status, headers and body of the
// JSON answer it stands for; or, for a stream lost before any, status 0
// and the error: the last two for the rule to judge.
func readStream(resp *http.Response, onDelta func(string)) attemptResult {
	defer resp.Body.Close()
	r := attemptResult{header: resp.Header}
	requestID := resp.Header.Get("x-request-id")
	begun := false
read:
	for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: maxBody}) {
		if err != nil {
			r.err = err
			break
		}
		switch ev.Type {
		case "delta":
			var d struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				r.err = fmt.Errorf("unreadable delta: %w", err)
				break read
			}
			begun = true
			onDelta(d.Text)
		case "done":
			r.status, r.body = http.StatusOK, []byte(ev.Data)
			return r
		case "continue":
			// The hop is over, the answer is not: the cursor goes on.
			var c apiwire.Continue
			if err := json.Unmarshal([]byte(ev.Data), &c); err != nil || c.Cursor == "" {
				r.err = fmt.Errorf("unreadable continue: %v", err)
				break read
			}
			r.status, r.cursor = http.StatusOK, c.Cursor
			return r
		case "error":
			var e apiwire.StreamError
			err := json.Unmarshal([]byte(ev.Data), &e)
			if !begun && err == nil && saysNotPartial(ev.Data) && e.Status >= 400 && e.Status <= 599 {
				// Failed before its first token, after a keep-alive: the
				// attempt is the JSON answer the event stands for.
				r.status, r.header = e.Status, failedHeader(resp.Header, e)
				r.errBody, r.inEvent = apiwire.ErrorBody{Error: e.Error}, true
				return r
			}
			r.streamErr = &CallError{Status: http.StatusOK, Code: e.Error.Code, Message: e.Error.Message,
				RequestID: cmp(e.Error.RequestID, requestID), Reason: retry.ReasonNotRetryable,
				Timeout: e.Error.Code == apiwire.CodeDeadlineExceeded}
			if r.streamErr.Code == "" {
				r.streamErr.Code, r.streamErr.Message = "invalid_response", "The service ended the answer with an error that could not be read."
			}
			return r
		}
		// Any other event is skipped, as SSE wants of events a reader does
		// not know.
	}
	if r.err == nil {
		r.err = errors.New("the stream ended without done or error")
	}
	if begun {
		r.streamErr = &CallError{Status: http.StatusOK, Code: "stream_broken", RequestID: requestID, Reason: retry.ReasonNotRetryable,
			Message: fmt.Sprintf("The connection was lost in the middle of the answer (%v); what arrived is above.", r.err)}
	}
	return r
}

// saysNotPartial reports whether an error event's data says "partial":
// false in so many words: an event without it (an older server's) or with
// anything else is final.
func saysNotPartial(data string) bool {
	var said struct {
		Partial *bool `json:"partial"`
	}
	return json.Unmarshal([]byte(data), &said) == nil && said.Partial != nil && !*said.Partial
}

// failedHeader is the header of the JSON answer that the error event e,
// sent before the first delta, stands for: the stream's own (x-request-id)
// with e's retry hints as the headers the JSON answer carries, so that the
// rule judges both alike.
func failedHeader(h http.Header, e apiwire.StreamError) http.Header {
	h = h.Clone()
	for _, k := range []string{"Content-Type", "Retry-After", "retry-after-ms", "x-should-retry"} {
		h.Del(k) // the 200's, not the answer's
	}
	if e.RetryAfterMs > 0 {
		h.Set("retry-after-ms", strconv.FormatInt(e.RetryAfterMs, 10))
	}
	if e.ShouldRetry != nil && !*e.ShouldRetry {
		h.Set("x-should-retry", "false")
	}
	return h
}

func cmp(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
