package api

import "github.com/go-chi/chi/v5"

// routes lists the whole API. Paths are as the Functions host forwards them
// (the default routePrefix "api"); "/" is the host's readiness ping.
func (s *server) routes(r chi.Router) {
	r.Get("/", s.handleReady())
	r.Get("/api/health", s.handleHealth())
	// Only the route that spends tokens checks the caller: preflights end in
	// CORS before any route, and the readiness ping and health need none.
	r.With(s.checkCaller).Post("/api/chat", s.handleChat())
}
