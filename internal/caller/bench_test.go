package caller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// BenchmarkEntraCheck is the per-request cost of AUTH_MODE=entra with the
// tenant's keys cached: parse, RS256 verification, claim checks.
func BenchmarkEntraCheck(b *testing.B) {
	iss, err := issuertest.New()
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(iss)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	e, err := caller.NewEntra(caller.EntraOptions{Authority: u, Audiences: []string{audience}, Policy: caller.Policy{Tenants: []string{tenant}, Scope: "user_impersonation"}})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := iss.Mint(issuertest.Token{Authority: srv.URL, Tenant: tenant, Audience: audience, Scopes: []string{"user_impersonation"}})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	if _, err := e.Check(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Check(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
