package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run reads the configuration, builds the stack (app.New, the one
// composition root), listens where the Functions host says, and serves until
// ctx ends or the process is asked to stop (the host's SIGTERM, a
// terminal's Ctrl-C); then it lets requests in flight finish (each is
// bounded by its budget) and returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// Caught before anything is served, so that a stop never kills the
	// process with a request in flight; a second signal while requests
	// finish is caught too, until run returns.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		return fmt.Errorf("handler takes no arguments; it is configured by environment (see docs/operations.md)")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	a, err := app.New(cfg, app.Seams{Logs: stdout, Version: version})
	if err != nil {
		return err
	}

	// The Functions host calls http://127.0.0.1:<port>; nothing else needs
	// to reach the handler.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return serve(ctx, ln, cfg, a)
}

// serve is run's second half: it serves the stack a on ln until ctx ends,
// then shuts down (shutdown) and returns.
func serve(ctx context.Context, ln net.Listener, cfg config.Config, a *app.App) error {
	logger := a.Logger
	open := newConns()
	srv := &http.Server{
		Handler:           a.Handler,
		ConnState:         open.track,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No WriteTimeout: the budget bounds every answer, and a write
		// timeout would cut an answer without telling the caller why.
	}
	// The pool's backends are named, not located (their URLs are in the
	// settings); a single endpoint is said as it always was.
	where := []any{"backends", cfg.BackendNames()}
	if cfg.Endpoint != nil {
		where = append(where, "endpoint", cfg.Endpoint.String())
	}
	logger.Info("listening", append([]any{"addr", ln.Addr().String(), "budgetMs", cfg.Budget.Milliseconds(),
		"fastFailureMs", cfg.FastFailure.Milliseconds(), "deployment", cfg.Deployment,
		"auth", authKind(cfg), "authMode", string(cfg.Auth.Mode), "version", version}, where...)...)
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	if cfg.Auth.Mode == config.AuthNone {
		logger.Warn("AUTH_MODE=none: every caller is served without a token; anyone who can reach this address can spend " +
			"the Azure OpenAI deployment. Set AUTH_MODE=entra (see docs/auth.md)")
	}

	// The sign-in is tried beside serving, not before it: the Functions
	// host polls the port from the start, and a token can take seconds.
	go a.CheckSignIn(ctx)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "inFlight", open.active())
	// Every request in flight ends within its budget, which is at most
	// cfg.Budget (a caller's timeout only shortens it), and its answer's
	// last write within the grace after it.
	if err := shutdown(srv, open, cfg.Budget+budget.AnswerGrace, a.Lingering); err != nil {
		return err
	}
	// Every request has settled (or its hold lapses): the month's leased
	// room goes back.
	if err := a.Release(context.WithoutCancel(ctx)); err != nil {
		logger.Warn("quota leases not released: they lapse and are charged whole", "error", err.Error())
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// authKind is how the handler signs in to Azure OpenAI: api-key, entra-id,
// or both, when the pool's backends differ.
func authKind(cfg config.Config) string {
	keys := 0
	for _, b := range cfg.Backends {
		if b.APIKey != "" {
			keys++
		}
	}
	switch keys {
	case len(cfg.Backends):
		return "api-key"
	case 0:
		return "entra-id"
	}
	return "api-key and entra-id"
}
