package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

// handleChat is POST /api/chat: the chat pipeline (serveChat) with
// timebox's own dialect at its two ends.
func (s *server) handleChat() http.Handler { return s.serveChat(s.readChat) }

// readChat reads a request of timebox's dialect into its call: decoding,
// then the dialect-free middle (prepareChat: admission of the material, the
// material, the prompt fit), and the answer's form (JSON, server-sent
// events, or a long answer in hops).
func (s *server) readChat(w http.ResponseWriter, r *http.Request, ticket *admission.Ticket) (*chatCall, error) {
	req, err := decodeChat(r.Context(), w, r)
	if err != nil {
		return nil, err
	}
	call, err := s.prepareChat(r.Context(), ticket, req)
	if err != nil {
		return nil, err
	}
	call.stream = wantsStream(r)
	call.out = timeboxAnswer{&call.fit}
	return call, nil
}

// timeboxAnswer writes POST /api/chat's answers: a ChatResponse; streamed,
// a delta event per piece of the answer as it arrives, then done (the
// same ChatResponse) or error. An error event before the first delta
// (only a keep-alive went out) carries the status and retry hints of the
// JSON answer the caller would otherwise have had (judged by the client's
// rule as that answer would be); after it, one that is never retried.
type timeboxAnswer struct{ fit *prompt.Result }

func (timeboxAnswer) whole(*aoai.Request) {}

func (a timeboxAnswer) body(ctx context.Context, resp *aoai.Response) []byte {
	return marshal(chatResponse(ctx, *resp, *a.fit))
}

func (timeboxAnswer) streamed(ctx context.Context, req *aoai.Request, es *eventStream) {
	req.OnDelta = deltas(ctx, es)
}

func (a timeboxAnswer) done(ctx context.Context, es *eventStream, resp *aoai.Response) {
	es.last(eventDone, chatResponse(ctx, *resp, *a.fit))
}

func (timeboxAnswer) failed(ctx context.Context, es *eventStream, row errorRow, _ error) {
	es.last(eventError, streamError(ctx, row, es.sentDelta()))
}

func (timeboxAnswer) refused(err error) error { return err }

// prepareChat does everything between decoding and the upstream call, for
// any dialect: it takes the material's cost from ticket, reads the
// documents and pages, fits the prompt, and refuses a call that has too
// little time left to be answered.
func (s *server) prepareChat(ctx context.Context, ticket *admission.Ticket, req ChatRequest) (*chatCall, error) {
	if err := ticket.Take(admission.MaterialCost(len(req.Documents), len(req.URLs), extract.DefaultMaxTextBytes, fetch.DefaultMaxBytes)); err != nil {
		return nil, err
	}
	rec, b := recordFrom(ctx), billOf(ctx)
	if (len(req.URLs) > 0 && s.Fetcher == nil) || (len(req.Documents) > 0 && s.Extractor == nil) {
		return nil, invalid("This service does not read pages or documents.")
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
		return nil, err
	}
	start = time.Now()
	fit, err := s.fit(ctx, req, material, maxTokens)
	rec.since("prompt", start)
	if err != nil {
		// A question refused as too large was counted: the log line says
		// how large (promptTokensCounted), though nothing was billed.
		if tooBig := (*prompt.TooLargeError)(nil); errors.As(err, &tooBig) {
			b.counted = tooBig.Prompt
		}
		return nil, err
	}
	b.counted, rec.truncated = fit.PromptTokens, fit.Truncated
	if fit.PromptTokens == 0 {
		b.countPrompt = func() int { return s.Tokens.Prompt(fit.Messages) }
	}
	msgs := make([]aoai.Message, len(fit.Messages))
	for i, m := range fit.Messages {
		msgs[i] = aoai.Message{Role: m.Role, Content: m.Content}
	}

	if err := s.timeForUpstream(ctx); err != nil {
		return nil, err
	}
	call := &chatCall{
		req:  aoai.Request{Messages: msgs, MaxTokens: maxTokens, RequestID: requestID(ctx), OnDelta: s.tallied(ctx)},
		fit:  fit,
		long: s.LongAnswers != nil,
	}
	// Last before the upstream call: what it can at most cost is known, and
	// a refusal spends nothing.
	if err := s.reserveQuota(ctx, call); err != nil {
		return nil, err
	}
	return call, nil
}

// timeForUpstream refuses a call with too little time left for an answer:
// no tokens are spent on a call that would be cut. A request given little
// time in all (a caller in a hurry) needs a quarter of it, not the floor.
func (s *server) timeForUpstream(ctx context.Context) error {
	if budget.Remaining(ctx) < min(s.MinUpstreamTime, budget.RequestTime(ctx)/4) {
		return errNoTimeForUpstream
	}
	return nil
}

// complete makes the upstream call for an answer that is not streamed, and
// notes it on the log line.
func (s *server) complete(ctx context.Context, call *chatCall) (*aoai.Response, error) {
	start := time.Now()
	resp, err := s.Chat.Complete(ctx, &call.req)
	recordFrom(ctx).since("upstream", start)
	if err != nil {
		return nil, err
	}
	s.noteAnswer(ctx, *resp)
	return resp, nil
}

// noteAnswer puts a finished answer on the log line and its usage on the
// bill.
func (s *server) noteAnswer(ctx context.Context, resp aoai.Response) {
	rec, b := recordFrom(ctx), billOf(ctx)
	rec.attempts, rec.upstreamStatus, rec.upstreamID = resp.Attempts, resp.Status, resp.UpstreamRequestID
	rec.backend, rec.trail = resp.Backend, resp.Trail
	b.prompt, b.completion, b.backend = resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Backend
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
