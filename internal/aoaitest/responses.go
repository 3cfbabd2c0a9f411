package aoaitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// This file holds the Responses API (v1 path only, as Azure serves it):
// create, retrieve, resume, cancel and delete. See generation.go for the
// response itself.

// responsesPath is the Responses API's root.
const responsesPath = "/openai/v1/responses"

// The Responses API's request limits: metadata as OpenAI's reference
// bounds it, and the least max_output_tokens it accepts.
const (
	maxMetadataKeys   = 16
	maxMetadataKey    = 64
	maxMetadataValue  = 512
	minOutputTokens   = 16
	maxStartingAfter  = 1 << 30
	responseIDMaxSize = 128
)

// serveResponses routes a Responses API request, after the credentials.
func (ex *exchange) serveResponses() {
	ex.apiVersion = "v1"
	auth, ok := ex.s.authorize(ex.r.Header.Get("api-key"), ex.r.Header.Get("Authorization"))
	if !ok {
		ex.unauthorized()
		return
	}
	ex.rec.Auth = auth
	rest := strings.TrimPrefix(ex.r.URL.EscapedPath(), responsesPath)
	if rest == "" {
		if ex.r.Method != http.MethodPost {
			ex.gatewayError(http.StatusNotFound, codeMessage{Code: "404", Message: msgNotFound})
			return
		}
		ex.create()
		return
	}
	id, call, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	if !strings.HasPrefix(rest, "/") || id == "" || len(id) > responseIDMaxSize {
		ex.gatewayError(http.StatusNotFound, codeMessage{Code: "404", Message: msgNotFound})
		return
	}
	ex.rec.ResponseID = id
	switch {
	case call == "" && ex.r.Method == http.MethodGet:
		if ex.r.URL.Query().Get("stream") == "true" {
			ex.resume(id)
			return
		}
		ex.retrieve(id)
	case call == "cancel" && ex.r.Method == http.MethodPost:
		ex.cancelResponse(id)
	case call == "" && ex.r.Method == http.MethodDelete:
		ex.deleteResponse(id)
	default:
		ex.gatewayError(http.StatusNotFound, codeMessage{Code: "404", Message: msgNotFound})
	}
}

// create starts a response: background, streamed or neither, in the
// order of the Chat Completions checks (body, deployment, directive, rate
// limit, context window).
func (ex *exchange) create() {
	req, ok := ex.readCreate()
	if !ok {
		return
	}
	msgs := make([]tokens.Message, 0, len(req.Input)+1)
	var texts []string
	if req.Instructions != nil {
		msgs = append(msgs, tokens.Message{Role: "system", Content: *req.Instructions})
		texts = append(texts, *req.Instructions)
	}
	for _, m := range req.Input {
		msgs = append(msgs, tokens.Message{Role: m.Role, Content: string(m.Content)})
		texts = append(texts, string(m.Content))
	}
	ds, err := FindDirectives(strings.Join(texts, "\n"))
	if err != nil {
		ex.invalid("Simulator: "+err.Error(), "input", "")
		return
	}
	ds = slices.DeleteFunc(ds, func(d Directive) bool { return !d.appliesTo(ex.s.opts.Backend) })
	counter, err := ex.s.counter(ex.model)
	if err != nil {
		ex.serverError(http.StatusInternalServerError)
		return
	}
	prompt := counter.Prompt(msgs)
	maxOut := 0
	if req.MaxOutputTokens != nil {
		maxOut = *req.MaxOutputTokens
	}
	ex.rec.MaxTokens = maxOut
	g := &generation{s: ex.s, id: newResponseID("resp_"), msgID: newResponseID("msg_"), deployment: ex.deployment,
		created: time.Now(), stream: req.Stream, prompt: prompt, firstToken: ex.s.opts.TimeToFirstToken}
	var callFault Directive
	var long time.Duration
	for _, d := range ds {
		switch {
		case d.On != "":
			g.calls = append(g.calls, d)
		case d.Kind == KindLong:
			long = d.Span
		case d.Kind == KindStale:
			g.stale = d.Span
		case d.Kind == KindRace:
			g.race = true
		case d.Kind == KindKeepalive:
			g.keepalive = d.Every
		case d.Kind == KindError, d.Kind == KindFailed, d.Kind == KindIncomplete:
			g.fault = d
		case d.Kind == KindSlow:
			g.firstToken = d.Delay
		default:
			callFault = d
		}
	}
	if callFault.Kind != "" && !callFault.MidStream && ex.s.fire(callFault) {
		ex.rec.Fault = string(callFault.Kind)
		ex.fault(callFault)
		return
	}
	// A reset with tokens=N drops the create's stream after N pieces of
	// text; a background generation runs on.
	cut := -1
	if callFault.Kind == KindReset && callFault.MidStream && req.Stream && ex.s.fire(callFault) {
		ex.rec.Fault, cut = string(callFault.Kind), callFault.Tokens
	}
	v, ok := ex.admitAndFit(prompt, maxOut, "input")
	if !ok {
		return
	}
	g.ans = newAnswer(counter, answerText(lastUserText(req.Input), ex.model), maxOut)
	if g.ans.tokens > 0 {
		g.span = long
	}
	g.template = ex.template(g, req)
	ex.s.keep(g)
	ex.rec.ResponseID = g.id

	ctx := context.Background()
	if !req.Background {
		// Not in background mode, the response lives as long as its call.
		ctx = ex.r.Context()
	}
	created := g.start(ctx)
	switch {
	case req.Stream:
		ex.streamEvents(g, -1, v, cut)
	case req.Background:
		ex.successHeaders(v, "application/json")
		ex.writeJSON(http.StatusOK, created)
	default:
		select {
		case <-g.done:
		case <-ex.r.Context().Done():
			ex.rec.Cancelled = true
			return
		}
		ex.successHeaders(v, "application/json")
		ex.writeJSON(http.StatusOK, g.object())
	}
}

// readCreate reads and checks a create's body, answering the first
// problem; when it returns true, ex.deployment and ex.model are set.
func (ex *exchange) readCreate() (responsesRequest, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(ex.w, ex.r.Body, maxBody))
	if err != nil {
		if ex.r.Context().Err() != nil {
			ex.rec.Cancelled = true
			return responsesRequest{}, false
		}
		ex.invalid(fmt.Sprintf("The request body could not be read: %v", err), "", "")
		return responsesRequest{}, false
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(strings.TrimSpace(string(body))) == 0 {
			ex.invalid(msgBadJSON, "", "")
		} else {
			ex.invalid(fmt.Sprintf("Invalid request body: %v", err), "", "")
		}
		return responsesRequest{}, false
	}
	if req.Model == "" {
		ex.invalid("you must provide a model parameter", "model", "")
		return responsesRequest{}, false
	}
	if !ex.known(req.Model) {
		return responsesRequest{}, false
	}
	ex.deployment, ex.model = req.Model, ex.s.model(req.Model)
	ex.rec.Deployment, ex.rec.Stream = req.Model, req.Stream
	switch {
	case req.MaxOutputTokens != nil && *req.MaxOutputTokens < minOutputTokens:
		ex.invalid(fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= %d, but got %d instead.", minOutputTokens, *req.MaxOutputTokens), "max_output_tokens", "integer_below_min_value")
	case req.Background && req.Store != nil && !*req.Store:
		ex.invalid(msgNeedsStore, "store", "")
	case len(req.Metadata) > maxMetadataKeys:
		ex.invalid(fmt.Sprintf("Invalid 'metadata': too many properties. Expected an object with at most %d properties, but got an object with %d properties instead.", maxMetadataKeys, len(req.Metadata)), "metadata", "object_above_max_properties")
	case len(req.Input) == 0:
		ex.invalid("Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.", "input", "empty_array")
	default:
		for k, v := range req.Metadata {
			if len(k) > maxMetadataKey || len(v) > maxMetadataValue {
				ex.invalid(fmt.Sprintf("Invalid 'metadata': keys may be at most %d characters and values at most %d.", maxMetadataKey, maxMetadataValue), "metadata", "")
				return responsesRequest{}, false
			}
		}
		return req, true
	}
	return responsesRequest{}, false
}

// template is the response object's fields fixed at create.
func (ex *exchange) template(g *generation, req responsesRequest) responseObject {
	var effort *string
	if modelfacts.Lookup(ex.model).Reasoning {
		effort = strPtr("medium")
	}
	meta := req.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	o := responseObject{
		ID: g.id, Object: "response", CreatedAt: g.created.Unix(), Background: req.Background,
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: ex.model,
		ParallelToolCalls: true, Reasoning: reasoningConfig{Effort: effort}, ServiceTier: "auto",
		Store: req.Store == nil || *req.Store, Temperature: 1, ToolChoice: "auto", Tools: []any{}, TopP: 1,
		Truncation: "disabled", Metadata: meta,
	}
	o.Text.Format.Type, o.Text.Verbosity = "text", "medium"
	return o
}

// lookup returns the response the call names, answering 404 when there is
// none, and plays the call's own fault (a directive with on=call); false
// when either answered.
func (ex *exchange) lookup(id, call string) (*generation, bool) {
	g := ex.s.generation(id)
	if g == nil {
		ex.modelHeaders()
		ex.writeJSON(http.StatusNotFound, responseNotFound(id))
		return nil, false
	}
	ex.deployment, ex.model = g.deployment, g.template.Model
	ex.rec.Deployment = g.deployment
	for _, d := range g.calls {
		if d.On == call && ex.s.fire(d) {
			ex.rec.Fault = string(d.Kind)
			ex.fault(d)
			return nil, false
		}
	}
	return g, true
}

// retrieve answers the response as it is now.
func (ex *exchange) retrieve(id string) {
	g, ok := ex.lookup(id, "retrieve")
	if !ok {
		return
	}
	ex.successHeaders(ex.s.peek(g.deployment), "application/json")
	ex.writeJSON(http.StatusOK, g.object())
}

// resume streams a response's events after starting_after (all of them
// without it), then the new ones as they come.
func (ex *exchange) resume(id string) {
	g, ok := ex.lookup(id, "resume")
	if !ok {
		return
	}
	ex.rec.Stream = true
	after := -1
	if v := ex.r.URL.Query().Get("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxStartingAfter {
			ex.invalid(fmt.Sprintf("Invalid 'starting_after': %q is not a non-negative integer.", v), "starting_after", "")
			return
		}
		after = n
	}
	switch {
	case !g.stream:
		ex.invalid(msgNotStreamed, "stream", "")
	case g.stale > 0 && time.Since(g.created) > g.stale:
		ex.invalid(msgStale, "", "")
	default:
		ex.streamEvents(g, after, ex.s.peek(g.deployment), -1)
	}
}

// cancelResponse cancels a background response and answers it as it
// ended; cancelling one that has ended answers it as it is (Azure's
// how-to: cancelling is idempotent).
func (ex *exchange) cancelResponse(id string) {
	g, ok := ex.lookup(id, "cancel")
	if !ok {
		return
	}
	if !g.template.Background {
		ex.invalid(msgNotBackground, "", "")
		return
	}
	o := g.cancel()
	ex.successHeaders(ex.s.peek(g.deployment), "application/json")
	ex.writeJSON(http.StatusOK, o)
}

// deleteResponse forgets a response, stopping it if it runs.
func (ex *exchange) deleteResponse(id string) {
	if !ex.s.forget(id) {
		ex.modelHeaders()
		ex.writeJSON(http.StatusNotFound, responseNotFound(id))
		return
	}
	ex.modelHeaders()
	ex.writeJSON(http.StatusOK, deletedResponse{ID: id, Object: "response.deleted", Deleted: true})
}

// textDelta marks an event of text.
var textDelta = []byte(`"response.output_text.delta"`)

// streamEvents sends g's events after sequence number after, as they come,
// until the response ends or the client goes away; with cut 0 or more, it
// drops the connection after cut text deltas, before the next. A client
// that goes away stops the response only when it is not in background
// mode (its context is the request's).
func (ex *exchange) streamEvents(g *generation, after int, v verdict, cut int) {
	ex.successHeaders(v, "text/event-stream")
	ex.rec.Status = http.StatusOK
	ex.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(ex.w)
	// The headers go at once, as Azure's do, though no event may be ready.
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		ex.rec.Cancelled = true
		return
	}
	ctx := ex.r.Context()
	next := after + 1
	for {
		evs, changed, ended := g.since(next)
		for _, ev := range evs {
			if cut >= 0 && bytes.Contains(ev, textDelta) {
				if cut == 0 {
					_ = rc.Flush()
					panic(http.ErrAbortHandler) // the connection dropped
				}
				cut--
			}
			if _, err := ex.w.Write(ev); err != nil {
				ex.rec.Cancelled = true
				return
			}
		}
		next += len(evs)
		if len(evs) > 0 {
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				ex.rec.Cancelled = true
				return
			}
		}
		if ended {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			ex.rec.Cancelled = true
			return
		}
	}
}
