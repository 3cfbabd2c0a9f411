package caller_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// FuzzEntraAuthorization sends anything as the Authorization header to a
// warm Entra checker: it never panics, every refusal is a classified
// *caller.Error, and the only inputs accepted are the tokens the issuer
// signed (no mutation of one verifies).
func FuzzEntraAuthorization(f *testing.F) {
	s := newStack(f, newIssuer(f), caller.Policy{})
	signed := map[string]bool{}
	for _, tok := range []issuertest.Token{{Version: 1}, {Version: 2}, {Forgery: issuertest.AlgNone}, {Forgery: issuertest.HMACWithPublicKey}, {Forgery: issuertest.BadSignature}, {Audience: "api://other"}} {
		authorization := "Bearer " + s.mint(tok)
		if tok.Forgery == issuertest.NoForgery && tok.Audience == "" {
			signed[authorization] = true
		}
		f.Add(authorization)
	}
	f.Add("")
	f.Add("Bearer ")
	f.Add("Basic dXNlcjpwYXNz")
	f.Add("Bearer a.b.c")
	f.Add("bearer eyJhbGciOiJub25lIn0.e30.")
	// Warm the cache once: the fuzzer then exercises parsing and
	// verification, not the network.
	for a := range signed {
		r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
		r.Header.Set("Authorization", a)
		if _, err := s.entra.Check(context.Background(), r); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, authorization string) {
		r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
		if authorization != "" {
			r.Header["Authorization"] = []string{authorization}
		}
		c, err := s.entra.Check(context.Background(), r)
		if err == nil {
			if !signed[authorization] && !signed["Bearer "+trimBearer(authorization)] {
				t.Fatalf("accepted an input the issuer never signed: %q -> %+v", authorization, c)
			}
			return
		}
		var ce *caller.Error
		if !errors.As(err, &ce) || ce.Kind == 0 {
			t.Fatalf("unclassified refusal: %v", err)
		}
	})
}

// trimBearer is the token of an Authorization value whose scheme is any case
// of Bearer, with the spaces the checker trims.
func trimBearer(v string) string {
	if len(v) > 7 {
		return trimSpaces(v[7:])
	}
	return ""
}

func trimSpaces(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
