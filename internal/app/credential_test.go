package app

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// Inside Azure (IDENTITY_ENDPOINT set by App Service and Functions) the
// handler uses the managed identity; elsewhere the developer's credentials.
// Neither touches the network until a token is needed.
func TestCredentialChoice(t *testing.T) {
	load := func(env map[string]string) config.Config {
		t.Helper()
		env["AZURE_OPENAI_ENDPOINT"], env["AZURE_OPENAI_DEPLOYMENT"] = "https://contoso.openai.azure.com", "gpt-4o-mini"
		cfg, err := config.Load(func(k string) string { return env[k] })
		require.NoError(t, err)
		return cfg
	}
	c, err := credential(load(map[string]string{
		"IDENTITY_ENDPOINT": "http://127.0.0.1:41741/msi/token", "IDENTITY_HEADER": "x",
		"AZURE_CLIENT_ID": "11111111-2222-3333-4444-555555555555",
	}))
	require.NoError(t, err)
	assert.IsType(t, &azidentity.ManagedIdentityCredential{}, c)

	c, err = credential(load(map[string]string{}))
	require.NoError(t, err)
	assert.IsType(t, &azidentity.DefaultAzureCredential{}, c)
}
