package main

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
	inAzure := func(k string) string {
		return map[string]string{"IDENTITY_ENDPOINT": "http://127.0.0.1:41741/msi/token", "IDENTITY_HEADER": "x"}[k]
	}
	c, err := credential(config.Config{ClientID: "11111111-2222-3333-4444-555555555555"}, inAzure)
	require.NoError(t, err)
	assert.IsType(t, &azidentity.ManagedIdentityCredential{}, c)

	c, err = credential(config.Config{}, func(string) string { return "" })
	require.NoError(t, err)
	assert.IsType(t, &azidentity.DefaultAzureCredential{}, c)

	assert.Equal(t, "api-key", authKind(config.Config{APIKey: "k"}))
	assert.Equal(t, "entra-id", authKind(config.Config{}))
}
