package config_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func valid() map[string]string {
	return map[string]string{
		"AZURE_OPENAI_ENDPOINT":   "https://contoso.openai.azure.com/",
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
	}
}

func TestDefaults(t *testing.T) {
	c, err := config.Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, 8080, c.Port)
	assert.Equal(t, 200*time.Second, c.Budget)
	assert.Equal(t, 30*time.Second, c.FastFailure)
	assert.Equal(t, "https://contoso.openai.azure.com", c.Endpoint.String())
	assert.Empty(t, c.APIVersion)
	assert.Empty(t, c.AllowedOrigins)
	assert.Equal(t, 128000, c.ContextWindow)
	assert.Equal(t, "o200k_base", c.Encoding)
	assert.Equal(t, slog.LevelInfo, c.LogLevel)
	assert.Equal(t, 15*time.Second, c.FetchTimeout)
	assert.Equal(t, 15*time.Second, c.ExtractTimeout)
}

func TestAcceptsEverySetting(t *testing.T) {
	kv := valid()
	kv["FUNCTIONS_CUSTOMHANDLER_PORT"] = "7777"
	kv["AZURE_OPENAI_ENDPOINT"] = "http://127.0.0.1:8081"
	kv["AZURE_OPENAI_DEPLOYMENT"] = "gpt-4"
	kv["AZURE_OPENAI_API_VERSION"] = "2024-10-21"
	kv["REQUEST_BUDGET"] = "3s"
	kv["FAST_FAILURE_THRESHOLD"] = "1500ms"
	kv["CLIENT_TIMEOUT_MARGIN"] = "500ms"
	kv["ALLOWED_ORIGINS"] = "https://*.sharepoint.com, http://localhost:5173"
	kv["DEPLOYMENT_TPM"] = "30000"
	kv["LOG_LEVEL"] = "debug"
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, 7777, c.Port)
	assert.Equal(t, 3*time.Second, c.Budget)
	assert.Equal(t, 1500*time.Millisecond, c.FastFailure)
	assert.Equal(t, []string{"https://*.sharepoint.com", "http://localhost:5173"}, c.AllowedOrigins)
	assert.Equal(t, 8192, c.ContextWindow)
	assert.Equal(t, "cl100k_base", c.Encoding)
	assert.Equal(t, 30000, c.TPM)
	assert.Equal(t, slog.LevelDebug, c.LogLevel)
}

// The deployment's model name sets the context window and tokenizer
// (package modelfacts): a gpt-5 prompt gets its 272,000-token input limit,
// gpt-4.1 the 300,000 of a standard deployment.
func TestModelDefaults(t *testing.T) {
	tests := []struct {
		deployment string
		window     int
		encoding   string
	}{
		{"gpt-4o-mini", 128_000, "o200k_base"},
		{"gpt-4.1", 300_000, "o200k_base"},
		{"gpt-5", 272_000 + 1024, "o200k_base"},
		{"gpt-35-turbo", 16_385, "cl100k_base"},
	}
	for _, tt := range tests {
		kv := map[string]string{"AZURE_OPENAI_ENDPOINT": "https://contoso.openai.azure.com", "AZURE_OPENAI_DEPLOYMENT": tt.deployment}
		c, err := config.Load(env(kv))
		require.NoError(t, err)
		assert.Equal(t, tt.window, c.ContextWindow, tt.deployment)
		assert.Equal(t, tt.encoding, c.Encoding, tt.deployment)
	}
}

func TestRefusesEachInvalidSetting(t *testing.T) {
	tests := []struct {
		name, key, value string
	}{
		{"budget at the platform limit", "REQUEST_BUDGET", "230s"},
		{"budget over the platform limit", "REQUEST_BUDGET", "5m"},
		{"budget unparseable", "REQUEST_BUDGET", "200"},
		{"budget negative", "REQUEST_BUDGET", "-1s"},
		{"threshold unparseable", "FAST_FAILURE_THRESHOLD", "soon"},
		{"threshold above budget", "FAST_FAILURE_THRESHOLD", "201s"},
		{"margin above budget", "CLIENT_TIMEOUT_MARGIN", "300s"},
		{"endpoint missing", "AZURE_OPENAI_ENDPOINT", ""},
		{"endpoint http on a public host", "AZURE_OPENAI_ENDPOINT", "http://contoso.openai.azure.com"},
		{"endpoint not a URL", "AZURE_OPENAI_ENDPOINT", "contoso"},
		{"endpoint with a query", "AZURE_OPENAI_ENDPOINT", "https://contoso.openai.azure.com/?x=1"},
		{"deployment missing", "AZURE_OPENAI_DEPLOYMENT", ""},
		{"deployment with a slash", "AZURE_OPENAI_DEPLOYMENT", "a/b"},
		{"port not a number", "FUNCTIONS_CUSTOMHANDLER_PORT", "http"},
		{"port out of range", "FUNCTIONS_CUSTOMHANDLER_PORT", "70000"},
		{"log level unknown", "LOG_LEVEL", "loud"},
		{"origin with a path", "ALLOWED_ORIGINS", "https://contoso.sharepoint.com/sites/x"},
		{"origin without scheme", "ALLOWED_ORIGINS", "contoso.sharepoint.com"},
		{"origin with an inner wildcard", "ALLOWED_ORIGINS", "https://con*.sharepoint.com"},
		{"tpm negative", "DEPLOYMENT_TPM", "-5"},
		{"context window not a number", "CONTEXT_WINDOW", "big"},
		{"max tokens over the window", "MAX_TOKENS", "9000000"},
		{"tokenizer unknown", "TOKENIZER", "p50k_base"},
		{"fetch timeout unparseable", "FETCH_TIMEOUT", "15"},
		{"extract timeout zero", "EXTRACT_TIMEOUT", "0s"},
		{"upstream attempts zero", "UPSTREAM_MAX_ATTEMPTS", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := valid()
			kv[tt.key] = tt.value
			_, err := config.Load(env(kv))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.key)
		})
	}
}

func TestReportsEveryProblemAtOnce(t *testing.T) {
	_, err := config.Load(env(map[string]string{"REQUEST_BUDGET": "300s", "LOG_LEVEL": "loud"}))
	require.Error(t, err)
	for _, name := range []string{"AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT", "REQUEST_BUDGET", "LOG_LEVEL"} {
		assert.Contains(t, err.Error(), name)
	}
	// In one line: the Functions host makes each stderr line a trace of its
	// own, and deploy.md's query finds the one with "invalid configuration".
	assert.NotContains(t, err.Error(), "\n")
	assert.Regexp(t, `^invalid configuration: `, err.Error())
}
