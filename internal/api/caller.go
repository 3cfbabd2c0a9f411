package api

import (
	"context"
	"net/http"

	"github.com/timebox-dev/timebox/internal/caller"
)

// requireCaller lets through only a caller the configured check
// (Options.Caller, chosen by AUTH_MODE) verifies, and puts it in the
// request's context (caller.FromContext), where the quota and the long
// answers' owner check read it, and its object and tenant ids on the log
// line. Refusals (401, 403, 503 auth_unavailable) go through the error
// table before anything of the request is read or sent upstream.
func (s *server) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// In every mode: no key is taken from a caller (docs/auth.md).
		if err := caller.RefuseAPIKey(r); err != nil {
			s.fail(w, r, err)
			return
		}
		c, err := s.Caller.Check(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rec := recordFrom(r.Context())
		rec.callerOID, rec.callerTID = c.OID, c.TID
		next.ServeHTTP(w, r.WithContext(caller.NewContext(r.Context(), c)))
	})
}

// callerOf is the verified caller of ctx's request (requireCaller): the
// anonymous caller on a route that does not check.
func callerOf(ctx context.Context) caller.Caller {
	c, _ := caller.FromContext(ctx)
	return c
}
