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
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/retry"
)

// Scope is the Entra ID scope of Azure OpenAI (Cognitive Services).
const Scope = "https://cognitiveservices.azure.com/.default"

// maxResponseBytes bounds how much of an upstream answer is read.
const maxResponseBytes = 8 << 20

// Options configure a Client.
type Options struct {
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
	// Credential is the Entra ID credential used when APIKey is empty.
	Credential azcore.TokenCredential
	// Transport sends the requests; nil means an http.Client that follows
	// no redirect and keeps connections for 100 requests at a time
	// (newHTTPClient).
	Transport policy.Transporter
	// FastFailure is the threshold at or above which a failed attempt is a
	// timeout (KindSlowFailure) and is never retried. 0 means
	// retry.DefaultFastFailure (30 s).
	FastFailure time.Duration
	// MaxAttempts caps attempts at a throttled call whose wait fits the
	// time left. 0 means retry.DefaultUpstreamAttempts (2).
	MaxAttempts int
}

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
	// Attempts is how many upstream attempts were made (1 without retries).
	Attempts int
	// Status is the last attempt's HTTP status.
	Status int
	// UpstreamRequestID is Azure's id for the last attempt (apim-request-id,
	// else x-request-id): what Azure support asks for.
	UpstreamRequestID string
}

// Client calls chat completions. It is safe for concurrent use.
type Client struct {
	pl         runtime.Pipeline
	cred       azcore.TokenCredential // signIn; nil with an API key
	url        string
	path       string // url's path, which a 404's error names
	deployment string
	v1         bool
	tokenField string
	rule       retry.Upstream
}

// New builds a Client. It fails when neither an API key nor a credential is
// given, or the endpoint is missing.
func New(o Options) (*Client, error) {
	if o.Endpoint == nil || o.Deployment == "" {
		return nil, errors.New("aoai: endpoint and deployment are required")
	}
	// Credentials over http are refused by azcore unless allowed; allow them
	// only for a loopback endpoint (the simulator), as config also insists.
	insecure := o.Endpoint.Scheme == "http"
	var (
		auth policy.Policy
		cred azcore.TokenCredential // nil with an API key
	)
	switch {
	case o.APIKey != "":
		auth = runtime.NewKeyCredentialPolicy(azcore.NewKeyCredential(o.APIKey), "api-key",
			&runtime.KeyCredentialPolicyOptions{InsecureAllowCredentialWithHTTP: insecure})
	case o.Credential != nil:
		cred = signIn{o.Credential}
		auth = runtime.NewBearerTokenPolicy(cred, []string{Scope},
			&policy.BearerTokenOptions{InsecureAllowCredentialWithHTTP: insecure})
	default:
		return nil, errors.New("aoai: an API key or a credential is required")
	}
	if o.Transport == nil {
		o.Transport = newHTTPClient()
	}
	// azcore's telemetry policy sets the User-Agent (azsdk-go-timebox/v1
	// (<go version>; <os>)), by which Azure's logs tell timebox's requests
	// from others'.
	pl := runtime.NewPipeline("timebox", "v1", runtime.PipelineOptions{PerRetry: []policy.Policy{auth, attemptHeaders{}}},
		&policy.ClientOptions{
			Transport: o.Transport,
			// One layer of retries: ours. azcore would otherwise retry 429
			// and 5xx three times on its own, multiplying slow failures.
			Retry: policy.RetryOptions{MaxRetries: -1},
		})

	base := strings.TrimRight(o.Endpoint.String(), "/")
	u := base + "/openai/v1/chat/completions"
	if o.APIVersion != "" {
		u = base + "/openai/deployments/" + url.PathEscape(o.Deployment) + "/chat/completions?api-version=" + url.QueryEscape(o.APIVersion)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("aoai: endpoint: %w", err)
	}
	return &Client{
		pl:         pl,
		cred:       cred,
		url:        u,
		path:       parsed.Path,
		deployment: o.Deployment,
		v1:         o.APIVersion == "",
		tokenField: modelfacts.Lookup(cmp.Or(o.Model, o.Deployment)).TokenField,
		rule:       retry.Upstream{MaxAttempts: o.MaxAttempts, FastFailure: o.FastFailure},
	}, nil
}

// Complete sends req and returns the answer, always streamed from Azure
// OpenAI (stream: true, with usage) so that the text so far is never lost:
// a failure after the first piece of text carries it in Error.Partial.
// Throttled attempts (429) are retried while the wait they ask for fits the
// time left in ctx and MaxAttempts allows; nothing else is retried here
// (callers retry fast 5xx), and nothing at all once text has arrived (it
// would be written twice). Failures are *Error; when ctx ends the *Error
// wraps ctx's error.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, fmt.Errorf("complete chat: %w", err)
	}
	a := &call{Context: context.WithValue(ctx, requestIDKey{}, req.RequestID), c: c, req: req, body: body}
	for {
		preq, err := a.request()
		if err != nil {
			return nil, err
		}
		if a.settle(c.pl.Do(preq)) {
			return a.resp, a.err
		}
	}
}

// call is one Complete: what its attempts share, and its outcome.
type call struct {
	context.Context // the caller's, with the request id for attemptHeaders
	c               *Client
	req             *Request
	body            []byte
	n               int       // attempts so far
	start           time.Time // of the last attempt
	resp            *Response
	err             error
}

// request begins an attempt: its request with the call's body, the
// answer's body left for settle (azcore's SkipBodyDownload).
func (a *call) request() (*policy.Request, error) {
	a.n++
	a.start = time.Now()
	req, err := runtime.NewRequest(a.Context, http.MethodPost, a.c.url)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(a.body)), "application/json"); err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	// The answer is read here, not by azcore, so that text is handed on as
	// it arrives.
	runtime.SkipBodyDownload(req)
	return req, nil
}

// settle ends an attempt that got hr or failed with err: it reads the
// answer, and decides whether the call is done (resp or err set) or tries
// again (after the wait the rule says).
func (a *call) settle(hr *http.Response, err error) (done bool) {
	var h http.Header
	if err != nil {
		err = sendFailure(a.Context, err)
	} else {
		a.resp, h, err = a.c.read(a.Context, hr, a.req)
	}
	if err == nil {
		a.resp.Attempts, a.resp.UpstreamRequestID = a.n, upstreamRequestID(h)
		return true
	}
	again, err := a.c.retry(a.Context, a.n, time.Since(a.start), h, err)
	if !again {
		a.err = err
	}
	return !again
}

// upstreamRequestID is Azure's own id for an attempt, when it answered.
func upstreamRequestID(h http.Header) string {
	return cmp.Or(h.Get("apim-request-id"), h.Get("x-request-id"))
}

// retry decides whether a failed attempt (it took elapsed and ended with
// err) is tried again, and waits for the time the rule says first. It
// returns false with the failure to return: a *Error, unless err was not
// one.
func (c *Client) retry(ctx context.Context, attempt int, elapsed time.Duration, h http.Header, err error) (bool, error) {
	var e *Error
	if !errors.As(err, &e) {
		return false, err
	}
	e.Attempts, e.Elapsed, e.UpstreamRequestID = attempt, elapsed, upstreamRequestID(h)
	if e.Status == http.StatusNotFound {
		e.Path = c.path
	}
	if e.Kind == KindCanceled || e.Kind == KindCredential {
		return false, e
	}
	d := c.rule.Decide(retry.Attempt{Number: attempt, Elapsed: elapsed, Status: e.ruleStatus(), Header: h, Remaining: budget.Remaining(ctx)})
	if d.Timeout {
		// The time is spent and so is the money (Azure bills
		// processing): the caller must not try the same again.
		e.Kind = KindSlowFailure
		return false, e
	}
	if !d.Retry {
		if e.Kind == KindThrottled {
			// The caller is told when to come back: the wait that did
			// not fit, at least what Azure asked and a second.
			e.RetryAfter = max(e.RetryAfter, d.Wait, time.Second)
		}
		return false, e
	}
	t := time.NewTimer(d.Wait)
	select {
	case <-ctx.Done():
		t.Stop()
		e.Kind, e.Err = KindCanceled, fmt.Errorf("waiting to retry: %w", ctx.Err())
		return false, e
	case <-t.C:
		return true, nil
	}
}

// body is what Azure OpenAI is sent: the deployment on the v1 API (the
// deployments API has it in the path), the messages, the token limit under
// the name the deployment's model takes (modelfacts' TokenField), and
// always a stream whose last chunk carries the usage; a passthrough's
// members (its messages and fields) in place of the messages, last. It is
// written out rather than encoded as one value: a passthrough's members
// are JSON already, which encoding them again would only scan and copy a
// second time.
func (c *Client) body(req *Request) ([]byte, error) {
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
func (c *Client) read(ctx context.Context, resp *http.Response, req *Request) (*Response, http.Header, error) {
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
