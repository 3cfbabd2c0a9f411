package aoaitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// maxBody caps a request body; Azure's own limit is larger, but no test of
// this project needs more.
const maxBody = 32 << 20

// region is the x-ms-region every answer reports.
const region = "East US"

// exchange is one request being answered.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	rec   *Record
	reset bool     // a reset directive dropped the connection
	conn  net.Conn // the hijacked connection, closed once the record is kept

	apiVersion string // "v1" on the v1 path
	deployment string
	model      string
}

// ServeHTTP answers one chat completions request the way Azure OpenAI does;
// see the package documentation for the routes and the checks' order.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := Record{
		Method:          r.Method,
		Path:            r.URL.Path,
		Query:           r.URL.RawQuery,
		RequestID:       newUUID(),
		ClientRequestID: r.Header.Get("x-ms-client-request-id"),
		Start:           start,
	}
	s.begin()
	ex := &exchange{s: s, w: w, r: r, rec: &rec}
	// Deferred so that the reset directive's panic(http.ErrAbortHandler),
	// used where the connection cannot be hijacked, is still recorded. The
	// record is kept before a hijacked connection is closed: net/http ends
	// every other answer only after ServeHTTP returns, so in both cases a
	// client that has the whole answer (or the reset) finds the request in
	// Stats and Requests.
	defer func() {
		rec.Elapsed = time.Since(start)
		s.finish(rec, ex.reset)
		if ex.conn != nil {
			_ = ex.conn.Close()
		}
	}()
	if strings.HasPrefix(r.URL.Path, responsesPath) {
		ex.serveResponses()
		return
	}
	ex.serve()
}

// serve runs the checks in Azure's order: route, credentials, deployment,
// body (in accept), then directive, rate limit, context window, and the
// answer.
func (ex *exchange) serve() {
	req, ok := ex.accept()
	if !ok {
		return
	}
	var d Directive
	msgs := make([]tokens.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = tokens.Message{Role: m.Role, Content: string(m.Content)}
		found, err := FindDirectives(string(m.Content))
		if err != nil {
			ex.invalid("Simulator: "+err.Error(), "messages", "")
			return
		}
		for _, f := range found {
			if f.appliesTo(ex.s.opts.Backend) {
				d = f
			}
		}
	}
	if d.Kind.responsesOnly() || d.On != "" {
		// The Responses API's own: a chat completion has no generation
		// for them to shape.
		d = Directive{}
	}
	counter, err := ex.s.counter(ex.model)
	if err != nil {
		ex.serverError(http.StatusInternalServerError)
		return
	}
	prompt := counter.Prompt(msgs)
	ex.rec.PromptTokens = prompt
	maxTokens := ex.rec.MaxTokens

	firstByte := ex.s.opts.TimeToFirstToken
	filterAnswer := false
	var midStream Directive // a stall or reset after some tokens
	if d.Kind != "" && ex.s.fire(d) {
		ex.rec.Fault = string(d.Kind)
		switch {
		case d.Kind == KindSlow:
			firstByte = d.Delay
		case d.Kind == KindFilter && d.Completion:
			filterAnswer = true
		case d.MidStream:
			midStream = d
		default:
			ex.fault(d)
			return
		}
	}

	v, ok := ex.admitAndFit(prompt, maxTokens, "messages")
	if !ok {
		return
	}
	ans := newAnswer(counter, answerText(lastUserText(req.Messages), ex.model), maxTokens)
	if name, ok := toolToCall(req); ok {
		ans = newToolCall(counter, name, lastUserText(req.Messages), maxTokens)
	}
	switch {
	case filterAnswer && d.MidStream:
		ans = ans.filteredAfter(d.Tokens)
	case filterAnswer:
		ans = ans.filtered()
	}
	ex.rec.CompletionTokens = ans.tokens
	if req.Stream {
		ex.stream(ans, prompt, firstByte, v, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, midStream)
		return
	}
	if midStream.Kind != "" {
		// Not streamed: the fault strikes when those tokens would have
		// been generated, before any byte of the answer.
		if ex.wait(firstByte + time.Duration(midStream.Tokens)*ex.s.opts.PerToken) {
			ex.fault(midStream)
		}
		return
	}
	if !ex.wait(firstByte + time.Duration(ans.tokens)*ex.s.opts.PerToken) {
		return
	}
	ex.successHeaders(v, "application/json")
	ex.writeJSON(http.StatusOK, ex.completion(ans, prompt))
}

// accept runs the gateway's checks and reads the body: route, credentials,
// deployment, then a valid chat request. It answers the first failure and
// reports whether the request got through; when it did, ex.deployment,
// ex.model and ex.rec are filled in.
func (ex *exchange) accept() (chatRequest, bool) {
	deployment, v1, ok := route(ex.r)
	if !ok {
		ex.gatewayError(http.StatusNotFound, codeMessage{Code: "404", Message: msgNotFound})
		return chatRequest{}, false
	}
	ex.apiVersion = ex.r.URL.Query().Get("api-version")
	if v1 {
		ex.apiVersion = "v1"
	}
	auth, ok := ex.s.authorize(ex.r.Header.Get("api-key"), ex.r.Header.Get("Authorization"))
	if !ok {
		// Rejected at the gateway: only apim-request-id and Content-*.
		ex.unauthorized()
		return chatRequest{}, false
	}
	ex.rec.Auth = auth
	if !v1 && !ex.known(deployment) {
		return chatRequest{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(ex.w, ex.r.Body, maxBody))
	if err != nil {
		if ex.r.Context().Err() != nil {
			ex.rec.Cancelled = true
			return chatRequest{}, false
		}
		ex.invalid(fmt.Sprintf("The request body could not be read: %v", err), "", "")
		return chatRequest{}, false
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || len(bytes.TrimSpace(body)) == 0 {
			ex.invalid(msgBadJSON, "", "")
		} else {
			ex.invalid(fmt.Sprintf("Invalid request body: %v", err), "", "")
		}
		return chatRequest{}, false
	}
	if v1 {
		if req.Model == "" {
			ex.invalid("you must provide a model parameter", "model", "")
			return chatRequest{}, false
		}
		deployment = req.Model
		if !ex.known(deployment) {
			return chatRequest{}, false
		}
	}
	ex.deployment = deployment
	ex.model = ex.s.model(deployment)
	ex.rec.Deployment = deployment
	ex.rec.Stream = req.Stream
	maxTokens, ok := ex.maxTokens(req)
	if !ok {
		return chatRequest{}, false
	}
	ex.rec.MaxTokens = maxTokens
	if len(req.Messages) == 0 {
		ex.invalid("[] is too short - 'messages'", "messages", "")
		return chatRequest{}, false
	}
	return req, true
}

// route reads the deployment from a deployments path, or reports the v1
// path; ok is false for every other path and method, and for a deployments
// path without api-version (Azure answers those 404 Resource not found).
func route(r *http.Request) (deployment string, v1, ok bool) {
	if r.Method != http.MethodPost {
		return "", false, false
	}
	p := r.URL.EscapedPath()
	if p == "/openai/v1/chat/completions" {
		return "", true, true
	}
	rest, ok := strings.CutPrefix(p, "/openai/deployments/")
	if !ok {
		return "", false, false
	}
	name, ok := strings.CutSuffix(rest, "/chat/completions")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false, false
	}
	name, err := url.PathUnescape(name)
	if err != nil || r.URL.Query().Get("api-version") == "" {
		return "", false, false
	}
	return name, false, true
}

// known answers the recorded 404 DeploymentNotFound for an unknown
// deployment and reports whether it was known.
func (ex *exchange) known(deployment string) bool {
	if ex.s.deployments[deployment] {
		return true
	}
	ex.rec.Deployment = deployment
	ex.gatewayError(http.StatusNotFound, codeMessage{Code: "DeploymentNotFound", Message: msgNoDeployment})
	return false
}

// maxTokens returns max_completion_tokens or else max_tokens (0 when
// neither is set), answering the 400 Azure gives for a value below 1, and
// the one a reasoning model gives for max_tokens.
func (ex *exchange) maxTokens(req chatRequest) (int, bool) {
	if req.MaxTokens != nil && modelfacts.Lookup(ex.model).TokenField == modelfacts.MaxCompletionTokens {
		ex.invalid("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
		return 0, false
	}
	name, p := "max_tokens", req.MaxTokens
	if req.MaxCompletionTokens != nil {
		name, p = "max_completion_tokens", req.MaxCompletionTokens
	}
	if p == nil {
		return 0, true
	}
	if *p < 1 {
		ex.invalid(fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", name, *p), name, "integer_below_min_value")
		return 0, false
	}
	return *p, true
}

// wait pauses for d unless the client goes away first; it reports whether
// the exchange should go on, and records a cancellation.
func (ex *exchange) wait(d time.Duration) bool {
	ctx := ex.r.Context()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		ex.rec.Cancelled = true
		return false
	}
	return true
}
