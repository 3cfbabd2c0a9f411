package aoai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// This file holds the Responses API in background mode, on the same
// pipeline as Chat Completions: a generation that runs on at Azure OpenAI
// when the HTTP call that started it ends, delivered in hops. Create starts
// one and streams it; Resume streams it on from a sequence number;
// Retrieve and Await read it as it is; Cancel stops it.

// ErrResumeRefused is wrapped by Resume's error when Azure OpenAI refuses
// to stream the response again (a 400: OpenAI refuses to stream a response
// more than 5 minutes old); Await still reads it.
var ErrResumeRefused = errors.New("resume refused")

// ErrUnknownResponse is wrapped by the error of a call that names a
// response Azure OpenAI does not have (404: never created, deleted, or
// past its retention).
var ErrUnknownResponse = errors.New("unknown response")

// GenerationRequest starts a generation. MaxTokens is always sent (as
// max_output_tokens); Metadata is stored with the response, and Retrieve
// returns it.
type GenerationRequest struct {
	Messages  []Message
	MaxTokens int
	RequestID string
	Metadata  map[string]string
	// OnDelta, when set, receives each piece of the answer as it arrives,
	// on the calling goroutine.
	OnDelta func(text string)
}

// Hop is what one stream of a generation delivered: Create's, or a
// Resume's. It is returned with every error once the response's id is
// known, so that a hop cut short (its context ended) can be continued.
type Hop struct {
	// ResponseID is the response's id (resp_...).
	ResponseID string
	// CreatedAt is when the response was created, by Azure's clock.
	CreatedAt time.Time
	// Last is the sequence number of the last event read, and relayed to
	// OnDelta; a Resume after it goes on exactly where this hop stopped.
	// -1 before the first event.
	Last int
	// Text is the text this hop relayed.
	Text string
	// Status is the response's status as the stream last said it: queued,
	// in_progress, completed, incomplete, failed; "" before the first
	// event that carries it.
	Status string
	// Done is true when the response ended in this hop (completed or
	// incomplete): FinishReason and Usage are then the whole generation's.
	Done         bool
	FinishReason string
	Usage        Usage
	// Answer is the whole generation's text, from the response the last
	// event carries, when Done.
	Answer string
	// Attempts, HTTPStatus and UpstreamRequestID are the call's, as in
	// Response.
	Attempts          int
	HTTPStatus        int
	UpstreamRequestID string
}

// StoredResponse is a response as Retrieve, Await and Cancel read it.
type StoredResponse struct {
	ID        string
	Status    string
	CreatedAt time.Time
	Metadata  map[string]string
	// Text is the output's text (empty until the response ends with one).
	Text string
	// Usage is set once the response has ended with one.
	Usage Usage
	// FinishReason is "stop" (completed), "length" or "content_filter"
	// (incomplete, by incomplete_details.reason); "" otherwise.
	FinishReason string
	// ErrorCode is a failed response's error code.
	ErrorCode string
}

// Terminal reports whether the response has ended: completed, incomplete,
// failed or cancelled.
func (r *StoredResponse) Terminal() bool {
	switch r.Status {
	case "completed", "incomplete", "failed", "cancelled":
		return true
	}
	return false
}

// Create starts a generation in background mode (background, stream and
// store true, max_output_tokens set) and streams it until it ends or ctx
// does. A throttled create is retried as Complete's is; once the stream has
// begun nothing is retried: the generation runs on at Azure OpenAI, and the
// returned Hop says where to Resume it.
func (c *Client) Create(ctx context.Context, req *GenerationRequest) (*Hop, error) {
	body, err := json.Marshal(&responsesBody{
		Model: c.deployment, Input: req.Messages, MaxOutputTokens: req.MaxTokens,
		Background: true, Stream: true, Store: true, Metadata: req.Metadata,
	})
	if err != nil {
		return nil, fmt.Errorf("create response: %w", err)
	}
	return c.hop(ctx, http.MethodPost, c.responsesURL(""), body, req.RequestID, req.OnDelta)
}

// Resume streams a generation on from the event after sequence number
// after, until it ends or ctx does. A refused resume wraps
// ErrResumeRefused; an unknown response ErrUnknownResponse.
func (c *Client) Resume(ctx context.Context, id string, after int, requestID string, onDelta func(string)) (*Hop, error) {
	u := c.responsesURL(id) + "?stream=true&starting_after=" + strconv.Itoa(after)
	h, err := c.hop(ctx, http.MethodGet, u, nil, requestID, onDelta)
	if h != nil && h.ResponseID == "" {
		h.ResponseID = id
	}
	if h != nil && h.Last < after {
		h.Last = after
	}
	return h, err
}

// Retrieve reads a response as it is now. An unknown response wraps
// ErrUnknownResponse.
func (c *Client) Retrieve(ctx context.Context, id string) (*StoredResponse, error) {
	return c.stored(ctx, http.MethodGet, c.responsesURL(id))
}

// Cancel cancels a background response and returns it as it ended;
// cancelling one that has already ended returns it as it is (cancelling
// is idempotent).
func (c *Client) Cancel(ctx context.Context, id string) (*StoredResponse, error) {
	return c.stored(ctx, http.MethodPost, c.responsesURL(id)+"/cancel")
}

// Await polls a response every interval until it has ended or ctx ends:
// how the rest of a generation is read when its stream cannot be resumed.
func (c *Client) Await(ctx context.Context, id string, interval time.Duration) (*StoredResponse, error) {
	for {
		r, err := c.Retrieve(ctx, id)
		if err != nil || r.Terminal() {
			return r, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, &Error{Kind: KindCanceled, Err: fmt.Errorf("await response: %w", ctx.Err())}
		case <-t.C:
		}
	}
}

// responsesURL is the Responses API's URL, of the response id when given.
// It is always the v1 path: the Responses API has no deployments path.
func (c *Client) responsesURL(id string) string {
	base := c.url
	if i := strings.Index(base, "/openai/"); i >= 0 {
		base = base[:i]
	}
	u := base + "/openai/v1/responses"
	if id != "" {
		u += "/" + url.PathEscape(id)
	}
	return u
}

// responsesBody is what a create sends.
type responsesBody struct {
	Model           string            `json:"model"`
	Input           []Message         `json:"input"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	Background      bool              `json:"background"`
	Stream          bool              `json:"stream"`
	Store           bool              `json:"store"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// hop makes a streaming call (a create or a resume), retrying throttles
// before its stream begins as the rule says, and reads its stream.
func (c *Client) hop(ctx context.Context, method, u string, body []byte, requestID string, onDelta func(string)) (*Hop, error) {
	for n := 1; ; n++ {
		start := time.Now()
		resp, err := c.send(ctx, method, u, body, requestID)
		var h http.Header
		if err == nil {
			h = resp.Header
			if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
				hop, err := c.readHop(ctx, resp, onDelta)
				hop.Attempts, hop.HTTPStatus, hop.UpstreamRequestID = n, resp.StatusCode, upstreamRequestID(h)
				if err != nil {
					var e *Error
					if errors.As(err, &e) {
						e.Attempts, e.Elapsed, e.UpstreamRequestID = n, time.Since(start), upstreamRequestID(h)
					}
				}
				return hop, err
			}
			err = failed(ctx, resp, method == http.MethodGet)
		} else {
			err = sendFailure(ctx, err)
		}
		again, err := c.retry(ctx, n, time.Since(start), h, err)
		if !again {
			return nil, err
		}
	}
}

// stored makes a call answered with a response object (retrieve, cancel),
// retrying throttles as the rule says.
func (c *Client) stored(ctx context.Context, method, u string) (*StoredResponse, error) {
	for n := 1; ; n++ {
		start := time.Now()
		r, h, err := c.storedOnce(ctx, method, u)
		if err == nil {
			return r, nil
		}
		again, err := c.retry(ctx, n, time.Since(start), h, err)
		if !again {
			return nil, err
		}
	}
}

// storedOnce is one attempt of stored, with the answer's header.
func (c *Client) storedOnce(ctx context.Context, method, u string) (*StoredResponse, http.Header, error) {
	resp, err := c.send(ctx, method, u, nil, "")
	if err != nil {
		return nil, nil, sendFailure(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.Header, failed(ctx, resp, false)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, resp.Header, readFailure(ctx, resp.StatusCode, "", fmt.Errorf("read body: %w", err))
	}
	var o responseObject
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, resp.Header, &Error{Kind: KindTransient, Status: resp.StatusCode, Err: fmt.Errorf("%w: %v", errBadBody, err)}
	}
	return o.stored(), resp.Header, nil
}

// send makes one request on the pipeline, its answer's body left to the
// caller.
func (c *Client) send(ctx context.Context, method, u string, body []byte, requestID string) (*http.Response, error) {
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	runtime.SkipBodyDownload(req)
	if body != nil {
		if err := req.SetBody(streaming.NopCloser(strings.NewReader(string(body))), "application/json"); err != nil {
			return nil, fmt.Errorf("build request: %w", err)
		}
	}
	if requestID != "" {
		req.Raw().Header.Set("X-Ms-Client-Request-Id", requestID)
	}
	return c.pl.Do(req)
}

// failed reads and classifies a non-2xx answer, closing it. A 400 to a
// resume is a refused resume; a 404 names an unknown response (the
// deployment's own 404 says DeploymentNotFound).
func failed(ctx context.Context, resp *http.Response, resume bool) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return readFailure(ctx, resp.StatusCode, "", fmt.Errorf("read body: %w", err))
	}
	e := classify(resp.StatusCode, resp.Header, data)
	switch {
	case resume && resp.StatusCode == http.StatusBadRequest:
		e.Err = ErrResumeRefused
	case resp.StatusCode == http.StatusNotFound && e.Code != "DeploymentNotFound" && e.Code != "404":
		e.Err = ErrUnknownResponse
	}
	return e
}

// readHop reads a Responses stream into a Hop, and closes it.
func (c *Client) readHop(ctx context.Context, resp *http.Response, onDelta func(string)) (*Hop, error) {
	defer resp.Body.Close()
	dec := &responsesDecoder{last: -1}
	hop := func(text string) *Hop {
		return &Hop{ResponseID: dec.id, CreatedAt: dec.created, Last: dec.last, Text: text, Status: dec.status,
			Done: dec.finish != "", FinishReason: dec.finish, Usage: dec.usage, Answer: dec.answer}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return hop(""), &Error{Kind: KindTransient, Status: resp.StatusCode, Err: fmt.Errorf("%w: content type %q", errBadBody, mt)}
	}
	text, err := readStream(resp.Body, dec, onDelta)
	if err != nil {
		e := readFailure(ctx, resp.StatusCode, text, err)
		var ev *eventError
		if errors.As(err, &ev) {
			e.Code = ev.code
		}
		return hop(text), e
	}
	// Read to the body's end, as read does, to keep the connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEventBytes))
	return hop(text), nil
}
