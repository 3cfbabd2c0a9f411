package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/client"
	"github.com/timebox-dev/timebox/internal/config"
)

// TestQuotaExceededIsSaidAtOnce: the CLI against the whole stack with a
// real Azurite holding a small daily limit (real sockets; failed without
// Azurite unless TIMEBOX_SKIP_AZURITE=1): once the day is used up, ask
// stops after one attempt with the limit's own message, and usage says
// what was used.
func TestQuotaExceededIsSaidAtOnce(t *testing.T) {
	az := azuritetest.Start(t)
	sim := httptest.NewServer(aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}}))
	t.Cleanup(sim.Close)
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": sim.URL, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
		"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "400",
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	a, err := app.New(cfg, app.Seams{Version: "test"})
	require.NoError(t, err)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	var out, errOut bytes.Buffer
	require.NoError(t, runWith(t.Context(), []string{"ask", "--url", srv.URL, "hi"}, noEnv, &out, &errOut, &http.Client{}), errOut.String())
	// About 105 tokens: the prompt and a useful answer no longer fit 400.
	out.Reset()
	errOut.Reset()
	err = runWith(t.Context(), []string{"ask", "--url", srv.URL, "hi"}, noEnv, &out, &errOut, &http.Client{})
	var ce *client.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "quota_exceeded", ce.Code)
	assert.Equal(t, 1, ce.Attempts, "never asked again: the wait never fits")
	assert.Regexp(t, `^Your daily limit of 400 tokens is used up\. It resets at 00:00 UTC, in [^(]+\. \(status 429, code quota_exceeded`, err.Error())

	out.Reset()
	errOut.Reset()
	require.NoError(t, runWith(t.Context(), []string{"usage", "--url", srv.URL}, noEnv, &out, &errOut, &http.Client{}), errOut.String())
	assert.Regexp(t, `^today \(you\): \d+ of 400 tokens used, 0 held by requests under way \(resets \d{4}-\d\d-\d\d 00:00 UTC\)\n$`, out.String())
}

// TestUsageWithoutQuotas: a deployment with no limit says so.
func TestUsageWithoutQuotas(t *testing.T) {
	out, errOut, _, _, err := runTheStack(t, "usage", "--url", "http://app.test")
	require.NoError(t, err, errOut)
	assert.Equal(t, "no quota: this deployment sets no token limit\n", out)
}
