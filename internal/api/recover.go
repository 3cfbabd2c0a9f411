package api

import (
	"fmt"
	"net/http"
)

// recoverPanic turns a panic below it into a 500 internal_error, which
// still carries the CORS headers set on the way in; the detail goes to the
// log line, never to the caller. A handler that aborts (http.ErrAbortHandler)
// is let through to net/http, which drops the connection, with no log line.
func (s *server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.fail(w, r, panicError{v})
		}()
		next.ServeHTTP(w, r)
	})
}

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }
