package caller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// BenchmarkEntraCheck is the per-request cost of AUTH_MODE=entra with the
// tenant's keys cached: parse, RS256 verification, claim checks.
func BenchmarkEntraCheck(b *testing.B) {
	s := newStack(b, newIssuer(b), caller.Policy{Scope: "user_impersonation"})
	r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
	r.Header.Set("Authorization", "Bearer "+s.mint(issuertest.Token{Scopes: []string{"user_impersonation"}}))
	if _, err := s.entra.Check(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.entra.Check(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
