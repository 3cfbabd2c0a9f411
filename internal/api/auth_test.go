package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

const (
	authTenant    = issuertest.DefaultTenant
	otherTenant   = "99999999-2222-4333-8444-555555555555"
	authAudience  = "api://timebox-test"
	authAuthority = "http://127.0.0.1:9" // memnet reaches the issuer whatever the address
)

// entraEnv is AUTH_MODE=entra as an operator sets it, over extra settings.
func entraEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"AUTH_MODE":            "entra",
		"AUTH_AUDIENCE":        authAudience + ",9f1c7a4e-0000-4000-8000-000000000001",
		"AUTH_TENANTS":         authTenant,
		"AUTH_REQUIRED_SCOPE":  "access_as_user",
		"AZURE_AUTHORITY_HOST": authAuthority,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// goodToken is what SPFx gets for the test user: the required scope, this app.
func goodToken(tok issuertest.Token) issuertest.Token {
	if tok.Authority == "" {
		tok.Authority = authAuthority
	}
	if tok.Tenant == "" {
		tok.Tenant = authTenant
	}
	if tok.Audience == "" {
		tok.Audience = authAudience
	}
	if tok.Scopes == nil {
		tok.Scopes = []string{"access_as_user"}
	}
	return tok
}

func mint(t *testing.T, iss *issuertest.Issuer, tok issuertest.Token) string {
	t.Helper()
	raw, err := iss.Mint(goodToken(tok))
	require.NoError(t, err)
	return raw
}

func withBearer(token string) *http.Request {
	r := chatRequest(ask("hi"))
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func newIssuer(t *testing.T) *issuertest.Issuer {
	t.Helper()
	iss, err := issuertest.New()
	require.NoError(t, err)
	return iss
}

// assertRefused checks a refusal as the issue asks: status, code, CORS, the
// retry advice, the challenge, no upstream call, and nothing of the token in
// the answer or the log.
func assertRefused(t *testing.T, h *harness, w *httptest.ResponseRecorder, status int, code, challenge, token string) {
	t.Helper()
	require.Equal(t, status, w.Code, w.Body.String())
	assert.Equal(t, code, decodeError(t, w).Error.Code)
	assertCORS(t, w.Header())
	assert.Contains(t, strings.ToLower(w.Header().Get("Access-Control-Expose-Headers")), "www-authenticate")
	assert.Equal(t, challenge, w.Header().Get("WWW-Authenticate"))
	if status == http.StatusServiceUnavailable {
		assert.Empty(t, w.Header().Get("x-should-retry"), "a fast 503 is retried")
	} else {
		assert.Equal(t, "false", w.Header().Get("x-should-retry"))
	}
	assert.Zero(t, h.sim.Stats().Requests, "never upstream")
	if token != "" {
		sig := token[strings.LastIndex(token, ".")+1:]
		for _, where := range []string{w.Body.String(), h.logs.String()} {
			assert.NotContains(t, where, token)
			if sig != "" {
				assert.NotContains(t, where, sig)
			}
		}
	}
}

// Every case of the list, through the whole stack (app.New from the
// same settings the binary reads) against the local issuer with real keys.
func TestEntraTokensThroughTheHandler(t *testing.T) {
	iss := newIssuer(t)
	now := time.Now
	tests := []struct {
		name      string
		env       map[string]string
		token     func() string // "" sends no Authorization
		status    int
		code      string
		challenge string
	}{
		{"valid v1", nil, func() string { return mint(t, iss, issuertest.Token{Version: 1}) }, 200, "", ""},
		{"valid v2", nil, func() string { return mint(t, iss, issuertest.Token{Version: 2}) }, 200, "", ""},
		{"valid v2 for the client id", nil, func() string {
			return mint(t, iss, issuertest.Token{Audience: "9f1c7a4e-0000-4000-8000-000000000001"})
		}, 200, "", ""},
		{"expired within the skew", nil, func() string { return mint(t, iss, issuertest.Token{Expiry: now().Add(-4 * time.Minute)}) }, 200, "", ""},
		{"no token", nil, func() string { return "" }, 401, "unauthenticated", "Bearer"},
		{"not a token", nil, func() string { return "garbage" }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"expired", nil, func() string { return mint(t, iss, issuertest.Token{Expiry: now().Add(-6 * time.Minute)}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"not yet valid", nil, func() string { return mint(t, iss, issuertest.Token{NotBefore: now().Add(6 * time.Minute)}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"wrong audience", nil, func() string { return mint(t, iss, issuertest.Token{Audience: "api://another-app"}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"wrong tenant", nil, func() string { return mint(t, iss, issuertest.Token{Tenant: otherTenant}) }, 403, "forbidden", ""},
		{"wrong issuer: another tenant's", nil, func() string {
			return mint(t, iss, issuertest.Token{Issuer: "https://sts.windows.net/" + otherTenant + "/"})
		}, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"wrong issuer: another authority", nil, func() string {
			return mint(t, iss, issuertest.Token{Authority: "https://login.evil.example"})
		}, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"bad signature", nil, func() string { return mint(t, iss, issuertest.Token{Forgery: issuertest.BadSignature}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"alg none", nil, func() string { return mint(t, iss, issuertest.Token{Forgery: issuertest.AlgNone}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"HMAC signed with the public key", nil, func() string { return mint(t, iss, issuertest.Token{Forgery: issuertest.HMACWithPublicKey}) }, 401, "unauthenticated", `Bearer error="invalid_token"`},
		{"missing scope", nil, func() string { return mint(t, iss, issuertest.Token{Scopes: []string{"other"}}) }, 403, "forbidden", `Bearer error="insufficient_scope"`},
		{"missing role", map[string]string{"AUTH_REQUIRED_ROLE": "Chat.User"}, func() string {
			return mint(t, iss, issuertest.Token{Roles: []string{"Reader"}})
		}, 403, "forbidden", `Bearer error="insufficient_scope"`},
		{"with the role", map[string]string{"AUTH_REQUIRED_ROLE": "Chat.User"}, func() string {
			return mint(t, iss, issuertest.Token{Roles: []string{"Reader", "Chat.User"}})
		}, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, entraEnv(tt.env), aoaitest.Options{}, withIssuer(iss))
				token := tt.token()
				r := chatRequest(ask("hi"))
				if token != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				w := h.do(r)
				if tt.status == http.StatusOK {
					decodeOK(t, w)
					assert.Equal(t, 1, h.sim.Stats().Requests)
					line := h.logLines()[0]
					assert.Equal(t, issuertest.TestUserOID, line["callerOid"])
					assert.Equal(t, authTenant, line["callerTid"])
					for _, secret := range []string{token, issuertest.TestUserName, issuertest.TestUserEmail} {
						assert.NotContains(t, h.logs.String(), secret, "the log carries oid and tid only")
					}
					return
				}
				assertRefused(t, h, w, tt.status, tt.code, tt.challenge, token)
				assert.NotContains(t, h.logLines()[0], "callerOid")
			})
		})
	}
}

// An Authorization of another scheme is no bearer token: the bare challenge
// (RFC 6750 section 3.1: no error code for an unsupported method), so the
// client learns the scheme; a Bearer header that is wrong is invalid_token.
func TestEntraOtherSchemeGetsTheBareChallenge(t *testing.T) {
	iss := newIssuer(t)
	tests := []struct{ authorization, challenge string }{
		{"Basic dXNlcjpwYXNz", "Bearer"},
		{"Negotiate", "Bearer"},
		{"Bearer", `Bearer error="invalid_token"`},
		{"bearer garbage", `Bearer error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.authorization, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
				r := chatRequest(ask("hi"))
				r.Header.Set("Authorization", tt.authorization)
				assertRefused(t, h, h.do(r), http.StatusUnauthorized, "unauthenticated", tt.challenge, "")
			})
		})
	}
}

// A rotation: the new key's kid is unknown to the warm cache; one refresh
// finds it and the token is accepted.
func TestEntraRotationIsAcceptedAfterOneRefresh(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
		decodeOK(t, h.do(withBearer(mint(t, iss, issuertest.Token{}))))
		require.Equal(t, 1, iss.KeyFetches())
		time.Sleep(caller.RefreshInterval)

		_, err := iss.Rotate()
		require.NoError(t, err)
		decodeOK(t, h.do(withBearer(mint(t, iss, issuertest.Token{}))))
		assert.Equal(t, 2, iss.KeyFetches(), "one refresh")
		decodeOK(t, h.do(withBearer(mint(t, iss, issuertest.Token{}))))
		assert.Equal(t, 2, iss.KeyFetches(), "then cached")
	})
}

// assertComeBackIn checks that a 503 auth_unavailable says when the keys
// may be fetched again, in its headers and its message (the clients read
// the one and show the other).
func assertComeBackIn(t *testing.T, w *httptest.ResponseRecorder, seconds int) {
	t.Helper()
	assert.Equal(t, strconv.Itoa(seconds), w.Header().Get("Retry-After"))
	assert.Equal(t, strconv.Itoa(seconds*1000), w.Header().Get("retry-after-ms"))
	assert.Equal(t, fmt.Sprintf("Sign-in cannot be checked right now. Try again in %d s.", seconds), decodeError(t, w).Error.Message)
}

// Keys endpoint down: cold, a fast 503 auth_unavailable (retryable) and no
// upstream call, saying when the keys will be fetched again (asking sooner
// is answered the same at once); warm, the cached keys keep working.
func TestEntraKeysDown(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
		iss.SetDown(true)
		start := time.Now()
		token := mint(t, iss, issuertest.Token{})
		w := h.do(withBearer(token))
		assertRefused(t, h, w, http.StatusServiceUnavailable, "auth_unavailable", "", token)
		assert.Less(t, time.Since(start), time.Second, "fast")
		assertComeBackIn(t, w, 10) // ColdRetryInterval
		time.Sleep(6500 * time.Millisecond)
		w = h.do(withBearer(token))
		assertRefused(t, h, w, http.StatusServiceUnavailable, "auth_unavailable", "", token)
		assert.Equal(t, "4", w.Header().Get("Retry-After"), "3.5 s left, in whole seconds rounded up")
		assert.Equal(t, "3500", w.Header().Get("retry-after-ms"))
		time.Sleep(3200 * time.Millisecond)
		assertComeBackIn(t, h.do(withBearer(token)), 1) // 0.3 s left: at least a second
		assert.Equal(t, 1, iss.MetadataRequests(), "no fetch before the time it named")

		iss.SetDown(false)
		time.Sleep(caller.ColdRetryInterval)
		decodeOK(t, h.do(withBearer(token)))
		iss.SetDown(true)
		time.Sleep(caller.MaxKeyAge)
		decodeOK(t, h.do(withBearer(mint(t, iss, issuertest.Token{}))))
	})
}

// A token signed with a key the warm cache does not know while Entra ID is
// down: whether it is good cannot be told until the next refresh, a minute
// after the one that failed, and the 503 says so.
func TestEntraUnknownKeyWhileKeysDownSaysWhenTheNextRefreshIs(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
		decodeOK(t, h.do(withBearer(mint(t, iss, issuertest.Token{}))))
		time.Sleep(caller.RefreshInterval)
		_, err := iss.Rotate()
		require.NoError(t, err)
		iss.SetDown(true)
		token := mint(t, iss, issuertest.Token{})
		w := h.do(withBearer(token))
		require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		assertComeBackIn(t, w, 60) // RefreshInterval
		time.Sleep(45 * time.Second)
		w = h.do(withBearer(token))
		require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		assertComeBackIn(t, w, 15)
		assert.Equal(t, 2, iss.MetadataRequests(), "the first fetch and the failed refresh")
		assert.Equal(t, 1, h.sim.Stats().Requests, "only the first request went upstream")
	})
}

// Preflights, the readiness ping and health need no token, in entra mode too.
func TestEntraLeavesPreflightAndHealthOpen(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
		pre := httptest.NewRequestWithContext(context.Background(), http.MethodOptions, "/api/chat", nil)
		pre.Header.Set("Origin", allowedOrigin)
		pre.Header.Set("Access-Control-Request-Method", "POST")
		pre.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		w := h.do(pre)
		assert.Equal(t, http.StatusNoContent, w.Code)
		assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
		for _, path := range []string{"/", "/api/health"} {
			w := h.do(httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil))
			assert.Equal(t, http.StatusOK, w.Code, path)
		}
		assert.Zero(t, iss.MetadataRequests(), "nothing was fetched for them")
	})
}

// principalOf is the header App Service Authentication sends for a caller
// with object id oid in tenant tid.
func principalOf(oid, tid string) string {
	b, _ := json.Marshal(map[string]any{"auth_typ": "aad", "claims": []map[string]string{
		{"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier", "val": oid},
		{"typ": "http://schemas.microsoft.com/identity/claims/tenantid", "val": tid},
	}})
	return base64.StdEncoding.EncodeToString(b)
}

// easyauth where the platform vouches for the header (inside Azure, App
// Service Authentication on): the principal names the caller; no principal
// (authentication set to allow anonymous requests) is a 401.
func TestEasyAuthInsideAzure(t *testing.T) {
	env := map[string]string{"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "timebox", "WEBSITE_AUTH_ENABLED": "True", "AUTH_TENANTS": authTenant}
	principal := func(tid string) string { return principalOf(issuertest.TestUserOID, tid) }
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, env, aoaitest.Options{})
		w := h.do(chatRequest(ask("hi")))
		assertRefused(t, h, w, http.StatusUnauthorized, "unauthenticated", "Bearer", "")
		w = h.do(chatRequest(ask("hi"), "X-MS-CLIENT-PRINCIPAL", principal(otherTenant)))
		assertRefused(t, h, w, http.StatusForbidden, "forbidden", "", "")

		decodeOK(t, h.do(chatRequest(ask("hi"), "X-MS-CLIENT-PRINCIPAL", principal(authTenant))))
		assert.Equal(t, issuertest.TestUserOID, h.logLines()[2]["callerOid"])
	})
}

// An Entra ID that never answers: the request ends when the caller said it
// would stop waiting (x-client-timeout-ms less the margin), with a fast
// retryable 503, not when the key fetch gives up.
func TestEntraKeysHangingEndWithTheCallersTimeout(t *testing.T) {
	iss := newIssuer(t)
	hung := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(hung))
		r := withBearer(mint(t, iss, issuertest.Token{}))
		r.Header.Set("x-client-timeout-ms", "3000")
		start := time.Now()
		w := h.do(r)
		assert.Equal(t, time.Second, time.Since(start), "3000 ms less the 2 s margin")
		assertRefused(t, h, w, http.StatusServiceUnavailable, "auth_unavailable", "", "")
		assertComeBackIn(t, w, 4)              // the shared fetch's 5 s, less the 1 s waited
		time.Sleep(caller.DefaultFetchTimeout) // the shared fetch ends inside the bubble
	})
}

// The caller is checked before anything of the request is judged: without a
// token, a bad x-client-timeout-ms or body is still a 401.
func TestEntraChecksTheCallerFirst(t *testing.T) {
	iss := newIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, entraEnv(nil), aoaitest.Options{}, withIssuer(iss))
		w := h.do(chatRequest(`{"messages":`, "x-client-timeout-ms", "12"))
		assertRefused(t, h, w, http.StatusUnauthorized, "unauthenticated", "Bearer", "")
	})
}
