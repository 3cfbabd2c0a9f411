package caller_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

const (
	tenant   = issuertest.DefaultTenant
	audience = "api://timebox-test"
	// authority is the local issuer's address as the checker is told it; the
	// memnet client reaches the issuer whatever the address.
	authority = "http://127.0.0.1:9"
)

// stack is an Entra checker and the local issuer it trusts, joined by an
// in-memory network so that, inside a synctest bubble, the clock is the
// bubble's.
type stack struct {
	t      testing.TB
	iss    *issuertest.Issuer
	entra  *caller.Entra
	policy caller.Policy
}

// newStack builds it; call it inside a synctest bubble where a test's
// clock matters (the benchmark and the fuzz target need none).
func newStack(t testing.TB, iss *issuertest.Issuer, policy caller.Policy) *stack {
	t.Helper()
	_, client := memnet.Serve(t, iss)
	u, _ := url.Parse(authority)
	if policy.Tenants == nil {
		policy.Tenants = []string{tenant}
	}
	e, err := caller.NewEntra(caller.EntraOptions{Authority: u, Audiences: []string{audience}, Policy: policy, Client: client})
	require.NoError(t, err)
	return &stack{t: t, iss: iss, entra: e, policy: policy}
}

func (s *stack) mint(tok issuertest.Token) string {
	s.t.Helper()
	if tok.Authority == "" {
		tok.Authority = authority
	}
	if tok.Tenant == "" {
		tok.Tenant = tenant
	}
	if tok.Audience == "" {
		tok.Audience = audience
	}
	raw, err := s.iss.Mint(tok)
	require.NoError(s.t, err)
	return raw
}

func (s *stack) check(token string) (caller.Caller, error) {
	r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return s.entra.Check(context.Background(), r)
}

func kindOf(err error) caller.Kind {
	var e *caller.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func newIssuer(t testing.TB) *issuertest.Issuer {
	t.Helper()
	iss, err := issuertest.New()
	require.NoError(t, err)
	return iss
}

func TestValidV1AndV2TokensNameTheCaller(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{Scope: "access_as_user"})
		for _, v := range []int{1, 2} {
			c, err := s.check(s.mint(issuertest.Token{Version: v, Scopes: []string{"access_as_user", "other"}, Roles: []string{"Reader"}}))
			require.NoError(t, err, "v%d", v)
			assert.Equal(t, caller.Caller{OID: issuertest.TestUserOID, TID: tenant, Scopes: []string{"access_as_user", "other"}, Roles: []string{"Reader"}}, c)
		}
		assert.Equal(t, 1, iss.KeyFetches(), "keys are fetched once, then cached")
	})
}

func TestRotationIsAcceptedAfterOneRefreshAtMostOnceAMinute(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{})
		_, err := s.check(s.mint(issuertest.Token{}))
		require.NoError(t, err)
		require.Equal(t, 1, iss.KeyFetches())
		time.Sleep(caller.RefreshInterval) // virtual time; the first fetch counts too

		// A rotation: the new key is unknown to the cache; one refresh finds it.
		_, err = iss.Rotate()
		require.NoError(t, err)
		_, err = s.check(s.mint(issuertest.Token{}))
		require.NoError(t, err)
		assert.Equal(t, 2, iss.KeyFetches(), "one refresh for the unknown kid")

		// Another rotation within the minute: no fetch, the token is refused.
		_, err = iss.Rotate()
		require.NoError(t, err)
		rotated := s.mint(issuertest.Token{})
		_, err = s.check(rotated)
		assert.Equal(t, caller.Unauthenticated, kindOf(err))
		assert.ErrorIs(t, err, caller.ErrUnknownKey)
		assert.Equal(t, 2, iss.KeyFetches(), "at most one refresh a minute per tenant")

		time.Sleep(caller.RefreshInterval) // virtual time
		_, err = s.check(rotated)
		require.NoError(t, err)
		assert.Equal(t, 3, iss.KeyFetches())
	})
}

func TestKeysDownColdIsUnavailableAtOnceWarmKeepsWorking(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{})
		tok := s.mint(issuertest.Token{})
		iss.SetDown(true)
		start := time.Now()
		_, err := s.check(tok)
		assert.Equal(t, caller.Unavailable, kindOf(err))
		// A second request right after does not wait on the dead endpoint.
		_, err = s.check(tok)
		assert.Equal(t, caller.Unavailable, kindOf(err))
		assert.Less(t, time.Since(start), time.Second)
		assert.Equal(t, 1, iss.MetadataRequests(), "one try per ColdRetryInterval")

		iss.SetDown(false)
		time.Sleep(caller.ColdRetryInterval)
		_, err = s.check(tok)
		require.NoError(t, err, "the issuer is back")

		iss.SetDown(true)
		time.Sleep(caller.MaxKeyAge) // even keys due for a refresh keep working
		_, err = s.check(s.mint(issuertest.Token{}))
		require.NoError(t, err, "warm: cached keys keep working")
	})
}

func TestAHungKeysEndpointEndsWithTheRequestsBudget(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		hung := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		_, client := memnet.Serve(t, hung)
		u, _ := url.Parse(authority)
		e, err := caller.NewEntra(caller.EntraOptions{Authority: u, Audiences: []string{audience}, Policy: caller.Policy{Tenants: []string{tenant}}, Client: client})
		require.NoError(t, err)
		s := &stack{t: t, iss: iss}
		tok := s.mint(issuertest.Token{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		_, err = e.Check(ctx, r)
		assert.Equal(t, caller.Unavailable, kindOf(err))
		assert.Equal(t, time.Second, time.Since(start), "the request's budget, not the fetch's own timeout")
		synctest.Wait()
		time.Sleep(caller.DefaultFetchTimeout) // let the shared fetch end inside the bubble
	})
}

func TestAnUnlistedTenantIsForbiddenWithoutAFetch(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{})
		_, err := s.check(s.mint(issuertest.Token{Tenant: "99999999-2222-4333-8444-555555555555"}))
		assert.Equal(t, caller.Forbidden, kindOf(err))
		assert.Equal(t, 0, iss.KeyFetches())
	})
}

// A cold start under load: the requests that arrive together share one
// fetch of metadata and keys.
func TestConcurrentColdRequestsShareOneFetch(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{})
		tok := s.mint(issuertest.Token{})
		errs := make(chan error, 20)
		for range 20 {
			go func() {
				_, err := s.check(tok)
				errs <- err
			}()
		}
		for range 20 {
			assert.NoError(t, <-errs)
		}
		assert.Equal(t, 1, iss.MetadataRequests())
		assert.Equal(t, 1, iss.KeyFetches())
	})
}

// Several tenants: each has its own keys, fetched for its first token, and
// its own refresh allowance.
func TestEachListedTenantHasItsOwnKeys(t *testing.T) {
	const second = "22222222-2222-4333-8444-555555555555"
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		s := newStack(t, iss, caller.Policy{Tenants: []string{tenant, second}})
		for _, tid := range []string{tenant, second, tenant, second} {
			c, err := s.check(s.mint(issuertest.Token{Tenant: tid}))
			require.NoError(t, err)
			assert.Equal(t, tid, c.TID)
		}
		assert.Equal(t, 2, iss.MetadataRequests(), "one fetch per tenant")

		// A rotation seen first on one tenant does not use up the other's refresh.
		time.Sleep(caller.RefreshInterval)
		_, err := iss.Rotate()
		require.NoError(t, err)
		for _, tid := range []string{tenant, second} {
			_, err := s.check(s.mint(issuertest.Token{Tenant: tid}))
			require.NoError(t, err, tid)
		}
		assert.Equal(t, 4, iss.MetadataRequests())
	})
}
