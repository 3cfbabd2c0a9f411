package api_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

// A caller's api-key header is refused 401 on every route behind the
// caller check, in every AUTH_MODE, before anything goes upstream: the
// docs said so, but under none and easyauth it was ignored and the
// request served (probed: 200). A caller that sends a key meant to be
// checked by it; serving it as anonymous, or by its principal, would hide
// the mistake. With a valid token or principal besides, still 401.
func TestAPIKeyRefusedInEveryMode(t *testing.T) {
	iss := newIssuer(t)
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/api/chat", ask("hi")},
		{http.MethodPost, "/api/chat/continue", cursorBody("c")},
		{http.MethodPost, "/api/chat/cancel", cursorBody("c")},
		{http.MethodGet, "/api/usage", ""},
		{http.MethodPost, "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`},
		{http.MethodPost, "/openai/deployments/gpt-4o-mini/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`},
		{http.MethodGet, "/openai/v1/models", ""},
	}
	for _, mode := range []struct {
		name     string
		env      map[string]string
		identity func() (string, string) // a header that would let the caller through
	}{
		{"none", nil, func() (string, string) { return "", "" }},
		{"easyauth", map[string]string{"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "timebox", "WEBSITE_AUTH_ENABLED": "True", "AUTH_TENANTS": authTenant},
			func() (string, string) {
				return "X-MS-CLIENT-PRINCIPAL", principalOf(issuertest.TestUserOID, authTenant)
			}},
		{"entra", entraEnv(nil), func() (string, string) {
			return "Authorization", "Bearer " + mint(t, iss, issuertest.Token{Version: 1})
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, mode.env, aoaitest.Options{}, withIssuer(iss))
				name, value := mode.identity()
				// The caller is let through without the key.
				ok := chatRequest(ask("hi"), name, value)
				decodeOK(t, h.do(ok))
				before := h.sim.Stats().Requests
				for _, rt := range routes {
					for _, key := range []string{"an-azure-openai-key", ""} {
						r := chatRequest(rt.body, name, value)
						r.Method, r.URL.Path = rt.method, rt.path
						if rt.body == "" {
							r.Body, r.ContentLength = http.NoBody, 0
						}
						r.Header["Api-Key"] = []string{key}
						w := h.do(r)
						require.Equal(t, http.StatusUnauthorized, w.Code, "%s %s: %s", rt.method, rt.path, w.Body.String())
						assert.Contains(t, w.Body.String(), "This service takes no API key")
						assert.Contains(t, w.Body.String(), `"unauthenticated"`)
						assert.Equal(t, "Bearer", w.Header().Get("WWW-Authenticate"))
						assert.Equal(t, "false", w.Header().Get("x-should-retry"))
						assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
						assert.NotContains(t, h.logs.String(), "an-azure-openai-key", "the key is never logged")
						if strings.HasPrefix(rt.path, "/openai/") {
							assert.Contains(t, w.Body.String(), `"authentication_error"`, "OpenAI's error shape")
						}
					}
				}
				assert.Equal(t, before, h.sim.Stats().Requests, "nothing upstream")
			})
		})
	}
}
