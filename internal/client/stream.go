package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

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

// streamError is the data of the error event.
type streamError struct {
	Error   apiwire.Error `json:"error"`
	Partial bool          `json:"partial"`
}

// readStream reads a stream to its done or error event, handing each delta
// to onDelta. It returns status 200 and the done event's data as the body;
// a streamErr once a piece of the answer has been handed on; or, for a
// stream lost before any, status 0 and the error, for the rule to judge.
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
		case "error":
			var e streamError
			_ = json.Unmarshal([]byte(ev.Data), &e)
			r.streamErr = &CallError{Status: http.StatusOK, Code: e.Error.Code, Message: e.Error.Message,
				RequestID: cmp(e.Error.RequestID, requestID), Reason: retry.ReasonNotRetryable,
				Timeout: e.Error.Code == "deadline_exceeded"}
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

func cmp(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
