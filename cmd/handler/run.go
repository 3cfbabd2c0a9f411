package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/fetch"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run is the composition root: configuration, logger, credential, upstream
// client, HTTP handler; it serves until ctx ends, then lets requests in
// flight finish (each is bounded by its budget) and returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("handler takes no arguments; it is configured by environment (see README.md)")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))

	counter, err := tokens.New(cfg.Encoding)
	if err != nil {
		return err
	}
	opts := aoai.Options{
		Endpoint:    cfg.Endpoint,
		Deployment:  cfg.Deployment,
		APIVersion:  cfg.APIVersion,
		APIKey:      cfg.APIKey,
		FastFailure: cfg.FastFailure,
		MaxAttempts: cfg.UpstreamAttempts,
	}
	if cfg.APIKey == "" {
		if opts.Credential, err = credential(cfg, getenv); err != nil {
			return err
		}
	}
	chat, err := aoai.New(opts)
	if err != nil {
		return err
	}
	handler := api.New(api.Deps{
		Config: cfg, Logger: logger, Chat: chat, Tokens: counter, Version: version,
		Fetcher: fetch.New(fetch.Options{
			Timeout:   cfg.FetchTimeout,
			UserAgent: "timebox/" + version + " (+https://github.com/timebox-dev/timebox)",
		}),
		Extractor: api.LimitedExtractor{},
	})

	// The Functions host calls http://127.0.0.1:<port>; nothing else needs
	// to reach the handler.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No WriteTimeout: the budget bounds every answer, and a write
		// timeout would cut an answer without telling the caller why.
	}
	logger.Info("listening", "addr", ln.Addr().String(), "budgetMs", cfg.Budget.Milliseconds(),
		"fastFailureMs", cfg.FastFailure.Milliseconds(), "endpoint", cfg.Endpoint.Host, "deployment", cfg.Deployment,
		"auth", authKind(cfg), "version", version)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	// Requests in flight end within their budget; give them that long.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Budget+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// credential picks Entra ID auth: the managed identity inside Azure (App
// Service and Functions set IDENTITY_ENDPOINT), the developer's own
// credentials (Azure CLI, azd, environment) elsewhere.
func credential(cfg config.Config, getenv func(string) string) (azcore.TokenCredential, error) {
	if getenv("IDENTITY_ENDPOINT") != "" {
		o := &azidentity.ManagedIdentityCredentialOptions{}
		if cfg.ClientID != "" {
			o.ID = azidentity.ClientID(cfg.ClientID)
		}
		c, err := azidentity.NewManagedIdentityCredential(o)
		if err != nil {
			return nil, fmt.Errorf("managed identity: %w", err)
		}
		return c, nil
	}
	c, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("developer credential: %w", err)
	}
	return c, nil
}

func authKind(cfg config.Config) string {
	if cfg.APIKey != "" {
		return "api-key"
	}
	return "entra-id"
}
