package api

import (
	"net/http"

	"github.com/rs/cors"

	"github.com/timebox-dev/timebox/internal/origin"
)

// Headers a browser may send and read. SPFx's AadHttpClient sends
// Authorization and JSON, so every call from a web part is preflighted.
var (
	allowedHeaders = []string{"Content-Type", "Authorization", "x-client-timeout-ms", "x-request-id", "x-functions-key"}
	exposedHeaders = []string{"Retry-After", "retry-after-ms", "x-should-retry", "x-request-id", "Server-Timing", "WWW-Authenticate"}
)

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
		AllowedHeaders: allowedHeaders,
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
