// Package aoai is timebox's Azure OpenAI chat completions client, built on
// the azcore pipeline (the same family as azidentity): a bearer-token policy
// with cached tokens over an azidentity credential, or an api-key policy;
// azcore's own retries switched off so that the only retries are this
// package's, which follow the fast-failure rule of package retry; and every
// failure classified here, once, into an *Error with a Kind.
package aoai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/retry"
)

// Scope is the Entra ID scope of Azure OpenAI (Cognitive Services).
const Scope = "https://cognitiveservices.azure.com/.default"

// maxResponseBytes bounds how much of an upstream answer is read.
const maxResponseBytes = 8 << 20

// Options configure a Client.
type Options struct {
	// Backends is the pool; empty means a pool of one, named
	// DefaultBackend, of Endpoint, Deployment, Model, APIVersion and
	// APIKey.
	Backends []Backend
	// Endpoint is the resource URL, e.g. https://contoso.openai.azure.com.
	Endpoint *url.URL
	// Deployment is the model deployment name.
	Deployment string
	// Model is the model the deployment runs, for its token-limit field;
	// empty: the deployment's name names it.
	Model string
	// APIVersion selects the deployments path with this api-version; empty
	// selects the v1 path (/openai/v1/chat/completions, deployment in model).
	APIVersion string
	// APIKey selects api-key auth; when empty Credential is used.
	APIKey string
	// Credential is the Entra ID credential used by every backend that
	// has no APIKey.
	Credential azcore.TokenCredential
	// Transport sends the requests; nil means an http.Client that follows
	// no redirect and keeps connections for 100 requests at a time
	// (newHTTPClient).
	Transport policy.Transporter
	// FastFailure is the threshold at or above which a failed attempt is a
	// timeout (KindSlowFailure) and is never retried. 0 means
	// retry.DefaultFastFailure (30 s).
	FastFailure time.Duration
	// MaxAttempts caps the attempts at one call, over all backends. 0
	// means retry.DefaultUpstreamAttempts (2).
	MaxAttempts int
	// MinTime is the least time that must be left for another attempt
	// (MIN_UPSTREAM_TIME); 0 means any.
	MinTime time.Duration
	// CooldownMax caps how long a throttled backend is skipped; 0 means
	// DefaultCooldownMax.
	CooldownMax time.Duration
	// Logger says when a backend goes out of the pool and comes back; nil
	// says nothing.
	Logger *slog.Logger
}

// DefaultCooldownMax is Options.CooldownMax's default
// (BACKEND_COOLDOWN_MAX).
const DefaultCooldownMax = time.Minute

// Message is one chat message sent upstream.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion. MaxTokens is always sent (as
// max_completion_tokens to reasoning-model deployments, max_tokens to the
// rest); RequestID is sent as x-ms-client-request-id for correlation.
type Request struct {
	Messages  []Message
	MaxTokens int
	RequestID string
	// OnDelta, when set, receives each piece of the answer as it arrives,
	// in order, on the goroutine that called Complete. The answer is
	// streamed from Azure OpenAI whether or not it is set.
	OnDelta func(text string)
	// Passthrough, when set, is what a request in the OpenAI dialect
	// sends: Messages is then ignored.
	Passthrough *Passthrough
	// OnChunk, when set, receives each chunk as Azure OpenAI sent it,
	// before its text goes to OnDelta, on the same goroutine (an error
	// event excepted: it ends the call with an *Error).
	OnChunk func(Chunk)
}

// Usage is the token accounting Azure OpenAI reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is a completed chat.
type Response struct {
	Content      string
	FinishReason string
	Usage        Usage
	// Attempts is how many upstream attempts were made, over all backends
	// (1 without retries).
	Attempts int
	// Backend is the name of the backend that answered.
	Backend string
	// Trail is every attempt, the answer's last.
	Trail []Attempt
	// Status is the last attempt's HTTP status.
	Status int
	// UpstreamRequestID is Azure's id for the last attempt (apim-request-id,
	// else x-request-id): what Azure support asks for.
	UpstreamRequestID string
}

// Client calls chat completions and the Responses API over a pool of
// backends. It is safe for concurrent use.
type Client struct {
	pool *pool
	rule retry.Upstream
}

// New builds a Client. It fails when a backend has neither an API key nor
// the credential, or no endpoint or deployment.
func New(o Options) (*Client, error) {
	if len(o.Backends) == 0 {
		o.Backends = []Backend{{Name: DefaultBackend, Endpoint: o.Endpoint, Deployment: o.Deployment, Model: o.Model,
			APIVersion: o.APIVersion, APIKey: o.APIKey}}
	}
	if o.Transport == nil {
		o.Transport = newHTTPClient()
	}
	backends := make([]*backend, 0, len(o.Backends))
	for _, bo := range o.Backends {
		b, err := newBackend(bo, o.Credential, o.Transport)
		if err != nil {
			return nil, err
		}
		backends = append(backends, b)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{
		pool: newPool(backends, cmp.Or(o.CooldownMax, DefaultCooldownMax), logger),
		rule: retry.Upstream{MaxAttempts: cmp.Or(o.MaxAttempts, retry.DefaultUpstreamAttempts), FastFailure: o.FastFailure, MinTime: o.MinTime},
	}, nil
}

// Backends are how many of the pool's backends can take a call now, and
// how many are skipped (cooling after a throttle, or out after failures).
func (c *Client) Backends() (available, cooling int) {
	return c.pool.counts(time.Now())
}

// Has reports whether the pool has a backend of that name.
func (c *Client) Has(name string) bool {
	return c.backend(name) != nil
}

// backend is the pool's backend of that name; nil when it has none. An
// empty name is the only backend of a pool of one (a cursor written
// before backends had names).
func (c *Client) backend(name string) *backend {
	for _, b := range c.pool.backends {
		if b.name == name || (name == "" && len(c.pool.backends) == 1) {
			return b
		}
	}
	return nil
}

// Complete sends req and returns the answer, always streamed from Azure
// OpenAI (stream: true, with usage) so that the text so far is never lost:
// a failure after the first piece of text carries it in Error.Partial.
// Its attempts are the pool's (attempts): a fast failure goes to another
// backend, a throttle waits for one while that fits the time left in ctx,
// and nothing at all is tried again once text has arrived (it would be
// written twice). Failures are *Error; when ctx ends the *Error wraps
// ctx's error.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	ctx = context.WithValue(ctx, requestIDKey{}, req.RequestID)
	var (
		resp  *Response
		h     http.Header // the answer's
		bodyB *backend    // whose body body is
		body  []byte
	)
	b, trail, err := c.attempts(ctx, nil, func(ctx context.Context, b *backend) (int, http.Header, error) {
		if bodyB != b {
			var err error
			if body, err = b.body(req); err != nil {
				return 0, nil, fmt.Errorf("complete chat: %w", err)
			}
			bodyB = b
		}
		preq, err := b.request(ctx, body)
		if err != nil {
			return 0, nil, err
		}
		hr, err := b.pl.Do(preq)
		if err != nil {
			return 0, nil, sendFailure(ctx, err)
		}
		// What the attempt hands on is watched: once anything has gone,
		// it is tried nowhere again.
		delivered := false
		r := *req
		if req.OnChunk != nil {
			r.OnChunk = func(c Chunk) { delivered = true; req.OnChunk(c) }
		}
		if req.OnDelta != nil {
			r.OnDelta = func(text string) { delivered = true; req.OnDelta(text) }
		}
		resp, h, err = b.read(ctx, hr, &r)
		var e *Error
		if errors.As(err, &e) {
			e.delivered = delivered
		}
		return hr.StatusCode, h, err
	})
	if err != nil {
		return nil, err
	}
	resp.Attempts, resp.Backend, resp.Trail, resp.UpstreamRequestID = len(trail), b.name, trail, upstreamRequestID(h)
	return resp, nil
}

// request is an attempt's request with the call's body, the answer's body
// left to read (azcore's SkipBodyDownload).
func (b *backend) request(ctx context.Context, body []byte) (*policy.Request, error) {
	req, err := runtime.NewRequest(ctx, http.MethodPost, b.url)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	// The answer is read here, not by azcore, so that text is handed on as
	// it arrives.
	runtime.SkipBodyDownload(req)
	return req, nil
}

// upstreamRequestID is Azure's own id for an attempt, when it answered.
func upstreamRequestID(h http.Header) string {
	return cmp.Or(h.Get("apim-request-id"), h.Get("x-request-id"))
}

// body is what Azure OpenAI is sent: the deployment on the v1 API (the
// deployments API has it in the path), the messages, the token limit under
// the name the deployment's model takes (modelfacts' TokenField), and
// always a stream whose last chunk carries the usage; a passthrough's
// members (its messages and fields) in place of the messages, last. It is
// written out rather than encoded as one value: a passthrough's members
// are JSON already, which encoding them again would only scan and copy a
// second time.
func (c *backend) body(req *Request) ([]byte, error) {
	var members []byte
	if p := req.Passthrough; p != nil {
		var err error
		if members, err = p.members(); err != nil {
			return nil, err
		}
	}
	size := len(members) + len(c.deployment) + 128
	for _, m := range req.Messages {
		size += len(`{"role":"","content":""},`) + len(m.Role) + len(m.Content)
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	if c.v1 {
		b = append(b, `"model":`...)
		b, _ = jsontext.AppendQuote(b, c.deployment)
		b = append(b, ',')
	}
	if req.Passthrough == nil {
		b = append(b, `"messages":`...)
		var err error
		if b, err = appendJSON(b, req.Messages); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	if c.tokenField == modelfacts.MaxCompletionTokens {
		b = append(b, `"max_completion_tokens":`...)
	} else {
		b = append(b, `"max_tokens":`...)
	}
	b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	if len(members) > 0 {
		b = append(append(b, ','), members...)
	}
	return append(b, '}'), nil
}

// appendJSON appends v to b as json.Marshal encodes it, written straight
// into b rather than into a slice of its own and copied.
func appendJSON(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return nil, err
	}
	// Encode ends the value with a newline.
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sendFailure classifies a request that got no answer: the context's end,
// a credential that gave no token (signInError's kind), or a connection
// error.
func sendFailure(ctx context.Context, err error) *Error {
	var signInErr *signInError
	switch {
	case ctx.Err() != nil:
		return &Error{Kind: KindCanceled, Err: err}
	case errors.As(err, &signInErr):
		return &Error{Kind: signInErr.kind(), Err: err}
	}
	return &Error{Kind: KindTransient, Err: err}
}

// read reads an attempt's answer, a failure's body or the stream of a
// success, and closes it. It returns the response header for the retry
// decision; errors are *Error, with the text read so far in Partial.
func (c *backend) read(ctx context.Context, resp *http.Response, req *Request) (*Response, http.Header, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			return nil, resp.Header, readFailure(ctx, resp.StatusCode, "", fmt.Errorf("read body: %w", err))
		}
		return nil, resp.Header, classify(resp.StatusCode, resp.Header, data)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return nil, resp.Header, &Error{Kind: KindTransient, Status: resp.StatusCode, Err: fmt.Errorf("%w: content type %q", errBadBody, mt)}
	}
	dec := &chatDecoder{onChunk: req.OnChunk}
	text, err := readStream(resp.Body, dec, req.OnDelta)
	if err != nil {
		return nil, resp.Header, readFailure(ctx, resp.StatusCode, text, err)
	}
	// Read to the body's end (its last chunk follows [DONE]): a body closed
	// before it costs the connection, and a new one to Azure is a TLS
	// handshake.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEventBytes))
	finish, usage, _ := dec.result()
	return &Response{Content: text, FinishReason: finish, Usage: usage, Status: resp.StatusCode}, resp.Header, nil
}

// readFailure classifies a failure while reading an answer: the context's
// end, a break after the first piece of text (KindBroken, with the text),
// or before it, a transient failure like any other.
func readFailure(ctx context.Context, status int, partial string, err error) *Error {
	switch {
	case ctx.Err() != nil:
		return &Error{Kind: KindCanceled, Status: status, Partial: partial, Err: fmt.Errorf("%w (%w)", err, ctx.Err())}
	case partial != "":
		return &Error{Kind: KindBroken, Status: status, Partial: partial, Err: err}
	}
	return &Error{Kind: KindTransient, Status: status, Err: err}
}
