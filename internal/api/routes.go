package api

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// routes lists the whole API and every rule a request passes on its way,
// in order. Paths are as the Functions host forwards them, as the caller
// wrote them (host.json's routePrefix is empty); "/" is the host's
// readiness ping.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(
		s.startBudget,  // the request's deadline, from its first line
		s.boundWrites,  // every write of the answer gives up a grace after that deadline
		s.requestID,    // the caller's x-request-id when sane, else a new one
		s.guardBody,    // an unread body neither stalls the answer nor resets it
		s.logLine,      // one line per request, once its answer has gone
		s.speaks,       // errors in OpenAI's shape under /openai/, timebox's elsewhere
		s.checkOrigin,  // 403 to a browser origin not allowed, before anything else
		s.allowHeaders, // a preflight asks only for headers the API takes
		s.cors.Handler, // CORS headers; the answer to a preflight
		s.recoverPanic, // a panic is a readable 500
	)
	r.NotFound(s.handleNotFound())
	r.MethodNotAllowed(s.handleMethodNotAllowed())

	// GET routes answer HEAD too (RFC 9110, 9.3.2; net/http drops the body).
	r.Method(http.MethodGet, "/", s.handleReady())
	r.Method(http.MethodHead, "/", s.handleReady())
	r.Method(http.MethodGet, "/api/health", s.handleHealth())
	r.Method(http.MethodHead, "/api/health", s.handleHealth())

	// The routes that spend tokens: the caller's deadline holds from here,
	// the caller check included, and nothing of the request is read before
	// the caller is known.
	r.Group(func(r chi.Router) {
		r.Use(
			s.clientDeadline,    // x-client-timeout-ms shortens the budget
			s.boundWrites,       // and the bound of the answer's writes with it
			s.requireCaller,     // 401, 403, 503 auth_unavailable
			s.refuseBadDeadline, // 400 to a malformed x-client-timeout-ms
			s.openBill,          // the request's tokens and quota hold; a hold still open is settled once the answer has gone
		)
		// A chat's reservation is taken once its prompt is fitted, before
		// the upstream call (prepareChat).
		r.Method(http.MethodPost, "/api/chat", s.handleChat())
		r.Method(http.MethodGet, "/api/usage", s.handleUsage())
		r.Method(http.MethodHead, "/api/usage", s.handleUsage())
		r.Method(http.MethodPost, "/api/chat/continue", s.handleContinue()) // long answers: the next hop
		r.Method(http.MethodPost, "/api/chat/cancel", s.handleCancel())

		// The OpenAI dialect of the same pipeline, for the official SDKs.
		r.Method(http.MethodPost, "/openai/v1/chat/completions", s.handleOpenAIChat(false))
		r.Method(http.MethodPost, "/openai/deployments/{deployment}/chat/completions", s.handleOpenAIChat(true))
		r.Method(http.MethodGet, "/openai/v1/models", s.handleOpenAIModels())
		r.Method(http.MethodHead, "/openai/v1/models", s.handleOpenAIModels())
		r.Method(http.MethodGet, "/openai/models", s.handleOpenAIModels()) // AzureOpenAI's models.list(), ?api-version=...
		r.Method(http.MethodHead, "/openai/models", s.handleOpenAIModels())
	})
	return r
}

// handleReady answers the Functions host's readiness ping.
func (s *server) handleReady() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

// handleHealth says the handler is up and which version it runs, without
// calling Azure OpenAI.
// handleHealth answers liveness with the version and, with a pool, how
// many of its backends can take a call and how many are skipped: counts,
// never names or URLs, since health answers anyone.
func (s *server) handleHealth() http.Handler {
	type backends struct {
		Available int `json:"available"`
		Cooling   int `json:"cooling"`
	}
	type health struct {
		Status   string    `json:"status"`
		Version  string    `json:"version"`
		Backends *backends `json:"backends,omitempty"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := health{Status: "ok", Version: s.Version}
		if s.Backends != nil {
			available, cooling := s.Backends()
			h.Backends = &backends{Available: available, Cooling: cooling}
		}
		writeJSON(w, http.StatusOK, h)
	})
}

func (s *server) handleNotFound() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errNotFound) }
}

// routeMethods are the methods chi routes, in the order a 405's Allow
// header names them.
var routeMethods = []string{
	http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
	http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace,
}

// handleMethodNotAllowed answers a path asked with a method it does not
// take (or a method chi does not know), naming in Allow the methods the
// path does take (RFC 9110, 15.5.6). chi matches a route only on path and
// method together, so the path's own route, for the log line, is found
// here.
func (s *server) handleMethodNotAllowed() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		routes, path := chi.RouteContext(r.Context()).Routes, cmp.Or(r.URL.RawPath, r.URL.Path)
		var allow []string
		for _, m := range routeMethods {
			if pattern := routes.Find(chi.NewRouteContext(), m, path); pattern != "" {
				recordFrom(r.Context()).route = pattern
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		s.fail(w, r, errMethodNotAllowed)
	}
}
