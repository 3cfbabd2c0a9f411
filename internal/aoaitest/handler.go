package aoaitest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

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
		Path:            r.URL.Path,
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
		found, ok, err := FindDirective(string(m.Content))
		if err != nil {
			ex.invalid("Simulator: "+err.Error(), "messages", "")
			return
		}
		if ok {
			d = found
		}
	}
	counter, codec, err := ex.s.counter(ex.model)
	if err != nil {
		ex.serverError(http.StatusInternalServerError)
		return
	}
	prompt := counter.Prompt(msgs)
	ex.rec.PromptTokens = prompt
	maxTokens := ex.rec.MaxTokens

	firstByte := ex.s.opts.TimeToFirstToken
	filterAnswer := false
	if d.Kind != "" && ex.s.fire(d) {
		ex.rec.Fault = string(d.Kind)
		switch {
		case d.Kind == KindSlow:
			firstByte = d.Delay
		case d.Kind == KindFilter && d.Completion:
			filterAnswer = true
		default:
			ex.fault(d)
			return
		}
	}

	v := ex.s.admit(ex.deployment, prompt+maxTokens)
	if !v.ok {
		wait := v.wait
		if v.never {
			// Azure's answer to a request that can never fit the quota.
			wait = 86400 * time.Second
		}
		ex.throttled(wait, v)
		return
	}
	if window := ex.s.window(ex.model); prompt+maxTokens > window {
		ex.setRateHeaders(v)
		ex.model400(invalidRequest{
			Message: contextMessage(window, prompt, maxTokens),
			Type:    "invalid_request_error",
			Param:   strPtr("messages"),
			Code:    strPtr("context_length_exceeded"),
		})
		return
	}
	ans := newAnswer(codec, answerText(lastUserText(req.Messages), ex.model), maxTokens)
	if filterAnswer {
		ans = ans.filtered()
	}
	ex.rec.CompletionTokens = ans.tokens
	if req.Stream {
		ex.stream(ans, prompt, firstByte, v, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
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
// neither is set), answering the 400 Azure gives for a value below 1.
func (ex *exchange) maxTokens(req chatRequest) (int, bool) {
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

// fault plays a directive other than slow.
func (ex *exchange) fault(d Directive) {
	if d.Kind == KindHang {
		<-ex.r.Context().Done()
		ex.rec.Cancelled = true
		return
	}
	if !ex.wait(d.After) {
		return
	}
	switch d.Kind {
	case KindStatus:
		switch {
		case d.Code == http.StatusTooManyRequests:
			// A 429 without retry-after, as some captures show.
			ex.w.Header().Set("policy-id", "DeploymentRatelimit-Token")
			ex.gatewayError(d.Code, codeMessage{Code: "429", Message: rateLimitMessage("token", ex.apiVersion, 1)})
		case d.Code == http.StatusUnauthorized:
			ex.unauthorized()
		case d.Code == http.StatusNotFound:
			ex.gatewayError(d.Code, codeMessage{Code: "DeploymentNotFound", Message: msgNoDeployment})
		case d.Code >= 500:
			ex.serverError(d.Code)
		default:
			ex.gatewayError(d.Code, codeMessage{Code: strconv.Itoa(d.Code), Message: http.StatusText(d.Code)})
		}
	case KindThrottle:
		ex.throttled(d.RetryAfter, ex.s.peek(ex.deployment))
	case KindFilter:
		ex.setRateHeaders(ex.s.peek(ex.deployment))
		ex.w.Header().Set("ms-azureml-model-error-reason", "model_error")
		ex.w.Header().Set("ms-azureml-model-error-statuscode", "400")
		e := contentFilterError{Message: msgFiltered, Param: "prompt", Code: "content_filter", Status: 400}
		e.InnerError.Code = "ResponsibleAIPolicyViolation"
		e.InnerError.ContentFilterResult = safeResults()
		e.InnerError.ContentFilterResult.Violence = filterResult{Filtered: true, Severity: "medium"}
		ex.model400(e)
	case KindMalformed:
		ans := answer{pieces: []piece{{text: "This answer is cut short on purpose.", tokens: 8}}, tokens: 8, finish: "stop"}
		full, _ := json.Marshal(ex.completion(ans, ex.rec.PromptTokens))
		ex.successHeaders(ex.s.peek(ex.deployment), "application/json")
		ex.rec.Status = http.StatusOK
		ex.w.WriteHeader(http.StatusOK)
		_, _ = ex.w.Write(full[:len(full)/2])
	case KindReset:
		ex.resetConn()
	}
}

// resetConn takes the connection over so that ServeHTTP closes it without
// an answer: an RST on TCP.
func (ex *exchange) resetConn() {
	ex.reset = true
	conn, _, err := http.NewResponseController(ex.w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2, a recorder): net/http's own way to drop
		// the connection without a response.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST instead of FIN
	}
	ex.conn = conn
}

// unauthorized answers the recorded 401: rejected at the gateway, so only
// apim-request-id and Content-* headers, and plain JSON even for a stream.
func (ex *exchange) unauthorized() {
	ex.w.Header().Set("apim-request-id", ex.rec.RequestID)
	ex.writeJSON(http.StatusUnauthorized, errorBody{Error: codeMessage{Code: "401", Message: msgUnauthorized}})
}

// throttled answers 429 asking the client to wait.
func (ex *exchange) throttled(wait time.Duration, v verdict) {
	secs := int64(math.Ceil(wait.Seconds()))
	h := ex.w.Header()
	h.Set("retry-after", strconv.FormatInt(secs, 10))
	h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(v.remainingRequests))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(v.remainingTokens))
	limit := "token"
	if v.callRate {
		// The call-rate policy-id is named by analogy with the recorded
		// token one.
		limit = "call"
		h.Set("policy-id", "DeploymentRatelimit-Call")
	} else {
		// Azure's header, extra hyphen included (chat_429_token_rate_limit.json).
		h.Set("x-rate-limit-reset-tokens", strconv.FormatInt(secs, 10))
		h.Set("policy-id", "DeploymentRatelimit-Token")
	}
	ex.gatewayError(http.StatusTooManyRequests, codeMessage{Code: "429", Message: rateLimitMessage(limit, ex.apiVersion, secs)})
}

// gatewayError answers a {"error":{"code","message"}} body with the
// gateway's headers.
func (ex *exchange) gatewayError(status int, body codeMessage) {
	ex.baseHeaders()
	ex.writeJSON(status, errorBody{Error: body})
}

// invalid answers a 400 invalid_request_error.
func (ex *exchange) invalid(msg, param, code string) {
	e := invalidRequest{Message: msg, Type: "invalid_request_error"}
	if param != "" {
		e.Param = strPtr(param)
	}
	if code != "" {
		e.Code = strPtr(code)
	}
	ex.model400(e)
}

// model400 answers a 400 from the model with its headers.
func (ex *exchange) model400(e any) {
	ex.modelHeaders()
	ex.writeJSON(http.StatusBadRequest, errorBody{Error: e})
}

// serverError answers a 5xx.
func (ex *exchange) serverError(code int) {
	ex.modelHeaders()
	ex.writeJSON(code, serverErrorBody(code, ex.rec.RequestID))
}

// baseHeaders sets what every answer but the gateway's 401 carries.
func (ex *exchange) baseHeaders() {
	h := ex.w.Header()
	h.Set("apim-request-id", ex.rec.RequestID)
	h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("x-ms-region", region)
}

// modelHeaders sets what every answer from past the gateway (200, a model's
// 400, a 5xx) carries besides baseHeaders: the client request id echoed
// ("Not-Set" when none was sent) and a fresh x-request-id.
func (ex *exchange) modelHeaders() {
	ex.baseHeaders()
	cid := ex.rec.ClientRequestID
	if cid == "" {
		cid = "Not-Set"
	}
	h := ex.w.Header()
	h.Set("x-ms-client-request-id", cid)
	h.Set("x-request-id", newUUID())
}

// setRateHeaders reports the deployment's quota.
func (ex *exchange) setRateHeaders(v verdict) {
	h := ex.w.Header()
	if ex.s.opts.TPM > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(v.limitRequests))
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(v.limitTokens))
	}
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(v.remainingRequests))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(v.remainingTokens))
}

// successHeaders sets the headers of a 200.
func (ex *exchange) successHeaders(v verdict, contentType string) {
	ex.modelHeaders()
	ex.setRateHeaders(v)
	h := ex.w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("azureml-model-session", "aoaisim-1")
	h.Set("Cache-Control", "must-revalidate, no-cache")
	h.Set("Content-Type", contentType)
	h.Set("x-envoy-upstream-service-time", strconv.FormatInt(time.Since(ex.rec.Start).Milliseconds(), 10))
	h.Set("x-ms-deployment-name", ex.deployment)
	h.Set("x-ms-rai-invoked", "true")
}

// writeJSON sends a JSON body with its status.
func (ex *exchange) writeJSON(status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		// Every body is one of this package's own types.
		panic(fmt.Sprintf("aoaitest: marshal %T: %v", body, err))
	}
	ex.w.Header().Set("Content-Type", "application/json")
	ex.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	ex.rec.Status = status
	ex.w.WriteHeader(status)
	_, _ = ex.w.Write(b)
}

// completion builds the non-streaming body.
func (ex *exchange) completion(a answer, prompt int) completion {
	return completion{
		Choices: []choice{{
			ContentFilterResults: a.results(len(a.pieces) - 1),
			FinishReason:         a.finish,
			Message:              answerMessage{Content: a.text(), Role: "assistant"},
		}},
		Created:             time.Now().Unix(),
		ID:                  completionID(),
		Model:               ex.model,
		Object:              "chat.completion",
		PromptFilterResults: []promptFilterResult{{ContentFilterResults: safeResults()}},
		Usage:               usage{CompletionTokens: a.tokens, PromptTokens: prompt, TotalTokens: prompt + a.tokens},
	}
}

// stream sends the answer as server-sent events, as
// chat_200_stream_v1_endpoint.json: prompt filter results, the role, one
// delta per token, the finish reason, optionally usage, then [DONE].
func (ex *exchange) stream(a answer, prompt int, firstByte time.Duration, v verdict, includeUsage bool) {
	if !ex.wait(firstByte) {
		return
	}
	ex.successHeaders(v, "text/event-stream")
	ex.rec.Status = http.StatusOK
	ex.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(ex.w)
	send := func(ev any) bool {
		b, err := json.Marshal(ev)
		if err != nil {
			panic(fmt.Sprintf("aoaitest: marshal chunk: %v", err))
		}
		return ex.sendEvent(rc, b)
	}
	jb := safeResults()
	jb.Jailbreak = &jailbreakResult{}
	if !send(chunk{Choices: []chunkChoice{}, PromptFilterResults: []promptFilterResult{{ContentFilterResults: jb}}}) {
		return
	}
	base := chunk{Created: time.Now().Unix(), ID: completionID(), Model: ex.model, Object: "chat.completion.chunk", SystemFingerprint: "fp_aoaisim"}
	if includeUsage {
		// With include_usage every chunk carries "usage": null but the last
		// (OpenAI's chat streaming reference).
		base.Usage = json.RawMessage("null")
	}
	with := func(c chunkChoice) chunk {
		ch := base
		ch.Choices = []chunkChoice{c}
		return ch
	}
	empty := ""
	if !send(with(chunkChoice{ContentFilterResults: struct{}{}, Delta: delta{Content: &empty, Role: "assistant"}})) {
		return
	}
	for i, piece := range a.pieces {
		if !ex.wait(time.Duration(piece.tokens) * ex.s.opts.PerToken) {
			return
		}
		if !send(with(chunkChoice{ContentFilterResults: a.results(i), Delta: delta{Content: &piece.text}})) {
			return
		}
	}
	if !send(with(chunkChoice{ContentFilterResults: struct{}{}, FinishReason: &a.finish})) {
		return
	}
	if includeUsage {
		u := base
		u.Choices = []chunkChoice{}
		u.Usage, _ = json.Marshal(usage{CompletionTokens: a.tokens, PromptTokens: prompt, TotalTokens: prompt + a.tokens})
		if !send(u) {
			return
		}
	}
	ex.sendEvent(rc, []byte("[DONE]"))
}

// sendEvent writes and flushes one "data: ..." event; it reports false, and
// records a cancellation, when the client is gone.
func (ex *exchange) sendEvent(rc *http.ResponseController, data []byte) bool {
	if ex.r.Context().Err() != nil {
		ex.rec.Cancelled = true
		return false
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	if _, err := ex.w.Write(buf); err != nil {
		ex.rec.Cancelled = true
		return false
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		ex.rec.Cancelled = true
		return false
	}
	return true
}

// completionID returns a "chatcmpl-..." id like Azure's.
func completionID() string {
	return "chatcmpl-" + rand.Text()
}

// piece is one streamed delta: whole tokens that together are valid UTF-8.
type piece struct {
	text   string
	tokens int
}

// answer is a completion cut into tokens.
type answer struct {
	pieces []piece
	tokens int
	finish string // "stop", "length" or "content_filter"
}

// filtered returns the answer as the output filter leaves it: cut after
// half its pieces, finish_reason "content_filter".
func (a answer) filtered() answer {
	a.pieces = a.pieces[:min(len(a.pieces), max(1, len(a.pieces)/2))]
	a.tokens = 0
	for _, p := range a.pieces {
		a.tokens += p.tokens
	}
	a.finish = "content_filter"
	return a
}

// results are the content_filter_results of piece i: the last piece of a
// filtered answer is the one that tripped the filter.
func (a answer) results(i int) filterResults {
	r := safeResults()
	if a.finish == "content_filter" && i == len(a.pieces)-1 {
		r.Violence = filterResult{Filtered: true, Severity: "medium"}
	}
	return r
}

func (a answer) text() string {
	var b strings.Builder
	for _, p := range a.pieces {
		b.WriteString(p.text)
	}
	return b.String()
}

// newAnswer tokenizes text with codec and keeps at most limit tokens (0: no
// limit), finishing "length" when it had to cut.
func newAnswer(codec tokenizer.Codec, text string, limit int) answer {
	_, toks, err := codec.Encode(text)
	if err != nil {
		toks = []string{text}
	}
	a := answer{finish: "stop"}
	if limit > 0 && len(toks) > limit {
		toks, a.finish = toks[:limit], "length"
	}
	a.tokens = len(toks)
	// Tokens are byte-level: merge until the text is valid UTF-8, as Azure
	// does before it sends a delta.
	var cur piece
	for _, t := range toks {
		cur.text += t
		cur.tokens++
		if utf8.ValidString(cur.text) {
			a.pieces = append(a.pieces, cur)
			cur = piece{}
		}
	}
	if cur.tokens > 0 {
		a.pieces = append(a.pieces, piece{text: strings.ToValidUTF8(cur.text, ""), tokens: cur.tokens})
	}
	return a
}

// lastUserText returns the last user message without directives.
func lastUserText(msgs []message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return stripDirectives(string(msgs[i].Content))
		}
	}
	return ""
}

var directiveRE = regexp.MustCompile(`\[\[sim:[^\]]*\]\]`)

func stripDirectives(s string) string {
	return strings.TrimSpace(directiveRE.ReplaceAllString(s, ""))
}

var countRE = regexp.MustCompile(`(?i)\bcount to (\d{1,4})\b`)

// maxCount caps the "count to N" answer.
const maxCount = 1000

// answerText is the simulator's deterministic answer: "1, 2, ..., N." for a
// "count to N" prompt (the recordings' prompt), else one short paragraph
// naming the model and quoting the first words of the question.
func answerText(question, model string) string {
	if m := countRE.FindStringSubmatch(question); m != nil {
		n, _ := strconv.Atoi(m[1])
		n = min(max(n, 1), maxCount)
		nums := make([]string, n)
		for i := range nums {
			nums[i] = strconv.Itoa(i + 1)
		}
		return strings.Join(nums, ", ") + "."
	}
	words := strings.Fields(question)
	if len(words) == 0 {
		return fmt.Sprintf("Hello! This is the Azure OpenAI simulator answering as %s. Ask me anything.", model)
	}
	const quoted = 8
	topic := strings.Join(words[:min(len(words), quoted)], " ")
	if len(words) > quoted {
		topic += " ..."
	}
	return fmt.Sprintf("This is the Azure OpenAI simulator answering as %s. You asked: \"%s\" A real deployment would answer here; the simulator gives a short, deterministic reply so that tests and demos can rely on it.", model, topic)
}
