// Package api is timebox's HTTP surface: the routes the Functions host
// proxies to the custom handler, CORS, the per-request budget, one log line
// per request, and the one table that turns errors into answers.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/rs/cors"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/longanswer"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// Completer is the upstream chat call, satisfied by *aoai.Client. Failures
// are *aoai.Error.
type Completer interface {
	Complete(ctx context.Context, req *aoai.Request) (*aoai.Response, error)
}

// Options are what the handler uses: the settings it reads (named as in
// config.Config, which the composition root, package app, copies them from)
// and the parts it calls. Fetcher and Extractor may be nil: a request with
// urls or documents is then refused (400); Version may be empty; the rest
// are required.
type Options struct {
	// Budget is the whole-request deadline from the first line of the handler.
	Budget time.Duration
	// ClientTimeoutMargin is taken off x-client-timeout-ms.
	ClientTimeoutMargin time.Duration
	// FastFailure is the threshold at or above which a failed upstream
	// attempt is a timeout; the OpenAI surface's x-should-retry says true
	// only for a failure whose wait fits under it.
	FastFailure time.Duration
	// MaxTokens is the completion token limit sent when the caller asks for
	// none, and the most a caller may ask.
	MaxTokens int
	// ContextWindow is the tokens the model accepts.
	ContextWindow int
	// TPM is the deployment's tokens-per-minute limit; 0 means unknown.
	TPM int
	// FetchTimeout and ExtractTimeout are the deadlines of each page fetch
	// and each document extraction (the only timers on either).
	FetchTimeout, ExtractTimeout time.Duration
	// MinUpstreamTime is the least time left for the upstream call; with
	// less, the answer is 500 deadline_exceeded and nothing is sent.
	MinUpstreamTime time.Duration
	// Admission bounds the material of all requests in flight; nil admits
	// everything.
	Admission *admission.Gate
	// AllowedOrigins are the browser origins allowed by CORS.
	AllowedOrigins []string
	// Version is reported by GET /api/health.
	Version string
	// Lingering counts the connections closed lingering after an early
	// answer, for the server's shutdown to wait on; nil counts nothing.
	Lingering *Lingering

	// Caller checks who calls the routes that spend tokens (POST
	// /api/chat); required: caller.Anonymous{} when AUTH_MODE is none.
	Caller caller.Checker
	// Quota counts the tokens callers spend across instances; nil: no quotas.
	Quota Quota
	// QuotaFailOpen serves a request, unaccounted, when the quota store
	// cannot be reached; false answers 503 quota_unavailable.
	QuotaFailOpen bool
	// Deployment is the model deployment called: the quota's ledger names
	// it, and the OpenAI surface's requests may give it as their model.
	Deployment string
	// Model is the model the deployment runs, the other name the OpenAI
	// surface's requests may give; empty: none but the deployment's.
	Model string

	// LongAnswers, when set, answers every chat as a long answer: in the
	// Responses API's background mode, across hops (LONG_ANSWERS where the
	// model supports it); nil keeps Chat Completions, and continue and
	// cancel answer 404.
	LongAnswers *longanswer.Hops
	// Cursors seal the cursors of long answers and open them (CURSOR_KEYS,
	// bound to Deployment); required with LongAnswers.
	Cursors *cursor.Keys

	// Backends counts the pool's backends that can take a call now and
	// those skipped (cooling, or out), for GET /api/health; nil says
	// nothing of them.
	Backends func() (available, cooling int)

	Logger    *slog.Logger
	Chat      Completer
	Tokens    *tokens.Counter
	Fetcher   Fetcher
	Extractor Extractor
}

// server is the handler's dependencies, shared by every route and
// middleware (Mat Ryer's server struct).
type server struct {
	Options
	cors *cors.Cors
}

// New returns the whole HTTP handler: the routes and the middleware every
// request passes, as routes.go lists them.
func New(o Options) http.Handler {
	if o.Caller == nil {
		// A forgotten caller check would serve everyone: refuse to build.
		panic("api.New: Options.Caller is required (caller.Anonymous{} for AUTH_MODE=none)")
	}
	s := &server{Options: o, cors: newCORS(o.AllowedOrigins)}
	return s.routes()
}
