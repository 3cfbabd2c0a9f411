package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

const tenantID = "11111111-2222-4333-8444-555555555555"

func TestAuthDefaultsToNoneOutsideAzure(t *testing.T) {
	c, err := config.Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, config.AuthNone, c.Auth.Mode)
	assert.Equal(t, "https://login.microsoftonline.com", c.Auth.AuthorityHost.String())
}

func TestAuthAcceptsEntraSettings(t *testing.T) {
	kv := valid()
	kv["AUTH_MODE"] = "entra"
	kv["AUTH_AUDIENCE"] = "api://timebox, 9f1c7a4e-0000-4000-8000-000000000001"
	kv["AUTH_TENANTS"] = "11111111-2222-4333-8444-555555555555,AAAAAAAA-2222-4333-8444-555555555555"
	kv["AUTH_REQUIRED_SCOPE"] = "access_as_user"
	kv["AUTH_REQUIRED_ROLE"] = "Chat.User"
	kv["AZURE_AUTHORITY_HOST"] = "http://127.0.0.1:8081/"
	kv["WEBSITE_SITE_NAME"] = "timebox-prod" // entra runs inside Azure
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, config.Auth{
		Mode:          config.AuthEntra,
		Audiences:     []string{"api://timebox", "9f1c7a4e-0000-4000-8000-000000000001"},
		Tenants:       []string{tenantID, "aaaaaaaa-2222-4333-8444-555555555555"},
		RequiredScope: "access_as_user",
		RequiredRole:  "Chat.User",
		AuthorityHost: c.Auth.AuthorityHost,
	}, c.Auth)
	assert.Equal(t, "http://127.0.0.1:8081", c.Auth.AuthorityHost.String())
}

// The fail-closed rules: each refused setting names its variable and why.
func TestAuthFailsClosed(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // in the error
	}{
		{"none inside Azure (site name)", map[string]string{"WEBSITE_SITE_NAME": "timebox-prod"}, "AUTH_MODE: none is refused inside Azure"},
		{"none inside Azure (instance id)", map[string]string{"AUTH_MODE": "none", "WEBSITE_INSTANCE_ID": "abc123"}, "AUTH_MODE: none is refused inside Azure"},
		{"easyauth outside Azure", map[string]string{"AUTH_MODE": "easyauth"}, "WEBSITE_AUTH_ENABLED is not True"},
		{"easyauth with authentication off", map[string]string{"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "x", "WEBSITE_AUTH_ENABLED": "False"}, "anyone could forge the header"},
		{"entra without audience", map[string]string{"AUTH_MODE": "entra", "AUTH_TENANTS": tenantID}, "AUTH_AUDIENCE: required"},
		{"entra without tenants", map[string]string{"AUTH_MODE": "entra", "AUTH_AUDIENCE": "api://x"}, "AUTH_TENANTS: required"},
		{"a tenant that is not an id", map[string]string{"AUTH_MODE": "entra", "AUTH_AUDIENCE": "api://x", "AUTH_TENANTS": "contoso.onmicrosoft.com"}, "is not a tenant id"},
		{"authority over plain http", map[string]string{"AZURE_AUTHORITY_HOST": "http://login.microsoftonline.com"}, "AZURE_AUTHORITY_HOST"},
		{"scope with nothing to check it", map[string]string{"AUTH_REQUIRED_SCOPE": "access_as_user"}, "AUTH_REQUIRED_SCOPE: is set but AUTH_MODE is none"},
		{"anonymous allowed with a checking mode", map[string]string{"AUTH_MODE": "entra", "AUTH_AUDIENCE": "api://x", "AUTH_TENANTS": tenantID, "ALLOW_ANONYMOUS": "true"}, "ALLOW_ANONYMOUS: applies only"},
		{"an unknown mode", map[string]string{"AUTH_MODE": "open"}, `AUTH_MODE: "open" must be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := valid()
			for k, v := range tt.env {
				kv[k] = v
			}
			_, err := config.Load(env(kv))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Each rule's way out: what the refusal message tells the operator to do works.
func TestAuthStartsWhenTheRuleIsMet(t *testing.T) {
	for name, extra := range map[string]map[string]string{
		"none inside Azure, open on purpose": {"WEBSITE_SITE_NAME": "x", "ALLOW_ANONYMOUS": "true"},
		"easyauth with authentication on":    {"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "x", "WEBSITE_AUTH_ENABLED": "True"},
		"entra inside Azure":                 {"AUTH_MODE": "entra", "WEBSITE_INSTANCE_ID": "x", "AUTH_AUDIENCE": "api://x", "AUTH_TENANTS": tenantID},
	} {
		kv := valid()
		for k, v := range extra {
			kv[k] = v
		}
		_, err := config.Load(env(kv))
		assert.NoError(t, err, name)
	}
}
