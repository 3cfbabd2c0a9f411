// Package config reads timebox's settings from the environment (under
// `func start`, the Values of local.settings.json). Load validates every
// setting and reports every problem at once; start-up is refused on any.
package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/origin"
	"github.com/timebox-dev/timebox/internal/retry"
)

// PlatformLimit is the most an HTTP-triggered function can take to answer
// on Azure: after 230 s the front end's load balancer answers 502 itself and
// the function keeps running (Learn: "Azure Functions HTTP trigger", Limits).
const PlatformLimit = 230 * time.Second

// Config is timebox's typed configuration. Secrets are kept out of String
// and out of logs.
type Config struct {
	// Port is the port to listen on (FUNCTIONS_CUSTOMHANDLER_PORT, set by the
	// Functions host; 8080 when unset).
	Port int

	// Endpoint is the Azure OpenAI resource's root URL
	// (AZURE_OPENAI_ENDPOINT), with no path: https, or http for a loopback
	// host (the simulator). Required without AZURE_OPENAI_BACKENDS, refused
	// with it (nil then). A trailing /openai or /openai/v1 is taken off
	// (with a warning); any other path is refused.
	Endpoint *url.URL
	// Deployment is the model deployment name (AZURE_OPENAI_DEPLOYMENT).
	// Required. With AZURE_OPENAI_BACKENDS, the name callers use (the
	// OpenAI surface's model); each backend has its own real name.
	Deployment string
	// Model is the model the deployment runs (AZURE_OPENAI_MODEL, e.g.
	// gpt-4o-mini); unset, the deployment's name, which then names its
	// model. It picks the model's facts, and the OpenAI surface takes it as
	// a request's model as well as the deployment's name.
	Model string
	// APIVersion selects the deployments path with this api-version when set
	// (AZURE_OPENAI_API_VERSION); empty means the v1 path.
	APIVersion string
	// APIKey selects key auth when set (AZURE_OPENAI_API_KEY); empty means
	// Entra ID through azidentity. Never logged.
	APIKey string `json:"-"`
	// ClientID is the client id of a user-assigned managed identity
	// (AZURE_CLIENT_ID); empty means the system-assigned one.
	ClientID string
	// ManagedIdentity says a managed identity is there to use: App Service
	// and Functions set IDENTITY_ENDPOINT (the platform's, not a setting).
	// With no APIKey, true means the managed identity credential, false the
	// developer's own (Azure CLI, azd, environment).
	ManagedIdentity bool

	// Budget is the whole-request deadline from the first line of the handler
	// (REQUEST_BUDGET, default 200 s); always below PlatformLimit.
	Budget time.Duration
	// FastFailure is the threshold at or above which a failed upstream
	// attempt is a timeout, not a hiccup (FAST_FAILURE_THRESHOLD, default 30 s).
	FastFailure time.Duration
	// ClientTimeoutMargin is taken off x-client-timeout-ms so the server can
	// still answer before the caller gives up (CLIENT_TIMEOUT_MARGIN, default 2 s).
	ClientTimeoutMargin time.Duration
	// UpstreamAttempts caps the server's own upstream attempts at one
	// call, over all backends of the pool (UPSTREAM_MAX_ATTEMPTS, default
	// 2, at most 5).
	UpstreamAttempts int

	// Backends is the pool of Azure OpenAI deployments calls are routed
	// across (AZURE_OPENAI_BACKENDS); without it, the pool of one named
	// DefaultBackend that Endpoint, Deployment, Model, APIVersion and
	// APIKey describe. Never empty after Load.
	Backends []Backend
	// BackendCooldownMax caps how long a throttled backend is skipped,
	// whatever wait it named (BACKEND_COOLDOWN_MAX, default 60 s).
	BackendCooldownMax time.Duration

	// MaxTokens is the completion token limit sent upstream when the caller
	// asks for none, and the cap on what a caller may ask (MAX_TOKENS, default 1024).
	MaxTokens int
	// ContextWindow is the tokens the prompt and the completion may hold
	// together (CONTEXT_WINDOW; default by the deployment's model name, from
	// package modelfacts: the model's window, or its input limit plus
	// MaxTokens when that is smaller; 128000 for a name it does not know).
	ContextWindow int
	// Encoding is the tokenizer (TOKENIZER: o200k_base or cl100k_base;
	// default by the deployment's model name, from package modelfacts).
	Encoding string
	// TPM is the deployment's tokens-per-minute limit (DEPLOYMENT_TPM); 0
	// means unknown: no pre-check.
	TPM int

	// FetchTimeout and ExtractTimeout bound each page fetch and each document
	// extraction (FETCH_TIMEOUT, EXTRACT_TIMEOUT, default 15 s each); both
	// are also cut to the request's own deadline.
	FetchTimeout, ExtractTimeout time.Duration
	// MaterialInFlight is the process-wide limit, in bytes, on the material
	// (bodies, decoded documents, extracted text, as package admission
	// estimates it) held for requests in flight (MATERIAL_IN_FLIGHT_MB,
	// default 640 MiB: room for the runtime and the collector's headroom on
	// a 2 GB instance). Past it: 503 overloaded.
	MaterialInFlight int64
	// MinUpstreamTime is the least time that must be left to call Azure
	// OpenAI (MIN_UPSTREAM_TIME, default 3 s; a request given less than
	// four times that needs a quarter of its time); with less, the answer
	// is 500 deadline_exceeded without spending tokens.
	MinUpstreamTime time.Duration

	// AllowedOrigins are the browser origins allowed by CORS
	// (ALLOWED_ORIGINS, comma-separated; one `*` wildcard allowed in the
	// host, e.g. https://*.sharepoint.com). Empty: no origin is allowed.
	AllowedOrigins []string
	// Auth is who may call POST /api/chat (AUTH_MODE and its settings).
	Auth Auth
	// Quota is what callers may spend, and where it is counted (QUOTA_*).
	Quota Quota

	// LongAnswers is how an answer longer than Budget is delivered
	// (LONG_ANSWERS: LongAnswersBackground, the default, or
	// LongAnswersOff). See Background.
	LongAnswers string
	// LongAnswerLimit is the longest a long answer may run, from the start
	// of its generation across all its hops (LONG_ANSWER_LIMIT, default
	// 30m, from REQUEST_BUDGET to 24h): then its generation is cancelled
	// upstream and its cursor no longer works.
	LongAnswerLimit time.Duration
	// CursorKeys seal long answers' cursors and open them (CURSOR_KEYS:
	// one or two standard base64 keys of at least 32 bytes; the first
	// seals, both open). Unset: required inside Azure when Background;
	// elsewhere nil, and run seals with a random key of the process.
	// Never logged.
	CursorKeys [][]byte `json:"-"`

	// LogLevel is the slog level (LOG_LEVEL: debug, info, warn, error).
	LogLevel slog.Level

	// Warnings are what Load changed in a setting to accept it, each a
	// sentence naming the setting; run logs each at start-up. None means
	// every setting was taken as written.
	Warnings []string
}

// The values of LONG_ANSWERS.
const (
	// LongAnswersBackground runs a generation in the Responses API's
	// background mode where the deployment's model supports it
	// (modelfacts' Background), delivered across hops.
	LongAnswersBackground = "background"
	// LongAnswersOff keeps Chat Completions for every deployment: an
	// answer ends at the budget.
	LongAnswersOff = "off"
)

// maxLongAnswerLimit caps LONG_ANSWER_LIMIT: a caller follows a long
// answer hop by hop, and none waits a day for one.
const maxLongAnswerLimit = 24 * time.Hour

// Background reports whether answers run in the Responses API's background
// mode, across hops: LONG_ANSWERS is background and the deployment's model
// supports it, and so does every backend's of the pool (a create may fail
// over to any). Every other deployment keeps Chat Completions.
func (c Config) Background() bool {
	if c.LongAnswers != LongAnswersBackground || !modelfacts.Lookup(c.Model).Background {
		return false
	}
	for _, b := range c.Backends {
		if !modelfacts.Lookup(b.Model).Background {
			return false
		}
	}
	return true
}

// Load reads and validates the configuration from getenv. It returns every
// problem at once, joined, each naming its variable.
func Load(getenv func(string) string) (Config, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	duration := func(name string, def time.Duration) time.Duration {
		v := get(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			bad(name, "%q is not a duration (examples: 200s, 1500ms, 3m)", v)
			return def
		}
		if d <= 0 {
			bad(name, "%q must be positive", v)
			return def
		}
		return d
	}
	integer := func(name string, def, lo, hi int) int {
		v := get(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			bad(name, "%q must be a whole number from %d to %d", v, lo, hi)
			return def
		}
		return n
	}

	c := Config{
		Port:                integer("FUNCTIONS_CUSTOMHANDLER_PORT", 8080, 0, 65535),
		Deployment:          get("AZURE_OPENAI_DEPLOYMENT"),
		Model:               get("AZURE_OPENAI_MODEL"),
		APIVersion:          get("AZURE_OPENAI_API_VERSION"),
		APIKey:              get("AZURE_OPENAI_API_KEY"),
		ClientID:            get("AZURE_CLIENT_ID"),
		ManagedIdentity:     get("IDENTITY_ENDPOINT") != "",
		Budget:              duration("REQUEST_BUDGET", 200*time.Second),
		FastFailure:         duration("FAST_FAILURE_THRESHOLD", retry.DefaultFastFailure),
		ClientTimeoutMargin: duration("CLIENT_TIMEOUT_MARGIN", 2*time.Second),
		UpstreamAttempts:    integer("UPSTREAM_MAX_ATTEMPTS", retry.DefaultUpstreamAttempts, 1, 5),
		MaxTokens:           integer("MAX_TOKENS", 1024, 1, 1_000_000),
		TPM:                 integer("DEPLOYMENT_TPM", 0, 0, 1_000_000_000),
		FetchTimeout:        duration("FETCH_TIMEOUT", 15*time.Second),
		ExtractTimeout:      duration("EXTRACT_TIMEOUT", 15*time.Second),
		MaterialInFlight:    int64(integer("MATERIAL_IN_FLIGHT_MB", 640, 128, 1<<20)) << 20,
		MinUpstreamTime:     duration("MIN_UPSTREAM_TIME", 3*time.Second),
	}

	if v := get("AZURE_OPENAI_BACKENDS"); v != "" {
		loadBackends(&c, v, get, bad)
		c.APIVersion, c.APIKey = "", ""
	} else {
		if v := get("AZURE_OPENAI_ENDPOINT"); v == "" {
			bad("AZURE_OPENAI_ENDPOINT", "required (https://<resource>.openai.azure.com; `make run` sets the simulator's), or AZURE_OPENAI_BACKENDS")
		} else {
			c.Endpoint = endpoint("AZURE_OPENAI_ENDPOINT", v, bad, &c.Warnings)
		}
		// Today's single deployment is the pool of one.
		c.Backends = []Backend{{Name: DefaultBackend, Endpoint: c.Endpoint, Deployment: c.Deployment, Model: cmp.Or(c.Model, c.Deployment),
			Priority: 1, Weight: 1, APIVersion: c.APIVersion, APIKey: c.APIKey}}
	}
	c.BackendCooldownMax = duration("BACKEND_COOLDOWN_MAX", DefaultBackendCooldownMax)
	c.Model = cmp.Or(c.Model, c.Deployment)
	if c.Deployment == "" {
		bad("AZURE_OPENAI_DEPLOYMENT", "required (the model deployment name; with AZURE_OPENAI_BACKENDS, the name callers use)")
	} else if p := deploymentProblem(c.Deployment); p != "" {
		bad("AZURE_OPENAI_DEPLOYMENT", "%s", p)
	}
	if c.Budget >= PlatformLimit {
		bad("REQUEST_BUDGET", "%s must be below the platform's %s limit (keep a margin: 200s is the default)", c.Budget, PlatformLimit)
	}
	if c.FastFailure >= c.Budget {
		bad("FAST_FAILURE_THRESHOLD", "%s must be below REQUEST_BUDGET (%s)", c.FastFailure, c.Budget)
	}
	if c.ClientTimeoutMargin >= c.Budget {
		bad("CLIENT_TIMEOUT_MARGIN", "%s must be below REQUEST_BUDGET (%s)", c.ClientTimeoutMargin, c.Budget)
	}

	// The model (or the deployment named after it) gives the facts, or
	// CONTEXT_WINDOW and TOKENIZER say what the name does not.
	facts := modelfacts.Lookup(c.Model)
	c.Encoding = facts.Encoding
	if v := get("TOKENIZER"); v != "" {
		if v != "o200k_base" && v != "cl100k_base" {
			bad("TOKENIZER", "%q must be o200k_base or cl100k_base", v)
		} else {
			c.Encoding = v
		}
	}
	// The prompt must fit the smallest window of the pool, wherever it goes.
	window := min(facts.PromptWindow(c.MaxTokens)+c.MaxTokens, checkPoolModels(&c, bad))
	c.ContextWindow = integer("CONTEXT_WINDOW", window, 256, 10_000_000)
	if c.MaxTokens >= c.ContextWindow {
		bad("MAX_TOKENS", "%d must be below CONTEXT_WINDOW (%d)", c.MaxTokens, c.ContextWindow)
	}

	for _, o := range strings.Split(get("ALLOWED_ORIGINS"), ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if _, err := origin.ParsePattern(o); err != nil {
			bad("ALLOWED_ORIGINS", "%q: %v", o, err)
			continue
		}
		c.AllowedOrigins = append(c.AllowedOrigins, strings.ToLower(o))
	}

	c.Auth = loadAuth(get, bad)
	c.Quota = loadQuota(get, bad)

	switch v := strings.ToLower(get("LONG_ANSWERS")); v {
	case "", LongAnswersBackground:
		c.LongAnswers = LongAnswersBackground
	case LongAnswersOff:
		c.LongAnswers = LongAnswersOff
	default:
		bad("LONG_ANSWERS", "%q must be background or off", v)
	}
	c.LongAnswerLimit = duration("LONG_ANSWER_LIMIT", 30*time.Minute)
	if c.LongAnswerLimit < c.Budget || c.LongAnswerLimit > maxLongAnswerLimit {
		bad("LONG_ANSWER_LIMIT", "%s must be from REQUEST_BUDGET (%s) to %s", c.LongAnswerLimit, c.Budget, maxLongAnswerLimit)
	}

	c.CursorKeys, c.Warnings = loadCursorKeys(get, c.Background(), bad, c.Warnings)

	switch v := strings.ToLower(get("LOG_LEVEL")); v {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		bad("LOG_LEVEL", "%q must be debug, info, warn or error", v)
	}

	if len(errs) > 0 {
		return Config{}, problems(errs)
	}
	return c, nil
}

// endpoint checks v, the value of setting name, as an Azure OpenAI
// resource's URL and returns its root; nil after a problem, which bad is
// told of.
func endpoint(name, v string, bad func(name, format string, args ...any), warnings *[]string) *url.URL {
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		bad(name, "%q is not an http(s) URL", v)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		bad(name, "%q: http is allowed only for a loopback host; use https", v)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		bad(name, "%q must be a bare resource URL without credentials, query or fragment", v)
	default:
		return resourceRoot(name, u, bad, warnings)
	}
	return nil
}

// resourceRoot is the endpoint u as the resource's root URL, which is what
// package aoai adds its paths to (/openai/v1/..., /openai/deployments/...).
// A trailing /openai or /openai/v1 (the form the OpenAI SDKs' samples for
// Azure write) is taken off with a warning; any other path would send every
// call to a URL Azure OpenAI answers with 404, so it is refused.
func resourceRoot(name string, u *url.URL, bad func(name, format string, args ...any), warnings *[]string) *url.URL {
	path := strings.TrimRight(u.Path, "/")
	root := *u
	root.Path, root.RawPath = "", ""
	switch {
	case path == "":
	case strings.EqualFold(path, "/openai") || strings.EqualFold(path, "/openai/v1"):
		*warnings = append(*warnings, fmt.Sprintf("%s: the path %s was taken off: timebox adds the API's path itself; "+
			"write the resource's root, %s", name, u.Path, root.String()))
	default:
		bad(name, "%q has a path (%s): write the resource's root URL, %s, without a path (timebox adds the API's path itself)",
			u.String(), u.Path, root.String())
		return nil
	}
	return &root
}

// problems is every invalid setting, said in one line: the Functions host
// files each line of stderr as a trace of its own, so the operator's query
// for "invalid configuration" (docs/deploy.md) finds the line that names
// every problem, not a heading whose problems are in other traces.
type problems []error

func (p problems) Error() string {
	var b strings.Builder
	b.WriteString("invalid configuration: ")
	for i, err := range p {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return b.String()
}

func (p problems) Unwrap() []error { return p }

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
