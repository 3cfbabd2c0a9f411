// Package app is timebox's composition root: New turns a config.Config into
// the whole HTTP handler (the upstream client and its credential, the page
// fetcher, the document extractor, the tokenizer, the logger). The handler
// binary (cmd/handler) and every test that needs the whole stack build it
// here, from the same configuration, so what the binary runs is what the
// tests check. Seams are what a test swaps: the network, and nothing else
// of substance.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/extract"
	"github.com/timebox-dev/timebox/internal/fetch"
	"github.com/timebox-dev/timebox/internal/longanswer"
	"github.com/timebox-dev/timebox/internal/quota"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// Seams is what New takes from outside the configuration: where the logs
// go, the build's version, and the seams where a test puts its own network
// (the simulator's transport, a fake DNS and dialer, a local token issuer)
// in place of the real one. The zero value is production with the logs
// discarded.
type Seams struct {
	// Logs receives the JSON log lines (stdout in the binary); nil discards them.
	Logs io.Writer
	// Version is the build's version, reported by /api/health and sent in
	// the fetcher's User-Agent; empty means "dev".
	Version string

	// Upstream carries the requests to Azure OpenAI; nil means azcore's
	// default HTTP client. Tests pass the simulator's memnet client.
	Upstream policy.Transporter
	// Credential is the Entra ID credential used when cfg.APIKey is empty;
	// nil means the managed identity (cfg.ManagedIdentity) or else the
	// developer's own.
	Credential azcore.TokenCredential
	// Resolver and Dial replace the fetcher's DNS and its dialer (which is
	// called after the address check); nil means the real ones.
	Resolver fetch.Resolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Authority carries the requests for Entra ID's OpenID metadata and
	// keys (AUTH_MODE=entra); nil means a client of its own. Tests pass the
	// local issuer's (internal/issuertest) memnet client.
	Authority *http.Client
	// Quota carries the requests to the quota store; nil means its own
	// HTTP client.
	Quota policy.Transporter
	// Extractor replaces the document extractor; nil means package
	// extract's, with its default limits. Only for a test of the step
	// deadline around it: no document takes 15 s of virtual time to read.
	Extractor api.Extractor
}

// App is the built stack.
type App struct {
	// Handler serves every route.
	Handler http.Handler
	// Logger writes JSON lines to Seams.Logs at cfg.LogLevel; the binary's
	// own lines (listening, shutting down, the server's errors) use it too.
	Logger *slog.Logger
	// Lingering counts the connections the handler has taken from net/http
	// to close them lingering (an answer sent before its body was in);
	// the server's shutdown waits for them after http.Server.Shutdown.
	Lingering *api.Lingering

	chat  *aoai.Client
	quota *quota.Store // nil without quotas
}

// releaseTimeout bounds Release: a lease write is a few store calls.
const releaseTimeout = 5 * time.Second

// Release gives back, as the instance stops, the room its leases of
// tenants' months hold (quota.Store.Release), so that it neither sits idle
// for other instances nor lapses to be charged whole. It returns within
// releaseTimeout; without quotas it does nothing.
func (a *App) Release(ctx context.Context) error {
	if a.quota == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	return a.quota.Release(ctx)
}

// signInTimeout bounds CheckSignIn's token attempt: a sign-in that takes
// longer is said as one that failed, and the first question tries again.
const signInTimeout = 30 * time.Second

// CheckSignIn gets a token for Azure OpenAI once, as the first question
// would, and logs a warning when it cannot, so that a credential that will
// fail every question is said at start-up and not only on each question's
// log line. With an API key it does nothing. It returns when the attempt
// ends, within signInTimeout.
func (a *App) CheckSignIn(ctx context.Context) {
	try, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	err := a.chat.SignIn(try)
	var upErr *aoai.Error
	switch {
	case err == nil, ctx.Err() != nil: // signed in, or shutting down
		return
	case errors.As(err, &upErr) && upErr.Kind == aoai.KindCredential:
		a.Logger.Warn("cannot sign in to Azure OpenAI: every question will be answered 500 upstream_auth_unavailable "+
			"until it can. Set AZURE_OPENAI_API_KEY, or sign in where the handler runs (az login), or give the app a "+
			"managed identity with access to the resource (docs/operations.md)", "error", upErr.Err.Error())
	case try.Err() != nil:
		a.Logger.Warn("no Azure OpenAI token within the start-up check's time; the first question tries again",
			"timeoutMs", signInTimeout.Milliseconds(), "error", err.Error())
	default:
		a.Logger.Warn("the Entra ID token endpoint failed at start-up; each question tries again", "error", err.Error())
	}
}

// New builds the stack from cfg. It fails when the tokenizer, the
// credential or the upstream client cannot be built.
func New(cfg config.Config, seams Seams) (*App, error) {
	logs := seams.Logs
	if logs == nil {
		logs = io.Discard
	}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: cfg.LogLevel}))

	counter, err := tokens.New(cfg.Encoding)
	if err != nil {
		return nil, err
	}
	chat, err := upstream(cfg, seams, logger)
	if err != nil {
		return nil, err
	}
	check, err := callerCheck(cfg.Auth, seams.Authority)
	if err != nil {
		return nil, err
	}
	var quotas api.Quota
	var store *quota.Store
	if cfg.Quota.Endpoint != nil {
		q, err := quotaStore(cfg, seams)
		if err != nil {
			return nil, err
		}
		quotas, store = q, q
	}
	var extractor api.Extractor = extract.Extractor{}
	if seams.Extractor != nil {
		extractor = seams.Extractor
	}
	version := seams.Version
	if version == "" {
		version = "dev"
	}
	lingering := &api.Lingering{}
	var (
		long    *longanswer.Hops
		cursors *cursor.Keys
	)
	if cfg.Background() {
		long = &longanswer.Hops{Upstream: chat, Limit: cfg.LongAnswerLimit, Margin: longanswer.DefaultMargin}
		keys := cfg.CursorKeys
		if len(keys) == 0 {
			// config warned: this process's cursors open on it alone.
			keys = [][]byte{cursor.RandomKey()}
		}
		if cursors, err = cursor.NewKeys(keys, cfg.Deployment); err != nil {
			return nil, err
		}
	}
	h := api.New(api.Options{
		Budget:              cfg.Budget,
		ClientTimeoutMargin: cfg.ClientTimeoutMargin,
		FastFailure:         cfg.FastFailure,
		MaxTokens:           cfg.MaxTokens,
		ContextWindow:       cfg.ContextWindow,
		TPM:                 cfg.TPM,
		FetchTimeout:        cfg.FetchTimeout,
		ExtractTimeout:      cfg.ExtractTimeout,
		MinUpstreamTime:     cfg.MinUpstreamTime,
		Admission:           admission.New(cfg.MaterialInFlight, debug.FreeOSMemory),
		AllowedOrigins:      cfg.AllowedOrigins,
		Version:             version,
		Lingering:           lingering,

		Caller:        check,
		LongAnswers:   long,
		Cursors:       cursors,
		Quota:         quotas,
		QuotaFailOpen: cfg.Quota.FailOpen,
		Deployment:    cfg.Deployment,
		Model:         cfg.Model,
		Logger:        logger,
		Chat:          chat,
		Backends:      chat.Backends,
		Tokens:        counter,
		Fetcher: fetch.New(fetch.Options{
			UserAgent:   "timebox/" + version + " (+https://github.com/timebox-dev/timebox)",
			Resolver:    seams.Resolver,
			DialContext: seams.Dial,
		}),
		Extractor: extractor,
	})
	return &App{Handler: h, Logger: logger, Lingering: lingering, chat: chat, quota: store}, nil
}

// upstream builds the Azure OpenAI client over the pool of cfg.Backends:
// api-key auth for a backend with a key, Entra ID for the others.
func upstream(cfg config.Config, seams Seams, logger *slog.Logger) (*aoai.Client, error) {
	opts := aoai.Options{
		Credential:  seams.Credential,
		Transport:   seams.Upstream,
		FastFailure: cfg.FastFailure,
		MaxAttempts: cfg.UpstreamAttempts,
		MinTime:     cfg.MinUpstreamTime,
		CooldownMax: cfg.BackendCooldownMax,
		Logger:      logger,
	}
	entra := false
	for _, b := range cfg.Backends {
		opts.Backends = append(opts.Backends, aoai.Backend{Name: b.Name, Endpoint: b.Endpoint, Deployment: b.Deployment, Model: b.Model,
			Priority: b.Priority, Weight: b.Weight, APIVersion: b.APIVersion, APIKey: b.APIKey})
		entra = entra || b.APIKey == ""
	}
	if entra && opts.Credential == nil {
		c, err := credential(cfg)
		if err != nil {
			return nil, err
		}
		opts.Credential = c
	}
	return aoai.New(opts)
}

// quotaStore builds the quota store of cfg.Quota: reached with the app's
// credential (its managed identity in Azure), but a loopback endpoint
// (Azurite), which package quota signs with the emulator's published key.
func quotaStore(cfg config.Config, seams Seams) (*quota.Store, error) {
	o := quota.Options{
		Endpoint:            cfg.Quota.Endpoint,
		Table:               cfg.Quota.Table,
		UserDailyTokens:     cfg.Quota.UserDailyTokens,
		TenantMonthlyTokens: cfg.Quota.TenantMonthlyTokens,
		Credential:          seams.Credential,
		Transport:           seams.Quota,
	}
	if !quota.Loopback(cfg.Quota.Endpoint) && o.Credential == nil {
		c, err := credential(cfg)
		if err != nil {
			return nil, err
		}
		o.Credential = c
	}
	return quota.New(o)
}

// credential picks Entra ID auth: the managed identity inside Azure (App
// Service and Functions set IDENTITY_ENDPOINT), the developer's own
// credentials (Azure CLI, azd, environment) elsewhere.
func credential(cfg config.Config) (azcore.TokenCredential, error) {
	if cfg.ManagedIdentity {
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

// callerCheck builds the check of AUTH_MODE. config.Load has already
// refused the modes that cannot be trusted where the handler runs.
func callerCheck(a config.Auth, client *http.Client) (caller.Checker, error) {
	policy := caller.Policy{Tenants: a.Tenants, Scope: a.RequiredScope, Role: a.RequiredRole}
	switch a.Mode {
	case config.AuthEntra:
		e, err := caller.NewEntra(caller.EntraOptions{Authority: a.AuthorityHost, Audiences: a.Audiences, Policy: policy, Client: client})
		if err != nil {
			return nil, fmt.Errorf("AUTH_MODE=entra: %w", err)
		}
		return e, nil
	case config.AuthEasyAuth:
		return caller.EasyAuth{Policy: policy}, nil
	case config.AuthNone:
		return caller.Anonymous{}, nil
	}
	return nil, fmt.Errorf("AUTH_MODE %q has no check", a.Mode)
}
