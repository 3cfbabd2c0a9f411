package aoai

import (
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/tmaxmax/go-sse"
)

// This file holds the reader of Responses API events: the same deltas as
// Chat Completions chunks (readStream), with the response's id, status,
// last sequence number and usage kept on the side.

// responseEvent is the part of a Responses API event timebox reads. An
// in-band error comes in two shapes: flat (OpenAI's reference: code and
// message beside type) and nested (as streams were captured carrying it:
// {"type":"error","error":{"code","message"}}).
type responseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber *int            `json:"sequence_number"`
	Delta          string          `json:"delta"`
	Response       *responseObject `json:"response"`
	Code           *string         `json:"code"`
	Error          *struct {
		Code *string `json:"code"`
		Type string  `json:"type"`
	} `json:"error"`
}

// responseObject is the part of a response object timebox reads.
type responseObject struct {
	ID        string            `json:"id"`
	CreatedAt int64             `json:"created_at"`
	Status    string            `json:"status"`
	Metadata  map[string]string `json:"metadata"`
	Output    []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// usage is the response's usage in Chat Completions' terms.
func (o *responseObject) usage() Usage {
	if o.Usage == nil {
		return Usage{}
	}
	return Usage{PromptTokens: o.Usage.InputTokens, CompletionTokens: o.Usage.OutputTokens, TotalTokens: o.Usage.TotalTokens}
}

// finish is the finish reason of an ended response: "stop" when it
// completed, "content_filter" or "length" when it is incomplete.
func (o *responseObject) finish() string {
	switch o.Status {
	case "completed":
		return "stop"
	case "incomplete":
		if o.IncompleteDetails != nil && o.IncompleteDetails.Reason == "content_filter" {
			return "content_filter"
		}
		return "length"
	}
	return ""
}

// stored is the response as a StoredResponse.
func (o *responseObject) stored() *StoredResponse {
	r := &StoredResponse{ID: o.ID, Status: o.Status, CreatedAt: time.Unix(o.CreatedAt, 0), Metadata: o.Metadata,
		Usage: o.usage(), FinishReason: o.finish()}
	for _, item := range o.Output {
		if item.Type != "message" {
			continue
		}
		for _, c := range item.Content {
			if c.Type == "output_text" {
				r.Text += c.Text
			}
		}
	}
	if o.Error != nil {
		r.ErrorCode = o.Error.Code
	}
	return r
}

// eventError is the cause of a stream that carried an error event or
// ended response.failed; code is the upstream error code, when it names
// one.
type eventError struct {
	event, code string
}

func (e *eventError) Error() string {
	return fmt.Sprintf("upstream %s event (code %q)", e.event, e.code)
}

// responsesDecoder reads a Responses API stream.
type responsesDecoder struct {
	id      string
	created time.Time
	status  string
	last    int // the last sequence number read; -1 before any
	finish  string
	usage   Usage
	answer  string // the output's text, from the last event

	buf []byte
}

func (d *responsesDecoder) decode(ev sse.Event) (string, bool, error) {
	d.buf = append(d.buf[:0], ev.Data...)
	var e responseEvent
	if err := jsonv2.Unmarshal(d.buf, &e, lenient); err != nil {
		return "", false, fmt.Errorf("%w: event: %v", errBadBody, err)
	}
	// Every event takes a sequence number, keepalives too: the last one
	// read is where a resume goes on.
	if e.SequenceNumber != nil {
		d.last = *e.SequenceNumber
	}
	if r := e.Response; r != nil {
		if r.ID != "" {
			d.id = r.ID
		}
		if r.CreatedAt != 0 {
			d.created = time.Unix(r.CreatedAt, 0)
		}
		d.status = r.Status
	}
	switch e.Type {
	case "response.output_text.delta":
		return e.Delta, false, nil
	case "response.completed", "response.incomplete":
		d.finish, d.usage, d.answer = e.Response.finish(), e.Response.usage(), e.Response.stored().Text
		return "", true, nil
	case "response.failed":
		code := ""
		if e.Response != nil && e.Response.Error != nil {
			code = e.Response.Error.Code
		}
		return "", false, &eventError{event: "response.failed", code: code}
	case "error":
		code := ""
		switch {
		case e.Code != nil:
			code = *e.Code
		case e.Error != nil && e.Error.Code != nil:
			code = *e.Error.Code
		case e.Error != nil:
			code = e.Error.Type
		}
		return "", false, &eventError{event: "error", code: code}
	}
	return "", false, nil
}

func (d *responsesDecoder) result() (string, Usage, bool) {
	return d.finish, d.usage, d.finish != ""
}
