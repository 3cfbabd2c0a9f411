package api

import (
	"net/http"
	"strings"

	"github.com/rs/cors"

	"github.com/timebox-dev/timebox/internal/origin"
)

// Headers a browser may send and read. SPFx's AadHttpClient sends
// Authorization and JSON, so every call from a web part is preflighted. The
// OpenAI SDKs send headers of their own besides (allowedFamilies); api-key
// (AzureOpenAI with a key) is let through the preflight only so that its
// request is refused readably (401): no key is taken from a caller.
var (
	allowedHeaders = []string{"Content-Type", "Authorization", "x-client-timeout-ms", "x-request-id", "x-functions-key",
		"Accept", "User-Agent", "api-key"}
	exposedHeaders = []string{"Retry-After", "retry-after-ms", "x-should-retry", "x-request-id", "Server-Timing", "WWW-Authenticate"}
)

// allowedFamilies are header name prefixes allowed whole: the
// Stainless-generated OpenAI SDKs send x-stainless-* (arch, os, lang,
// runtime and their versions, retry count, timeout, helper) and OpenAI's
// openai-* (organization, project), and add to both with new releases.
var allowedFamilies = []string{"x-stainless-", "openai-"}

// headerAllowed reports whether a browser may send the header name.
func headerAllowed(name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, h := range allowedHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	for _, f := range allowedFamilies {
		if strings.HasPrefix(name, f) && len(name) > len(f) {
			return true
		}
	}
	return false
}

// allowHeaders answers a preflight that asks for a header the API does not
// take as rs/cors answers one it refuses: with no CORS headers, which the
// browser reads as a refusal. rs/cors itself allows every requested header
// (it matches no name families), so this is where the list is kept.
func (s *server) allowHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			for _, v := range r.Header.Values("Access-Control-Request-Headers") {
				for name := range strings.SplitSeq(v, ",") {
					if strings.TrimSpace(name) != "" && !headerAllowed(name) {
						w.Header().Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
						w.WriteHeader(http.StatusNoContent)
						return
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// newCORS answers preflights and sets CORS headers on every answer to an
// allowed origin, errors included (its Handler is the middleware). Which
// origins are allowed is decided by package origin (parsed, whole labels
// for a wildcard), not by rs/cors's string match. The settings were checked
// when they were loaded; one that does not parse allows nothing.
func newCORS(origins []string) *cors.Cors {
	set, _ := origin.NewSet(origins)
	return cors.New(cors.Options{
		AllowOriginFunc: set.Allows,
		// Every method, so that a 405 is readable too; the routes decide
		// what is served.
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: []string{"*"}, // as allowHeaders allows them
		ExposedHeaders: exposedHeaders,
		MaxAge:         600,
	})
}

// checkOrigin refuses a request whose Origin is present and not allowed,
// or that carries more than one Origin header (a browser sends one; with
// two, which one CORS would echo is anybody's guess), before anything else
// happens: no upstream call, no CORS headers. Callers that send no Origin,
// such as the CLI or another service, pass.
func (s *server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case len(r.Header.Values("Origin")) > 1:
			s.fail(w, r, errOriginAmbiguous)
		case r.Header.Get("Origin") != "" && !s.cors.OriginAllowed(r):
			s.fail(w, r, errOriginNotAllowed)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
