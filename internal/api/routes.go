package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes lists the whole API. Paths are as the Functions host forwards them
// (the default routePrefix "api"); "/" is the host's readiness ping.
func (s *server) routes(r chi.Router) {
	get(r, "/", s.handleReady())
	get(r, "/api/health", s.handleHealth())
	// The chat route checks the caller first (checkCaller).
	r.Method(http.MethodPost, "/api/chat", chatRoute{s})
}

// get serves h on GET and on HEAD, as everywhere GET is (RFC 9110, 9.3.2;
// net/http drops the body). Each is a route of its own, not chi's GetHead
// middleware: a middleware is a frame on the stack of every request.
func get(r chi.Router, pattern string, h http.HandlerFunc) {
	r.Get(pattern, h)
	r.Head(pattern, h)
}
