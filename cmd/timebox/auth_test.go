package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/issuertest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// timebox ask --token against the stack in AUTH_MODE=entra (the local
// issuer's real keys): the token is sent and accepted; without one the 401
// is read, not retried, and explained.
func TestAskSendsTheTokenToTheEntraCheck(t *testing.T) {
	iss, err := issuertest.New()
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		hc, tok := entraStack(t, iss)
		var out, errOut bytes.Buffer
		require.NoError(t, runWith(t.Context(), []string{"ask", "--url", "http://app.test", "--token", tok, "hi"}, noEnv, &out, &errOut, hc), errOut.String())
		assert.Contains(t, out.String(), `You asked: "hi"`)

		out.Reset()
		errOut.Reset()
		err = runWith(t.Context(), []string{"ask", "--url", "http://app.test", "hi"}, noEnv, &out, &errOut, hc)
		require.Error(t, err)
		assert.Contains(t, errOut.String(), "status 401 unauthenticated")
		assert.Contains(t, errOut.String()+err.Error(), "Sign in to use this service")
		assert.NotContains(t, errOut.String(), "attempt 2", "a 401 is not retried")
	})
}

// Entra ID down at a cold start, back 5 s later: the 503 auth_unavailable
// says when timebox fetches the keys again (10 s), and timebox ask waits
// that instead of its backoff (0.25-0.5 s, then 0.5-1 s), whose two
// retries would both come before the next fetch and be refused the same:
// the second attempt is the one that meets the next fetch, and passes.
func TestAskWaitsForTheNextKeyFetch(t *testing.T) {
	iss, err := issuertest.New()
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		hc, tok := entraStack(t, iss)
		iss.SetDown(true)
		go func() {
			time.Sleep(5 * time.Second)
			iss.SetDown(false)
		}()
		var out, errOut bytes.Buffer
		start := time.Now()
		require.NoError(t, runWith(t.Context(), []string{"ask", "--url", "http://app.test", "--token", tok, "hi"}, noEnv, &out, &errOut, hc), errOut.String())
		assert.Equal(t, 10*time.Second, time.Since(start).Round(time.Second))
		lines := strings.Split(errOut.String(), "\n")
		assert.Regexp(t, `^attempt 1: status 503 auth_unavailable in \S+ -> retry after 10s$`, lines[0])
		assert.Regexp(t, `^attempt 2: status 200 in \S+ -> success$`, lines[1])
		assert.Equal(t, 2, iss.MetadataRequests(), "one failed fetch, one good one")
	})
}

// entraStack is the stack app.New builds in AUTH_MODE=entra on the local
// issuer's keys and the simulator, over memnet, with the client that reaches
// it and a token of the issuer's for its audience.
func entraStack(t *testing.T, iss *issuertest.Issuer) (*http.Client, string) {
	t.Helper()
	const authority = "http://127.0.0.1:9" // memnet reaches the issuer whatever the address
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
		"AUTH_MODE": "entra", "AUTH_AUDIENCE": "api://timebox-cli", "AUTH_TENANTS": issuertest.DefaultTenant, "AZURE_AUTHORITY_HOST": authority,
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	_, simClient := memnet.Serve(t, aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}}))
	_, idpClient := memnet.Serve(t, iss)
	a, err := app.New(cfg, app.Seams{Version: "test", Upstream: simClient, Authority: idpClient})
	require.NoError(t, err)
	_, hc := memnet.Serve(t, a.Handler)

	tok, err := iss.Mint(issuertest.Token{Authority: authority, Tenant: issuertest.DefaultTenant, Audience: "api://timebox-cli"})
	require.NoError(t, err)
	return hc, tok
}
