package api

import (
	"cmp"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes lists the whole API. Paths are as the Functions host forwards them
// (the default routePrefix "api"); "/" is the host's readiness ping.
func (s *server) routes(r chi.Router) {
	get(r, "/", s.handleReady())
	get(r, "/api/health", s.handleHealth())
	// The chat route checks the caller first (checkCaller).
	r.Method(http.MethodPost, "/api/chat", chosen{chatRoute{s}})
}

// get serves h on GET and on HEAD, as everywhere GET is (RFC 9110, 9.3.2;
// net/http drops the body). Each is a route of its own, not chi's GetHead
// middleware: a middleware is a frame on the stack of every request.
func get(r chi.Router, pattern string, h http.HandlerFunc) {
	r.Method(http.MethodGet, pattern, chosen{h})
	r.Method(http.MethodHead, pattern, chosen{h})
}

// chosen is how a route is registered with chi: chi chooses the route (the
// pattern, the method, a 404 or a 405 when none matches) and front serves
// it once chi has returned, so that chi's frames (Mux.ServeHTTP, its
// handler and routeHTTP: 370 bytes) are not on the stack of a request
// waiting on Azure OpenAI (see BenchmarkHeldRequests). front then keeps
// the pattern chi chose, for the log line, and gives chi's routing context
// back to its pool before it serves the route (server.chosen).
type chosen struct{ h http.Handler }

func (c chosen) ServeHTTP(_ http.ResponseWriter, r *http.Request) {
	recordFrom(r.Context()).serve = c.h
}

// routeMethods are the methods chi routes; pathPattern asks chi for each.
var routeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace,
}

// pathRoute is the pattern of the route r's path matches with some other
// method than r's, as chi matches it, and the methods that path takes, for
// the 405's Allow header (RFC 9110, 15.5.6: a 405 names them); "" and none
// when no route has that path (chi also answers 405 to a method it does
// not know, whatever the path). Only a 405 pays for it.
func (s *server) pathRoute(r *http.Request) (pattern string, allow []string) {
	path := cmp.Or(r.URL.RawPath, r.URL.Path, "/")
	rctx := s.routing.Get().(*chi.Context)
	defer s.routing.Put(rctx)
	for _, m := range routeMethods {
		rctx.Reset()
		if p := s.mux.Find(rctx, m, path); p != "" {
			pattern = cmp.Or(pattern, p)
			allow = append(allow, m)
		}
	}
	return pattern, allow
}
