package config_test

import (
	"log/slog"
	"net/url"
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
	assert.Equal(t, config.LongAnswersBackground, c.LongAnswers)
	assert.Equal(t, 30*time.Minute, c.LongAnswerLimit)
}

// Long answers run in background mode where the model supports it, unless
// LONG_ANSWERS=off; a chat model keeps Chat Completions either way.
func TestBackgroundWhereTheModelSupportsIt(t *testing.T) {
	tests := []struct {
		deployment, setting string
		want                bool
	}{
		{"o3", "", true},
		{"gpt-5-mini", "background", true},
		{"gpt-5-mini", "off", false},
		{"o1-mini", "", false},
		{"gpt-4o-mini", "", false},
		{"gpt-4o-mini", "background", false},
		{"prod-chat", "", false},
	}
	for _, tt := range tests {
		kv := valid()
		kv["AZURE_OPENAI_DEPLOYMENT"], kv["LONG_ANSWERS"] = tt.deployment, tt.setting
		c, err := config.Load(env(kv))
		require.NoError(t, err)
		assert.Equal(t, tt.want, c.Background(), "%s with LONG_ANSWERS=%q", tt.deployment, tt.setting)
	}
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
	kv["LONG_ANSWERS"] = "off"
	kv["LONG_ANSWER_LIMIT"] = "2h"
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
	assert.Equal(t, config.LongAnswersOff, c.LongAnswers)
	assert.Equal(t, 2*time.Hour, c.LongAnswerLimit)
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
		{"long answers unknown", "LONG_ANSWERS", "forever"},
		{"long answer limit below the budget", "LONG_ANSWER_LIMIT", "100s"},
		{"long answer limit over a day", "LONG_ANSWER_LIMIT", "25h"},
		{"long answer limit unparseable", "LONG_ANSWER_LIMIT", "30"},
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

// AZURE_OPENAI_ENDPOINT is the resource's root: package aoai adds the API's
// path. The OpenAI SDKs' samples for Azure write .../openai/v1/, which is
// taken off with a warning that names it; any other path is refused with the
// root to write instead, at start-up rather than as a 404 on every call.
func TestEndpointIsTheResourceRoot(t *testing.T) {
	const root = "https://contoso.openai.azure.com"
	accepted := []struct {
		value, warning string // warning: "" when none is due
	}{
		{root, ""},
		{root + "/", ""},
		{root + "/openai", "/openai"},
		{root + "/openai/", "/openai/"},
		{root + "/openai/v1", "/openai/v1"},
		{root + "/openai/v1/", "/openai/v1/"},
		{"http://127.0.0.1:8081/openai/v1/", "/openai/v1/"},
	}
	for _, tt := range accepted {
		t.Run(tt.value, func(t *testing.T) {
			kv := valid()
			kv["AZURE_OPENAI_ENDPOINT"] = tt.value
			c, err := config.Load(env(kv))
			require.NoError(t, err)
			assert.Empty(t, c.Endpoint.Path)
			if tt.warning == "" {
				assert.Empty(t, c.Warnings)
				return
			}
			require.Len(t, c.Warnings, 1)
			assert.Contains(t, c.Warnings[0], "AZURE_OPENAI_ENDPOINT")
			assert.Contains(t, c.Warnings[0], "path "+tt.warning+" was taken off")
			assert.Contains(t, c.Warnings[0], c.Endpoint.String())
		})
	}
	refused := []string{
		root + "/openai/v1/chat/completions",
		root + "/openai/deployments/gpt-4o-mini",
		root + "/v1",
		"https://apim.contoso.com/aoai",
		"https://contoso.services.ai.azure.com/api/projects/p1",
	}
	for _, v := range refused {
		t.Run(v, func(t *testing.T) {
			kv := valid()
			kv["AZURE_OPENAI_ENDPOINT"] = v
			_, err := config.Load(env(kv))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "AZURE_OPENAI_ENDPOINT")
			assert.Contains(t, err.Error(), "has a path")
			u, _ := url.Parse(v)
			assert.Contains(t, err.Error(), "write the resource's root URL, "+u.Scheme+"://"+u.Host+",")
		})
	}
}

// A wildcard over a public suffix is refused at start-up, the message
// naming the setting and the fix; the documented https://*.sharepoint.com
// still starts.
func TestWildcardOriginOverAPublicSuffix(t *testing.T) {
	for _, tt := range []struct{ value, fix string }{
		{"https://*.com", "https://*.contoso.com"},
		{"https://contoso.sharepoint.com, https://*.co.uk", "https://*.contoso.co.uk"},
	} {
		kv := valid()
		kv["ALLOWED_ORIGINS"] = tt.value
		_, err := config.Load(env(kv))
		require.Error(t, err, tt.value)
		assert.Contains(t, err.Error(), "ALLOWED_ORIGINS", tt.value)
		assert.Contains(t, err.Error(), tt.fix, tt.value)
	}
	kv := valid()
	kv["ALLOWED_ORIGINS"] = "https://*.sharepoint.com"
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, []string{"https://*.sharepoint.com"}, c.AllowedOrigins)
}
