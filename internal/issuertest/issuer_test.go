package issuertest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/issuertest"
)

const tenant = issuertest.DefaultTenant

func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// The metadata documents name issuers and key sets as Entra's do, over a
// real loopback socket.
func TestMetadataIsShapedLikeEntras(t *testing.T) {
	iss, err := issuertest.New()
	require.NoError(t, err)
	srv := httptest.NewServer(iss)
	defer srv.Close()

	v2 := getJSON(t, srv.URL+"/"+tenant+"/v2.0/.well-known/openid-configuration")
	assert.Equal(t, srv.URL+"/"+tenant+"/v2.0", v2["issuer"])
	assert.Equal(t, srv.URL+"/"+tenant+"/discovery/v2.0/keys", v2["jwks_uri"])
	v1 := getJSON(t, srv.URL+"/"+tenant+"/.well-known/openid-configuration")
	assert.Equal(t, "https://sts.windows.net/"+tenant+"/", v1["issuer"])

	keys := getJSON(t, v2["jwks_uri"].(string))["keys"].([]any)
	require.Len(t, keys, 1)
	k := keys[0].(map[string]any)
	assert.Equal(t, "RSA", k["kty"])
	assert.Nil(t, k["d"], "only the public key is published")
	assert.Nil(t, k["alg"], "Entra's keys name no alg")

	iss.SetDown(true)
	resp, err := http.Get(v2["jwks_uri"].(string))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// The token endpoints mint what the real checker accepts: the way `make run`
// and the demo page get a token.
func TestTokenEndpointsMintTokensTheCheckerAccepts(t *testing.T) {
	iss, err := issuertest.New()
	require.NoError(t, err)
	srv := httptest.NewServer(iss)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	e, err := caller.NewEntra(caller.EntraOptions{Authority: u, Audiences: []string{"api://timebox-local"},
		Policy: caller.Policy{Tenants: []string{tenant}, Scope: "access_as_user"}})
	require.NoError(t, err)

	for path, form := range map[string]string{
		"/oauth2/v2.0/token": "scope=api://timebox-local/access_as_user",
		"/oauth2/token":      "resource=api://timebox-local&scope=access_as_user",
	} {
		resp, err := http.Post(srv.URL+"/"+tenant+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		require.NoError(t, err)
		var body struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		assert.Equal(t, "Bearer", body.TokenType)
		assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"), "a page on another origin can read it")

		r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
		r.Header.Set("Authorization", "Bearer "+body.AccessToken)
		c, err := e.Check(context.Background(), r)
		require.NoError(t, err, path)
		assert.Equal(t, issuertest.TestUserOID, c.OID, path)
	}
}
