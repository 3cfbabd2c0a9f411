package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/openaiwire"
	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// This file is the OpenAI dialect of the chat pipeline (package
// openaiwire): what the official OpenAI SDKs call. The caller check, the
// budget and the caller's deadline, admission, the prompt check, the log
// line and the upstream call are POST /api/chat's; the two ends differ:
// the request is read as OpenAI's Chat Completions (its messages and fields
// sent on as they came), and answers and errors are written in OpenAI's
// shapes.

// openAIPrefix is where the OpenAI surface's routes live.
const openAIPrefix = "/openai/"

// speaks puts in the request's context the dialect its errors are written
// in (fail), chosen by its path: OpenAI's under /openai/, so that every
// refusal an SDK can meet (the Origin check, the caller check, a 404 or a
// 405, a body too large) is one it can read; timebox's elsewhere. It is
// the path, not a route group, that chooses: the refusals that come
// before any route matches (the Origin check, a method chi does not know,
// which its root answers before any subrouter) must speak it too.
func (s *server) speaks(next http.Handler) http.Handler {
	openAI := openAIDialect{fastFailure: s.FastFailure}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, openAIPrefix) {
			r = r.WithContext(context.WithValue(r.Context(), dialectKey{}, openAI))
		}
		next.ServeHTTP(w, r)
	})
}

type dialectKey struct{}

// dialectOf is the dialect ctx's request speaks (speaks): timebox's
// unless it is OpenAI's.
func dialectOf(ctx context.Context) dialect {
	if d, ok := ctx.Value(dialectKey{}).(dialect); ok {
		return d
	}
	return timeboxDialect{}
}

// openAIDialect writes errors as OpenAI's API does, and says
// x-should-retry on every one: the Stainless-generated SDKs obey it before
// the status, and retry by status alone without it.
type openAIDialect struct{ fastFailure time.Duration }

func (openAIDialect) errorBody(row errorRow, _ string, _ *apiwire.PartialAnswer) any {
	e := openaiwire.NewError(row.status, row.code, row.msg, row.param)
	e.Error.Innererror = []byte(row.inner)
	return e
}

func (d openAIDialect) shouldRetry(row errorRow) string {
	if !row.final && openaiwire.ShouldRetry(row.status, time.Duration(row.retryAfterMs())*time.Millisecond, d.fastFailure) {
		return "true"
	}
	return "false"
}

// handleOpenAIChat is POST /openai/v1/chat/completions, the model named in
// the body, and with inPath POST
// /openai/deployments/{deployment}/chat/completions, the model named by the
// path (the body's, which Azure OpenAI ignores there, too): the chat
// pipeline (serveChat) with OpenAI's dialect at its two ends.
func (s *server) handleOpenAIChat(inPath bool) http.Handler {
	return s.serveChat(func(w http.ResponseWriter, r *http.Request, _ *admission.Ticket) (*chatCall, error) {
		return s.readOpenAI(w, r, inPath)
	})
}

// readOpenAI reads a request of OpenAI's dialect into its call: decoding,
// the model check (404 model_not_found, no upstream call), the prompt
// check (prepareOpenAI), and the answer's form, a chat.completion or a
// stream of chunks. Nothing of it is material: the body's cost is the
// request's.
func (s *server) readOpenAI(w http.ResponseWriter, r *http.Request, inPath bool) (*chatCall, error) {
	ctx := r.Context()
	body, err := readJSON(ctx, w, r, MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	req, err := openaiwire.DecodeChat(body)
	if err != nil {
		return nil, err
	}
	model, param := req.Model, "model"
	if inPath {
		model, param = chi.URLParam(r, "deployment"), ""
	}
	if !s.serves(model) {
		return nil, s.modelNotFound(model, param)
	}
	call, err := s.prepareOpenAI(ctx, req)
	if err != nil {
		return nil, err
	}
	call.stream = req.IsStream()
	call.out = &openAIAnswer{deployment: s.Deployment, includeUsage: req.IncludeUsage()}
	return call, nil
}

// handleOpenAIModels is GET /openai/v1/models: the deployment this app
// serves, the one model name a request may give.
func (s *server) handleOpenAIModels() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, openaiwire.Models("timebox", s.Deployment))
	})
}

// serves reports whether model names the deployment this app serves, by
// its own name or by the model it runs.
func (s *server) serves(model string) bool {
	return model == s.Deployment || (s.Model != "" && model == s.Model)
}

// modelNotFound is OpenAI's 404 for a model it does not serve, naming the
// field that named it ("" for the path).
func (s *server) modelNotFound(model, param string) *openaiwire.Error {
	return &openaiwire.Error{Status: http.StatusNotFound, Type: openaiwire.TypeInvalidRequest, Param: param, Code: apiwire.CodeModelNotFound,
		Message: fmt.Sprintf("The model '%s' does not exist here: this service serves '%s' (GET /openai/v1/models).", model, s.Deployment)}
}

// prepareOpenAI does what prepareChat does for timebox's dialect, for a
// request whose messages are sent as they came: the completion limit
// (the caller's, at most MaxTokens), the prompt check (the whole prompt
// must fit: nothing of the caller's is trimmed), the time left, and the
// caller's quota.
func (s *server) prepareOpenAI(ctx context.Context, req openaiwire.ChatRequest) (*chatCall, error) {
	rec, b := recordFrom(ctx), billOf(ctx)
	maxTokens := s.MaxTokens
	if n := req.Limit(); n > 0 && n < maxTokens {
		maxTokens = n
	}
	texts := req.Texts()
	msgs := make([]tokens.Message, len(texts))
	for i, t := range texts {
		msgs[i] = tokens.Message{Role: t.Role, Content: t.Content}
	}
	start := time.Now()
	n, err := prompt.FitWhole(ctx, s.Tokens, msgs, prompt.Limits{ContextWindow: s.ContextWindow, MaxTokens: maxTokens, TPM: s.TPM})
	rec.since("prompt", start)
	if err != nil {
		if tooBig := (*prompt.TooLargeError)(nil); errors.As(err, &tooBig) {
			b.counted = tooBig.Prompt
		}
		return nil, notAsked(ctx, fmt.Errorf("check prompt: %w", err))
	}
	b.counted = n
	if n == 0 {
		b.countPrompt = func() int { return s.Tokens.Prompt(msgs) }
	}
	if err := s.timeForUpstream(ctx); err != nil {
		return nil, err
	}
	members, err := req.Upstream()
	if err != nil {
		return nil, fmt.Errorf("encode upstream request: %w", err)
	}
	call := &chatCall{
		req: aoai.Request{
			MaxTokens: maxTokens, RequestID: requestID(ctx), OnDelta: s.tallied(ctx),
			Passthrough: &aoai.Passthrough{Members: members},
		},
		fit: prompt.Result{Messages: msgs, PromptTokens: n},
	}
	// Last before the upstream call, as for /api/chat: what the call can at
	// most cost is known, and a refusal spends nothing.
	if err := s.reserveQuota(ctx, call); err != nil {
		return nil, err
	}
	return call, nil
}

// rejected is err, or, when Azure OpenAI refused with a 400 a field this
// dialect passed on as the caller wrote it, that refusal as the caller's
// own 400 (Azure's message, param and code), wrapping err for the log.
func rejected(err error) error {
	var upErr *aoai.Error
	if !errors.As(err, &upErr) || upErr.Kind != aoai.KindRejected || upErr.Status != http.StatusBadRequest {
		return err
	}
	if e := openaiwire.Rejected(upErr.Object); e != nil {
		return fmt.Errorf("%w: %w", e, err)
	}
	return err
}
