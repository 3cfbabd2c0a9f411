package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/extract"
	"github.com/timebox-dev/timebox/internal/fetch"
	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// SystemPrompt is the server's own instruction; callers cannot replace it.
const SystemPrompt = "You are a helpful assistant for a SharePoint site. Answer the user's question concisely. " +
	"When sources are given, base the answer on them and name the source you used; say so when they do not contain the answer."

// ChatResponse is the 200 answer of POST /api/chat.
type ChatResponse struct {
	Answer           string     `json:"answer"`
	FinishReason     string     `json:"finishReason"`
	Usage            ChatUsage  `json:"usage"`
	RequestID        string     `json:"requestId"`
	ElapsedMs        int64      `json:"elapsedMs"`
	UpstreamAttempts int        `json:"upstreamAttempts"`
	Truncated        bool       `json:"truncated"`
	Dropped          *Truncated `json:"dropped,omitempty"`
}

// ChatUsage is the token accounting of the answer.
type ChatUsage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

// Truncated says what was cut to fit the context window.
type Truncated struct {
	Turns     int      `json:"turns,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	Shortened []string `json:"shortened,omitempty"`
}

// chatRoute is POST /api/chat. It is on the stack while the request waits
// on Azure OpenAI, so it keeps a small frame: the work before the call
// (prepareChat) and after it (answer, streamCall) is in functions of their
// own, and it is a type, not an http.HandlerFunc, which would be one more
// frame (see BenchmarkHeldRequests).
type chatRoute struct{ s *server }

func (h chatRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The calls take few arguments: each call's are spilled to this frame.
	c := h.s.prepareChat(w, r)
	defer c.release()
	switch {
	case c.err != nil:
		c.fail()
	case wantsStream(r):
		c.stream()
	default:
		c.start = time.Now()
		c.resp, c.err = h.s.Chat.Complete(c.r.Context(), &c.req)
		c.answer()
	}
}

// chatCall is a chat request ready for Azure OpenAI, and what it holds
// until it is answered.
type chatCall struct {
	s      *server
	w      http.ResponseWriter
	r      *http.Request      // with the call's context: the request's, or shortened to the caller's timeout
	cancel context.CancelFunc // ends r's context when the caller's timeout shortened it
	ticket *admission.Ticket
	req    aoai.Request
	fit    prompt.Result
	start  time.Time // of the upstream call
	resp   *aoai.Response
	err    error // of preparing the call, then of the call
}

// release gives back what the request held.
func (c *chatCall) release() {
	if c.cancel != nil {
		c.cancel()
	}
	c.ticket.Release()
}

// prepareChat does everything before the upstream call: the caller's
// check and timeout, admission, the body, the material and the prompt. The
// returned chatCall must be released, whether it failed (err) or not.
func (s *server) prepareChat(w http.ResponseWriter, r *http.Request) *chatCall {
	c := &chatCall{s: s, w: w, r: r}
	c.err = s.prepare(c, w, r)
	return c
}

// withContext is r with ctx as its context: r itself when ctx is its
// context already (a caller's timeout that did not shorten the budget), not
// a copy of the request held through the whole wait on Azure OpenAI for
// nothing.
func withContext(r *http.Request, ctx context.Context) *http.Request {
	if ctx == r.Context() {
		return r
	}
	return r.WithContext(ctx)
}

// prepare is prepareChat's work on c.
func (s *server) prepare(c *chatCall, w http.ResponseWriter, r *http.Request) error {
	// A caller that said how long it waits is answered within that even
	// while its tenant's keys are fetched. An invalid value is refused once
	// the caller is known.
	ms, msErr := clientTimeout(r, (s.ClientTimeoutMargin + time.Second).Milliseconds())
	if msErr == nil && ms > 0 {
		var ctx context.Context
		ctx, c.cancel = budget.ShortenForClient(r.Context(), time.Duration(ms)*time.Millisecond, s.ClientTimeoutMargin)
		c.r = withContext(r, ctx)
	}
	if err := s.checkCaller(c.r); err != nil {
		return err
	}
	if msErr != nil {
		return msErr
	}
	ctx := c.r.Context()
	// The request's cost is taken before each commitment (the body
	// before it is read, the material before it is fetched and
	// extracted), and given back when the request ends.
	c.ticket = s.Admission.Ticket()
	if err := c.ticket.Take(admission.BodyCost(r.ContentLength, MaxBodyBytes)); err != nil {
		return err
	}
	req, err := decodeChat(ctx, w, r)
	if err != nil {
		return err
	}
	if err := c.ticket.Take(admission.MaterialCost(len(req.Documents), len(req.URLs), extract.DefaultMaxTextBytes, fetch.DefaultMaxBytes)); err != nil {
		return err
	}
	rec := recordFrom(ctx)
	if (len(req.URLs) > 0 && s.Fetcher == nil) || (len(req.Documents) > 0 && s.Extractor == nil) {
		return invalid("This service does not read pages or documents.")
	}

	maxTokens := s.MaxTokens
	if req.MaxTokens != nil && *req.MaxTokens < maxTokens {
		maxTokens = *req.MaxTokens
	}
	start := time.Now()
	material, err := s.gather(ctx, req)
	if len(req.Documents)+len(req.URLs) > 0 {
		rec.since("material", start)
	}
	if err != nil {
		return err
	}
	start = time.Now()
	fit, err := s.fit(ctx, req, material, maxTokens)
	rec.since("prompt", start)
	if err != nil {
		// A question refused as too large was counted: the log line says
		// how large (promptTokensCounted), though nothing was billed.
		if tooBig := (*prompt.TooLargeError)(nil); errors.As(err, &tooBig) {
			rec.countedPrompt = tooBig.Prompt
		}
		return err
	}
	rec.countedPrompt, rec.truncated = fit.PromptTokens, fit.Truncated
	if fit.PromptTokens == 0 {
		// The messages alone: a closure over fit would move all of it to
		// the heap, held while the request waits on Azure OpenAI.
		sent := fit.Messages
		rec.countPrompt = func() int { return s.Tokens.Prompt(sent) }
	}
	msgs := make([]aoai.Message, len(fit.Messages))
	for i, m := range fit.Messages {
		msgs[i] = aoai.Message{Role: m.Role, Content: m.Content}
	}

	if budget.Remaining(ctx) < min(s.MinUpstreamTime, budget.RequestTime(ctx)/4) {
		// Too little time is left for an answer: no tokens are spent on
		// a call that would be cut. A request given little time in all
		// (a caller in a hurry) needs a quarter of it, not the floor.
		return errNoTimeForUpstream
	}
	c.req = aoai.Request{Messages: msgs, MaxTokens: maxTokens, RequestID: requestID(ctx), OnDelta: rec.firstToken}
	c.fit = fit
	return nil
}

// fail answers the error of preparing the call.
func (c *chatCall) fail() { c.s.fail(c.w, c.r, c.err) }

// stream answers the call as server-sent events (server.stream). It is
// not inlined: its arguments (the request and the fit, 150 bytes) would be
// copied into chatRoute's frame, which is on the stack of every request
// waiting on Azure OpenAI, streamed or not.
//
//go:noinline
func (c *chatCall) stream() { c.s.stream(c.w, c.r, c.req, c.fit) }

// answer writes the answer (not streamed) to the call.
func (c *chatCall) answer() {
	s, ctx := c.s, c.r.Context()
	recordFrom(ctx).since("upstream", c.start)
	if c.err != nil {
		s.fail(c.w, c.r, c.err)
		return
	}
	s.noteAnswer(ctx, *c.resp)
	stampTiming(c.w, c.r)
	writeJSON(c.w, http.StatusOK, chatResponse(ctx, *c.resp, c.fit))
}

// noteAnswer puts a finished answer on the log line.
func (s *server) noteAnswer(ctx context.Context, resp aoai.Response) {
	rec := recordFrom(ctx)
	rec.attempts, rec.upstreamStatus, rec.upstreamID = int32(resp.Attempts), int32(resp.Status), resp.UpstreamRequestID
	rec.promptTokens, rec.completionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
}

// chatResponse is the answer's JSON: the 200 body, and the data of a
// stream's done event.
func chatResponse(ctx context.Context, resp aoai.Response, fit prompt.Result) ChatResponse {
	return ChatResponse{
		Answer:       resp.Content,
		FinishReason: resp.FinishReason,
		Usage: ChatUsage{
			PromptTokens:     resp.Usage.PromptTokens,
			CompletionTokens: resp.Usage.CompletionTokens,
			TotalTokens:      resp.Usage.TotalTokens,
		},
		RequestID:        requestID(ctx),
		ElapsedMs:        time.Since(budget.From(ctx).Started).Milliseconds(),
		UpstreamAttempts: resp.Attempts,
		Truncated:        fit.Truncated,
		Dropped:          dropped(fit),
	}
}

// fit assembles the prompt and makes it fit the context window and the
// deployment's tokens-per-minute limit, before anything is sent: material
// that cannot fit is trimmed (oldest turns first, then the longest passages)
// and a request that can never fit is a 413.
func (s *server) fit(ctx context.Context, req ChatRequest, material []prompt.Source, maxTokens int) (prompt.Result, error) {
	in := prompt.Input{System: SystemPrompt, Messages: make([]tokens.Message, len(req.Messages))}
	for i, m := range req.Messages {
		in.Messages[i] = tokens.Message{Role: m.Role, Content: m.Content}
	}
	// Material the caller attached on purpose (documents, pages) first, then
	// retrieved passages in their ranking order.
	in.Sources = material
	for _, src := range req.Sources {
		in.Sources = append(in.Sources, prompt.Source{Kind: prompt.KindSource, Title: src.Title, URL: src.URL, Text: src.Text})
	}
	lim := prompt.Limits{ContextWindow: s.ContextWindow, MaxTokens: maxTokens, TPM: s.TPM}
	if res, ok := prompt.FitUncounted(in, lim); ok {
		return res, nil
	}
	res, err := prompt.FitContext(ctx, s.Tokens, in, lim)
	if err != nil {
		return res, notAsked(ctx, fmt.Errorf("fit prompt: %w", err))
	}
	return res, nil
}

// notAsked marks an error of preparing the prompt that came from the
// request's deadline: the answer then says the AI service was never asked,
// not that it was slow (the clock that ran out was ours).
func notAsked(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errNoTimeForUpstream, err)
	}
	return err
}

func dropped(r prompt.Result) *Truncated {
	if !r.Truncated {
		return nil
	}
	return &Truncated{Turns: r.Dropped.Turns, Sources: r.Dropped.Sources, Shortened: r.Dropped.Shortened}
}

func (s *server) handleReady() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func (s *server) handleHealth() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
	}
}

func (s *server) handleNotFound() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errNotFound) }
}

// handleMethodNotAllowed answers a known path asked with a method it does
// not take, with the methods it does take in Allow. chi notes a route's
// pattern only when path and method both match, so the log line's route is
// looked up here by path (pathRoute).
func (s *server) handleMethodNotAllowed() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pattern, allow := s.pathRoute(r)
		recordFrom(r.Context()).route = pattern
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		s.fail(w, r, errMethodNotAllowed)
	}
}
