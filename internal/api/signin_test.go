package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// identityEndpoint is App Service's managed identity endpoint
// (IDENTITY_ENDPOINT, api-version 2019-08-01) as a test plays it: it
// answers every token request with status (a token on 200) and counts them.
type identityEndpoint struct {
	status int
	asked  atomic.Int32
}

func (e *identityEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.asked.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	switch e.status {
	case http.StatusOK:
		_ = json.NewEncoder(w).Encode(map[string]string{
			"access_token": "mi-token", "token_type": "Bearer", "resource": r.URL.Query().Get("resource"),
			"expires_on": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
		})
	case http.StatusBadRequest:
		// App Service's answer for a client id that is not assigned to the app.
		_, _ = w.Write([]byte(`{"statusCode":400,"message":"Unable to load the proper Managed Identity.","correlationId":"7f3c3e0e-6f6e-4e0e-9a55-6c5e0e0e0e0e"}`))
	default:
		_, _ = w.Write([]byte(`{"statusCode":503,"message":"The service is unavailable."}`))
	}
}

// managedIdentity is azidentity's own ManagedIdentityCredential for a
// user-assigned identity, as App Service runs it (IDENTITY_ENDPOINT and
// IDENTITY_HEADER, which azidentity reads from the process environment),
// its requests carried to e over memnet.
func managedIdentity(t *testing.T, e *identityEndpoint) azcore.TokenCredential {
	t.Helper()
	_, hc := memnet.Serve(t, e)
	c, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{
		ClientOptions: azcore.ClientOptions{Transport: hc},
		ID:            azidentity.ClientID("11111111-2222-3333-4444-555555555555"),
	})
	require.NoError(t, err)
	return c
}

func setIdentityEndpoint(t *testing.T) {
	t.Setenv("IDENTITY_ENDPOINT", "http://127.0.0.1:41741/msi/token")
	t.Setenv("IDENTITY_HEADER", "secret")
	t.Setenv("MSI_ENDPOINT", "")
	t.Setenv("MSI_SECRET", "")
}

// A credential that cannot give a token is a configuration error, answered
// as one: a 500 that no client retries, saying that the service cannot sign
// in to Azure OpenAI, and nothing sent to Azure OpenAI. A token endpoint
// that fails as any server may stays a retryable 502.
func TestSignInToAzureOpenAI(t *testing.T) {
	t.Run("nothing to sign in with", func(t *testing.T) {
		// DefaultAzureCredential's developer chain (az, azd, Azure
		// PowerShell) where none of those tools is installed.
		t.Setenv("AZURE_TOKEN_CREDENTIALS", "dev")
		t.Setenv("PATH", t.TempDir())
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		require.NoError(t, err)
		h := newHarness(t, map[string]string{"AZURE_OPENAI_API_KEY": ""}, aoaitest.Options{AcceptBearer: true},
			withUpstreamCredential(cred))
		w := h.do(chatRequest(ask("hi")))
		assertSignInError(t, h, w)
	})
	t.Run("identity not assigned", func(t *testing.T) {
		setIdentityEndpoint(t)
		synctest.Test(t, func(t *testing.T) {
			mi := &identityEndpoint{status: http.StatusBadRequest}
			h := newHarness(t, map[string]string{"AZURE_OPENAI_API_KEY": ""}, aoaitest.Options{AcceptBearer: true},
				withUpstreamCredential(managedIdentity(t, mi)))
			w := h.do(chatRequest(ask("hi")))
			assertSignInError(t, h, w)
			assert.NotZero(t, mi.asked.Load())
		})
	})
	t.Run("token endpoint unavailable", func(t *testing.T) {
		setIdentityEndpoint(t)
		synctest.Test(t, func(t *testing.T) {
			mi := &identityEndpoint{status: http.StatusServiceUnavailable}
			h := newHarness(t, map[string]string{"AZURE_OPENAI_API_KEY": ""}, aoaitest.Options{AcceptBearer: true},
				withUpstreamCredential(managedIdentity(t, mi)))
			w := h.do(chatRequest(ask("hi")))
			assert.Equal(t, http.StatusBadGateway, w.Code, w.Body.String())
			assert.Equal(t, "upstream_error", decodeError(t, w).Error.Code)
			assert.Empty(t, w.Header().Get("x-should-retry"), "a hiccup of the token endpoint is retryable")
			assert.Empty(t, h.sim.Requests())
		})
	})
	t.Run("signed in", func(t *testing.T) {
		setIdentityEndpoint(t)
		synctest.Test(t, func(t *testing.T) {
			mi := &identityEndpoint{status: http.StatusOK}
			h := newHarness(t, map[string]string{"AZURE_OPENAI_API_KEY": ""}, aoaitest.Options{AcceptBearer: true},
				withUpstreamCredential(managedIdentity(t, mi)))
			decodeOK(t, h.do(chatRequest(ask("hi"))))
			require.Len(t, h.sim.Requests(), 1)
			assert.Equal(t, "bearer", h.sim.Requests()[0].Auth)
		})
	})
}

func assertSignInError(t *testing.T, h *harness, w interface {
	Header() http.Header
	Result() *http.Response
}) {
	t.Helper()
	res := w.Result()
	assert.Equal(t, http.StatusInternalServerError, res.StatusCode)
	assert.Equal(t, "false", w.Header().Get("x-should-retry"), "no client asks again")
	assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	assert.Equal(t, "upstream_auth_unavailable", e.Error.Code)
	assert.Contains(t, e.Error.Message, "cannot sign in to Azure OpenAI")
	assert.Empty(t, h.sim.Requests(), "nothing was sent to Azure OpenAI")
	lines := h.logLines()
	require.Len(t, lines, 1)
	assert.Equal(t, "upstream_auth_unavailable", lines[0]["code"])
	assert.Contains(t, lines[0]["error"], "sign in to Azure OpenAI", "the cause is in the log")
}
