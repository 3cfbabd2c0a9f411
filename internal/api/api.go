// Package api is timebox's HTTP surface: the routes the Functions host
// proxies to the custom handler, CORS, the per-request budget, one log line
// per request, and the one table that turns errors into answers.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/rs/cors"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// Completer is the upstream chat call, satisfied by *aoai.Client. Failures
// are *aoai.Error.
type Completer interface {
	Complete(ctx context.Context, req aoai.Request) (aoai.Response, error)
}

// Deps are what the handler needs. Fetcher and Extractor may be nil: a
// request with urls or documents is then refused (400); the rest are
// required but Version.
type Deps struct {
	Config    config.Config
	Logger    *slog.Logger
	Chat      Completer
	Tokens    *tokens.Counter
	Fetcher   Fetcher
	Extractor Extractor
	Version   string
}

type server struct {
	Deps
	cors *cors.Cors
}

// New returns the whole HTTP handler. Middleware runs outermost first, for
// every request, unknown routes included: begin (the budget's first line,
// request id, log line), the Origin check, CORS, panic recovery, then the
// route.
func New(d Deps) http.Handler {
	s := &server{Deps: d, cors: newCORS(d.Config.AllowedOrigins)}
	r := chi.NewRouter()
	r.Use(s.begin, s.checkOrigin, s.cors.Handler, s.recoverPanics)
	r.NotFound(s.handleNotFound())
	r.MethodNotAllowed(s.handleMethodNotAllowed())
	s.routes(r)
	return r
}
