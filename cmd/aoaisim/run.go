package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// backendName is what -backend may be: a name of the pool, or none.
var backendName = regexp.MustCompile(`^[a-z0-9-]{0,32}$`)

// shutdownGrace is how long in-flight requests get to finish on shutdown
// before their connections are closed (a hung request would wait forever).
const shutdownGrace = 5 * time.Second

// run parses args, serves the simulator until ctx ends, then shuts down. It
// returns an error for bad flags or a listener that cannot be opened.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("aoaisim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "address to listen on (port 0 picks a free one)")
	deployments := fs.String("deployments", aoaitest.DefaultDeployment, "comma-separated deployment names")
	model := fs.String("model", "", "model name reported in answers (default: derived from the deployment)")
	apiKey := fs.String("api-key", "", "required api-key header (default $AOAISIM_API_KEY; empty with -bearer unset: no auth)")
	bearer := fs.Bool("bearer", false, "accept any Authorization: Bearer token")
	ttft := fs.Duration("ttft", 500*time.Millisecond, "time to first token")
	perToken := fs.Duration("per-token", 10*time.Millisecond, "time per completion token")
	tpm := fs.Int("tpm", 0, "tokens-per-minute limit per deployment (0: unlimited)")
	window := fs.Int("context-window", 0, "context window in tokens (0: by model)")
	backend := fs.String("backend", "", "the name of the backend of timebox's pool this simulator plays: directives with backend= another name do not play here (run one per backend, each on its -addr)")
	issuer := fs.Bool("issuer", false, "also be Entra ID for AUTH_MODE=entra: OpenID metadata, keys and a token endpoint for a test user under /<tenant id>/ (internal/issuertest)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var errs []error
	if *ttft < 0 || *perToken < 0 {
		errs = append(errs, errors.New("-ttft and -per-token must not be negative"))
	}
	if *tpm < 0 || *window < 0 {
		errs = append(errs, errors.New("-tpm and -context-window must not be negative"))
	}
	var names []string
	for _, d := range strings.Split(*deployments, ",") {
		if d = strings.TrimSpace(d); d != "" {
			names = append(names, d)
		}
	}
	if len(names) == 0 {
		errs = append(errs, errors.New("-deployments names none"))
	}
	if !backendName.MatchString(*backend) {
		errs = append(errs, fmt.Errorf("-backend %q must be 1 to 32 of a-z, 0-9 and - (a name of AZURE_OPENAI_BACKENDS)", *backend))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if *apiKey == "" {
		*apiKey = getenv("AOAISIM_API_KEY")
	}

	log := slog.New(slog.NewJSONHandler(stdout, nil))
	sim := aoaitest.New(aoaitest.Options{
		Deployments:      names,
		Model:            *model,
		APIKey:           *apiKey,
		AcceptBearer:     *bearer,
		TimeToFirstToken: *ttft,
		PerToken:         *perToken,
		TPM:              *tpm,
		ContextWindow:    *window,
		Logger:           log,
		Backend:          *backend,
	})
	var handler http.Handler = sim
	if *issuer {
		iss, err := issuertest.New()
		if err != nil {
			return fmt.Errorf("issuer: %w", err)
		}
		handler = issuertest.Mount(sim, iss)
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	auth := "none"
	switch {
	case *apiKey != "" && *bearer:
		auth = "api-key or bearer"
	case *apiKey != "":
		auth = "api-key"
	case *bearer:
		auth = "bearer"
	}
	attrs := []any{}
	if *issuer {
		base := "http://" + l.Addr().String()
		attrs = append(attrs, slog.String("authority", base),
			slog.String("token_endpoint", base+"/"+issuertest.DefaultTenant+"/oauth2/v2.0/token"))
	}
	log.Info("aoaisim listening", append([]any{
		slog.String("addr", l.Addr().String()),
		slog.String("endpoint", "http://"+l.Addr().String()),
		slog.Any("deployments", names),
		slog.String("auth", auth),
		slog.String("ttft", ttft.String()),
		slog.String("per_token", perToken.String()),
		slog.Int("tpm", *tpm),
		slog.String("backend", *backend),
	}, attrs...)...)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still running (a hang directive) are cut off.
		_ = srv.Close()
	}
	st := sim.Stats()
	log.Info("aoaisim stopped", slog.Int("requests", st.Requests), slog.Int("completed", st.Completed), slog.Int("cancelled", st.Cancelled))
	return nil
}
