package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// With no API key and no Entra ID credential that can give a token (here
// DefaultAzureCredential's developer chain, none of whose tools is
// installed), the handler says so once at start-up, in a warning that says
// where to look, and every question is answered as the configuration error
// it is: 500 upstream_auth_unavailable, x-should-retry: false.
func TestRunSaysAtStartUpThatItCannotSignIn(t *testing.T) {
	t.Setenv("AZURE_TOKEN_CREDENTIALS", "dev")
	t.Setenv("PATH", t.TempDir())
	upstream := httptest.NewServer(aoaitest.New(aoaitest.Options{AcceptBearer: true, Deployments: []string{"gpt-4o-mini"}}))
	defer upstream.Close()
	r := startHandler(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT": upstream.URL, "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
	}, nil)

	warn := waitForLog(t, r.logs, "cannot sign in to Azure OpenAI")
	assert.Equal(t, "WARN", warn["level"])
	assert.Contains(t, warn["msg"], "az login")
	assert.Contains(t, warn["msg"], "AZURE_OPENAI_API_KEY")
	assert.Contains(t, warn["error"], "AzureCLICredential", "the cause, as azidentity names it")

	resp, err := http.Post("http://"+r.addr+"/api/chat", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, "false", resp.Header.Get("x-should-retry"))
	assert.Contains(t, string(body), `"upstream_auth_unavailable"`)
	line := waitForLog(t, r.logs, "request")
	assert.Equal(t, "upstream_auth_unavailable", line["code"], "the question's own line has it; the start-up warning is not repeated")
}

// The start-up sign-in does not delay readiness: the Functions host polls
// the port from the start, and a managed identity endpoint that has not
// answered yet must not keep it waiting.
func TestRunIsReadyWhileTheSignInWaits(t *testing.T) {
	asked := make(chan struct{}, 1)
	identity := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers; the handler's shutdown ends the wait
	}))
	t.Cleanup(identity.Close) // after the handler's shutdown, which ends the token request
	t.Setenv("IDENTITY_ENDPOINT", identity.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "secret")
	r := startHandler(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"IDENTITY_ENDPOINT": identity.URL + "/msi/token",
	}, nil)
	<-asked // the sign-in is under way

	// An upper bound only: the readiness ping is answered while the token
	// request waits (a real socket, so a bound and not a fake clock).
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + r.addr + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
