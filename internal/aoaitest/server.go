package aoaitest

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/timebox-dev/timebox/internal/modelfacts"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// DefaultDeployment is the one deployment a Server knows when
// Options.Deployments is nil.
const DefaultDeployment = "gpt-4o-mini"

// maxRecords bounds the history Requests returns, so a long-running
// simulator does not grow without end; the oldest records go first.
const maxRecords = 10000

// Options configures a Server. The zero value is a server with one
// deployment (DefaultDeployment), no authentication, no latency and no rate
// limit.
type Options struct {
	// Deployments lists the known deployment names; nil means
	// {DefaultDeployment}. Any other name gets the recorded 404
	// DeploymentNotFound.
	Deployments []string
	// Model is the model name reported in responses and used to count
	// tokens; empty means derived from the deployment name (its version
	// suffix dropped: "gpt-4-0613" reports "gpt-4").
	Model string
	// APIKey, when non-empty, is the key the api-key header must carry.
	APIKey string
	// AcceptBearer accepts any non-empty "Authorization: Bearer" token.
	// When APIKey is set or AcceptBearer is true, a request carrying neither
	// valid credential gets the recorded 401; when neither is configured,
	// every request is accepted.
	AcceptBearer bool
	// TimeToFirstToken is the wait before the first byte of an answer.
	TimeToFirstToken time.Duration
	// PerToken is the wait per completion token: a non-streaming answer
	// waits TimeToFirstToken + n*PerToken before its first byte; a stream
	// sends its first events after TimeToFirstToken and one content delta
	// per PerToken.
	PerToken time.Duration
	// TPM is each deployment's tokens-per-minute limit over a sliding 60 s
	// window of estimates (prompt tokens + max_tokens, as Azure estimates),
	// and with it the request rate Azure pairs with it: 6 RPM per 1000 TPM,
	// evaluated per 10 s (TPM/1000 requests in any 10 s). 0 means
	// unlimited, and the x-ratelimit-remaining-* headers then count down a
	// nominal 1,000,000 tokens (1,000 requests per 10 s) that is never
	// enforced.
	TPM int
	// ContextWindow is the model's context window in tokens, and no input
	// limit besides it; 0 means by model, from package modelfacts (128000
	// for gpt-4o, 8192 for gpt-4, 400000 with a 272000 input limit for
	// gpt-5, ...).
	ContextWindow int
	// Logger receives one Info line per request (never prompt text or
	// credentials); nil means no logging.
	Logger *slog.Logger
	// Backend is the name of the backend of timebox's pool this
	// simulator plays: a directive with backend= another name does not
	// play here. Empty plays only the directives that name none.
	Backend string
}

// Stats are a Server's counters.
type Stats struct {
	// Requests counts every request received.
	Requests int
	// InFlight counts requests not finished yet.
	InFlight int
	// Completed counts requests answered in full, whatever the status.
	Completed int
	// Cancelled counts requests whose client went away (their context
	// ended) before the answer was finished.
	Cancelled int
	// Reset counts connections closed without an answer by a reset
	// directive.
	Reset int
	// Throttled counts 429 answers (limiter and throttle directive).
	Throttled int
	// PromptTokens and CompletionTokens sum the usage of 200 answers, and
	// of Responses API generations that completed (or ended incomplete),
	// once each, however many calls streamed them.
	PromptTokens, CompletionTokens int
	// Generations counts Responses API responses created.
	Generations int
}

// Record describes one request as the Server saw it.
type Record struct {
	// Method is the request's method; Path its URL path, Query its raw
	// query ("stream=true&starting_after=12" on a resume).
	Method, Path, Query string
	// ResponseID is the Responses API response the request created or
	// named; empty for Chat Completions.
	ResponseID string
	// Deployment is the deployment named by the path or, on the v1 path,
	// the body's model; empty when the request got no further than routing.
	Deployment string
	// Auth is the credential accepted: "api-key", "bearer", or "" (none
	// presented, or rejected).
	Auth string
	// MaxTokens is max_completion_tokens or else max_tokens; 0 when absent.
	MaxTokens int
	// Stream is the request's stream flag.
	Stream bool
	// Status is the HTTP status sent; 0 when none was (reset, or cancelled
	// before the first byte).
	Status int
	// Cancelled is true when the client went away before the answer was
	// finished.
	Cancelled bool
	// Fault is the kind of the directive that shaped the answer, "" for
	// none.
	Fault string
	// PromptTokens and CompletionTokens are the usage of a 200 answer
	// (prompt tokens are also set on 429 and 400 context errors).
	PromptTokens, CompletionTokens int
	// RequestID is the apim-request-id sent; ClientRequestID the
	// x-ms-client-request-id received.
	RequestID, ClientRequestID string
	// Start is when the request arrived; Elapsed how long it took.
	Start   time.Time
	Elapsed time.Duration
}

// Server is a simulated Azure OpenAI resource. It implements http.Handler
// and is safe for concurrent use.
type Server struct {
	opts        Options
	deployments map[string]bool
	log         *slog.Logger

	mu       sync.Mutex
	limits   map[string]*limiter // by deployment
	counters map[string]int      // directive Times counters, by counterKey
	counts   map[string]*tokens.Counter
	stats    Stats
	records  []Record
	gens     map[string]*generation // Responses API responses, by id
	genOrder []string               // their ids, oldest first
}

// New returns a Server configured by o.
func New(o Options) *Server {
	deps := o.Deployments
	if deps == nil {
		deps = []string{DefaultDeployment}
	}
	known := make(map[string]bool, len(deps))
	for _, d := range deps {
		known[d] = true
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		opts:        o,
		deployments: known,
		log:         log,
		limits:      map[string]*limiter{},
		counters:    map[string]int{},
		counts:      map[string]*tokens.Counter{},
		gens:        map[string]*generation{},
	}
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Requests returns the records of finished requests, oldest first (at most
// the last 10000).
func (s *Server) Requests() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.records[max(0, len(s.records)-maxRecords):]
	out := make([]Record, len(recs))
	copy(out, recs)
	return out
}

// begin counts a request in.
func (s *Server) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	s.stats.InFlight++
}

// finish counts a request out, keeps its record and logs it.
func (s *Server) finish(rec Record, reset bool) {
	s.mu.Lock()
	s.stats.InFlight--
	switch {
	case rec.Cancelled:
		s.stats.Cancelled++
	case reset:
		s.stats.Reset++
	default:
		s.stats.Completed++
	}
	if rec.Status == 429 {
		s.stats.Throttled++
	}
	if rec.Status == 200 && !rec.Cancelled {
		s.stats.PromptTokens += rec.PromptTokens
		s.stats.CompletionTokens += rec.CompletionTokens
	}
	// Trim in halves so that keeping the last maxRecords costs O(1) per
	// request on average.
	if len(s.records) == 2*maxRecords {
		s.records = append(s.records[:0], s.records[maxRecords:]...)
	}
	s.records = append(s.records, rec)
	s.mu.Unlock()

	s.log.Info("aoai request",
		slog.String("request_id", rec.RequestID),
		slog.String("method", rec.Method),
		slog.String("path", rec.Path),
		slog.String("response_id", rec.ResponseID),
		slog.String("deployment", rec.Deployment),
		slog.String("auth", rec.Auth),
		slog.Int("status", rec.Status),
		slog.Bool("stream", rec.Stream),
		slog.Int("max_tokens", rec.MaxTokens),
		slog.Int("prompt_tokens", rec.PromptTokens),
		slog.Int("completion_tokens", rec.CompletionTokens),
		slog.String("fault", rec.Fault),
		slog.Bool("cancelled", rec.Cancelled),
		slog.Int64("elapsed_ms", rec.Elapsed.Milliseconds()),
	)
}

// authorize checks the request's credentials. It returns the credential
// accepted ("api-key", "bearer", or "" when the server requires none and
// none was sent) and whether the request may proceed.
func (s *Server) authorize(key, authorization string) (string, bool) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	token = strings.TrimSpace(token)
	hasBearer := strings.EqualFold(scheme, "Bearer") && token != ""
	if s.opts.APIKey == "" && !s.opts.AcceptBearer {
		switch {
		case key != "":
			return "api-key", true
		case hasBearer:
			return "bearer", true
		}
		return "", true
	}
	if s.opts.APIKey != "" && key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) == 1 {
		return "api-key", true
	}
	if s.opts.AcceptBearer && hasBearer {
		return "bearer", true
	}
	return "", false
}

// fire reports whether directive d applies to this request: always without
// Times, else only for the first Times requests with its counter key.
func (s *Server) fire(d Directive) bool {
	if d.Times <= 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := d.counterKey()
	if s.counters[k] >= d.Times {
		return false
	}
	s.counters[k]++
	return true
}

// limiterFor returns the rate limiter of a deployment; s.mu must be held.
func (s *Server) limiterFor(deployment string) *limiter {
	l, ok := s.limits[deployment]
	if !ok {
		l = newLimiter(s.opts.TPM)
		s.limits[deployment] = l
	}
	return l
}

// admit runs the rate limiter for est tokens on a deployment.
func (s *Server) admit(deployment string, est int) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiterFor(deployment).admit(time.Now(), est)
}

// peek reports a deployment's remaining quota without spending any.
func (s *Server) peek(deployment string) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiterFor(deployment).peek(time.Now())
}

// counter returns the token counter of a model's encoding.
func (s *Server) counter(model string) (*tokens.Counter, error) {
	enc := modelfacts.Lookup(model).Encoding
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.counts[enc]; ok {
		return c, nil
	}
	c, err := tokens.New(enc)
	if err != nil {
		return nil, fmt.Errorf("count tokens: %w", err)
	}
	s.counts[enc] = c
	return c, nil
}

// model returns the model name reported for a deployment.
func (s *Server) model(deployment string) string {
	if s.opts.Model != "" {
		return s.opts.Model
	}
	return deriveModel(deployment)
}

// facts returns a model's facts, with Options.ContextWindow when set.
func (s *Server) facts(model string) modelfacts.Facts {
	f := modelfacts.Lookup(model)
	if s.opts.ContextWindow > 0 {
		f.ContextWindow, f.InputLimit = s.opts.ContextWindow, 0
	}
	return f
}

// versionSuffix matches a deployment name's model version: "-0613" or
// "-2024-08-06".
var versionSuffix = regexp.MustCompile(`-(\d{4}|\d{4}-\d{2}-\d{2})$`)

func deriveModel(deployment string) string {
	return versionSuffix.ReplaceAllString(deployment, "")
}

// newUUID returns a random RFC 4122 version 4 UUID, the shape of Azure's
// apim-request-id and x-request-id.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
