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
	// Response; Backend is the backend that holds the response, and Trail
	// the call's attempts.
	Backend           string
	Trail             []Attempt
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
// does. A create that fails fast goes to another backend as Complete's
// does; once the stream has begun nothing is tried again: the generation
// runs on at the backend that started it (Hop.Backend), and the returned
// Hop says where to Resume it.
func (c *Client) Create(ctx context.Context, req *GenerationRequest) (*Hop, error) {
	return c.hop(ctx, nil, req.RequestID, req.OnDelta, func(b *backend) (string, string, []byte, error) {
		body, err := json.Marshal(&responsesBody{
			Model: b.deployment, Input: req.Messages, MaxOutputTokens: req.MaxTokens,
			Background: true, Stream: true, Store: true, Metadata: req.Metadata,
		})
		if err != nil {
			return "", "", nil, fmt.Errorf("create response: %w", err)
		}
		return http.MethodPost, b.responsesURL(""), body, nil
	})
}

// Resume streams a generation of the named backend on from the event
// after sequence number after, until it ends or ctx does. A refused resume
// wraps ErrResumeRefused; an unknown response, or a backend the pool no
// longer has, ErrUnknownResponse.
func (c *Client) Resume(ctx context.Context, name, id string, after int, requestID string, onDelta func(string)) (*Hop, error) {
	b, err := c.home(name)
	if err != nil {
		return nil, err
	}
	h, err := c.hop(ctx, b, requestID, onDelta, func(b *backend) (string, string, []byte, error) {
		return http.MethodGet, b.responsesURL(id) + "?stream=true&starting_after=" + strconv.Itoa(after), nil, nil
	})
	if h != nil && h.ResponseID == "" {
		h.ResponseID = id
	}
	if h != nil && h.Last < after {
		h.Last = after
	}
	return h, err
}

// Retrieve reads a response of the named backend as it is now. An unknown
// response, or backend, wraps ErrUnknownResponse.
func (c *Client) Retrieve(ctx context.Context, name, id string) (*StoredResponse, error) {
	return c.stored(ctx, name, http.MethodGet, func(b *backend) string { return b.responsesURL(id) })
}

// Cancel cancels a background response of the named backend and returns
// it as it ended; cancelling one that has already ended returns it as it
// is (cancelling is idempotent).
func (c *Client) Cancel(ctx context.Context, name, id string) (*StoredResponse, error) {
	return c.stored(ctx, name, http.MethodPost, func(b *backend) string { return b.responsesURL(id) + "/cancel" })
}

// Await polls a response of the named backend every interval until it has
// ended or ctx ends: how the rest of a generation is read when its stream
// cannot be resumed.
func (c *Client) Await(ctx context.Context, name, id string, interval time.Duration) (*StoredResponse, error) {
	for {
		r, err := c.Retrieve(ctx, name, id)
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

// home is the backend that holds a long answer's response: a resume,
// retrieve or cancel goes there and nowhere else. A name the pool no
// longer has is an unknown response (404).
func (c *Client) home(name string) (*backend, error) {
	if b := c.backend(name); b != nil {
		return b, nil
	}
	return nil, &Error{Kind: KindRejected, Status: http.StatusNotFound, Backend: name,
		Err: fmt.Errorf("%w: backend %q is not in the pool", ErrUnknownResponse, name)}
}

// responsesURL is the Responses API's URL, of the response id when given.
// It is always the v1 path: the Responses API has no deployments path.
func (b *backend) responsesURL(id string) string {
	u := b.root + "/openai/v1/responses"
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

// hop makes a streaming call (a create, or a resume pinned to its
// backend) through the pool's attempts, and reads its stream; call says
// its method, URL and body at a backend.
func (c *Client) hop(ctx context.Context, pinned *backend, requestID string, onDelta func(string),
	call func(*backend) (method, u string, body []byte, err error)) (*Hop, error) {
	var hop *Hop
	b, trail, err := c.attempts(ctx, pinned, func(ctx context.Context, b *backend) (int, http.Header, error) {
		hop = nil
		method, u, body, err := call(b)
		if err != nil {
			return 0, nil, err
		}
		resp, err := b.send(ctx, method, u, body, requestID)
		if err != nil {
			return 0, nil, sendFailure(ctx, err)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return resp.StatusCode, resp.Header, failed(ctx, resp, method == http.MethodGet)
		}
		hop, err = b.readHop(ctx, resp, onDelta)
		hop.HTTPStatus, hop.UpstreamRequestID = resp.StatusCode, upstreamRequestID(resp.Header)
		var e *Error
		if errors.As(err, &e) && (hop.ResponseID != "" || hop.Text != "") {
			// The generation exists at this backend: it runs on there,
			// and starting another elsewhere would bill it twice.
			e.delivered = true
		}
		return resp.StatusCode, resp.Header, err
	})
	if hop != nil && b != nil {
		hop.Attempts, hop.Backend, hop.Trail = len(trail), b.name, trail
	}
	return hop, err
}

// stored makes a call answered with a response object (retrieve, cancel)
// at the named backend, through the pool's attempts (pinned there).
func (c *Client) stored(ctx context.Context, name, method string, u func(*backend) string) (*StoredResponse, error) {
	home, err := c.home(name)
	if err != nil {
		return nil, err
	}
	var r *StoredResponse
	_, _, err = c.attempts(ctx, home, func(ctx context.Context, b *backend) (int, http.Header, error) {
		var (
			h      http.Header
			status int
		)
		r, status, h, err = b.storedOnce(ctx, method, u(b))
		return status, h, err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// storedOnce is one attempt of stored, with the answer's status and header.
func (c *backend) storedOnce(ctx context.Context, method, u string) (*StoredResponse, int, http.Header, error) {
	resp, err := c.send(ctx, method, u, nil, "")
	if err != nil {
		return nil, 0, nil, sendFailure(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.StatusCode, resp.Header, failed(ctx, resp, false)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, resp.StatusCode, resp.Header, readFailure(ctx, resp.StatusCode, "", fmt.Errorf("read body: %w", err))
	}
	var o responseObject
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, resp.StatusCode, resp.Header, &Error{Kind: KindTransient, Status: resp.StatusCode, Err: fmt.Errorf("%w: %v", errBadBody, err)}
	}
	return o.stored(), resp.StatusCode, resp.Header, nil
}

// send makes one request on the pipeline, its answer's body left to the
// caller.
func (c *backend) send(ctx context.Context, method, u string, body []byte, requestID string) (*http.Response, error) {
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
func (c *backend) readHop(ctx context.Context, resp *http.Response, onDelta func(string)) (*Hop, error) {
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
