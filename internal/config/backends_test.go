package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// pool is a valid pool of two: a PTU deployment first, with Entra ID, and
// a pay-as-you-go one second, with a key in a setting of its own.
func pool() map[string]string {
	return map[string]string{
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_BACKENDS": `[
			{"name": "ptu", "endpoint": "https://contoso-ptu.openai.azure.com", "deployment": "chat-ptu", "model": "gpt-4o-mini"},
			{"name": "paygo", "endpoint": "https://contoso-swe.openai.azure.com/openai/v1", "deployment": "gpt-4o-mini",
			 "priority": 2, "weight": 3, "apiVersion": "2024-10-21", "apiKeySetting": "PAYGO_KEY"}]`,
		"PAYGO_KEY": "k2",
	}
}

func TestPool(t *testing.T) {
	c, err := config.Load(env(pool()))
	require.NoError(t, err)
	require.Len(t, c.Backends, 2)
	ptu, paygo := c.Backends[0], c.Backends[1]
	assert.Equal(t, config.Backend{Name: "ptu", Endpoint: ptu.Endpoint, Deployment: "chat-ptu", Model: "gpt-4o-mini", Priority: 1, Weight: 1}, ptu)
	assert.Equal(t, "https://contoso-ptu.openai.azure.com", ptu.Endpoint.String())
	assert.Equal(t, "https://contoso-swe.openai.azure.com", paygo.Endpoint.String(), "the path is taken off, as AZURE_OPENAI_ENDPOINT's")
	assert.Len(t, c.Warnings, 1)
	assert.Contains(t, c.Warnings[0], "AZURE_OPENAI_BACKENDS[1] (paygo).endpoint")
	assert.Equal(t, "gpt-4o-mini", paygo.Model, "the deployment names the model")
	assert.Equal(t, 2, paygo.Priority)
	assert.Equal(t, 3, paygo.Weight)
	assert.Equal(t, "2024-10-21", paygo.APIVersion)
	assert.Equal(t, "k2", paygo.APIKey)
	assert.Nil(t, c.Endpoint)
	assert.Equal(t, "gpt-4o-mini", c.Model, "the public name picks the facts")
	assert.Equal(t, time.Minute, c.BackendCooldownMax)
	assert.Equal(t, []string{"ptu", "paygo"}, c.BackendNames())
}

// Without the pool, today's settings are a pool of one, unchanged.
func TestPoolOfOne(t *testing.T) {
	kv := valid()
	kv["AZURE_OPENAI_API_KEY"], kv["AZURE_OPENAI_API_VERSION"] = "k", "2024-10-21"
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, []config.Backend{{Name: config.DefaultBackend, Endpoint: c.Endpoint, Deployment: "gpt-4o-mini", Model: "gpt-4o-mini",
		Priority: 1, Weight: 1, APIVersion: "2024-10-21", APIKey: "k"}}, c.Backends)
}

// Every mistake in the pool is refused at start-up, naming the entry and
// the field; a key written into the array is not repeated in the message.
func TestPoolMistakes(t *testing.T) {
	entry := func(extra string) string {
		return `[{"name": "a", "endpoint": "https://a.openai.azure.com", "deployment": "d"` + extra + `}]`
	}
	tests := []struct {
		name     string
		backends string
		env      map[string]string
		want     []string
	}{
		{"not JSON", `[{"name": "a",`, nil, []string{"AZURE_OPENAI_BACKENDS: is not a JSON array"}},
		{"not an array", `{"name": "a"}`, nil, []string{"AZURE_OPENAI_BACKENDS: is not a JSON array"}},
		{"empty", `[]`, nil, []string{"AZURE_OPENAI_BACKENDS: names no backend"}},
		{"trailing", entry("") + `[]`, nil, []string{"AZURE_OPENAI_BACKENDS: has more after its array"}},
		{"a key in the array", entry(`, "apiKey": "secret-key-1"`), nil, []string{`unknown field "apiKey": a key never goes in the array`}},
		{"an unknown field", entry(`, "wieght": 2`), nil, []string{`unknown field "wieght"`}},
		{"a weight that is text", entry(`, "weight": "2"`), nil, []string{"weight must be a int"}},
		{"a bad name", `[{"name": "East US", "endpoint": "https://a.openai.azure.com", "deployment": "d"}]`, nil,
			[]string{`AZURE_OPENAI_BACKENDS[0] (East US).name: "East US" must be 1 to 32 of a-z, 0-9 and -`}},
		{"no name", `[{"endpoint": "https://a.openai.azure.com", "deployment": "d"}]`, nil, []string{`AZURE_OPENAI_BACKENDS[0].name`}},
		{"duplicate names", `[{"name": "a", "endpoint": "https://a.openai.azure.com", "deployment": "d"},
			{"name": "a", "endpoint": "https://b.openai.azure.com", "deployment": "d"}]`, nil,
			[]string{`AZURE_OPENAI_BACKENDS[1] (a).name: "a" is the name of entry 0 too`}},
		{"the same deployment twice", `[{"name": "a", "endpoint": "https://a.openai.azure.com", "deployment": "d"},
			{"name": "b", "endpoint": "https://a.openai.azure.com/", "deployment": "d"}]`, nil,
			[]string{`AZURE_OPENAI_BACKENDS[1] (b).deployment: "d" at https://a.openai.azure.com is entry 0's deployment too`}},
		{"no endpoint", `[{"name": "a", "deployment": "d"}]`, nil, []string{"AZURE_OPENAI_BACKENDS[0] (a).endpoint: required"}},
		{"an http endpoint", `[{"name": "a", "endpoint": "http://a.openai.azure.com", "deployment": "d"}]`, nil,
			[]string{"AZURE_OPENAI_BACKENDS[0] (a).endpoint: \"http://a.openai.azure.com\": http is allowed only for a loopback host"}},
		{"an endpoint with a path", `[{"name": "a", "endpoint": "https://a.openai.azure.com/x", "deployment": "d"}]`, nil,
			[]string{"AZURE_OPENAI_BACKENDS[0] (a).endpoint: \"https://a.openai.azure.com/x\" has a path"}},
		{"no deployment", `[{"name": "a", "endpoint": "https://a.openai.azure.com"}]`, nil, []string{"AZURE_OPENAI_BACKENDS[0] (a).deployment: required"}},
		{"a deployment with a slash", entry(`, "deployment": "d/x"`), nil, []string{`AZURE_OPENAI_BACKENDS[0] (a).deployment: "d/x" must not contain`}},
		{"priority 0", entry(`, "priority": 0`), nil, []string{"AZURE_OPENAI_BACKENDS[0] (a).priority: 0 must be from 1"}},
		{"weight 0", entry(`, "weight": 0`), nil, []string{"AZURE_OPENAI_BACKENDS[0] (a).weight: 0 must be from 1 to 1000"}},
		{"a key setting not set", entry(`, "apiKeySetting": "A_KEY"`), nil,
			[]string{"AZURE_OPENAI_BACKENDS[0] (a).apiKeySetting: names A_KEY, which is not set"}},
		{"a key setting that is no setting's name", entry(`, "apiKeySetting": "sk-123 456"`), nil,
			[]string{`AZURE_OPENAI_BACKENDS[0] (a).apiKeySetting: "sk-123 456" must name another setting`}},
		{"a model that counts tokens differently", entry(`, "model": "gpt-4"`), nil,
			[]string{`AZURE_OPENAI_BACKENDS[0] (a).model: "gpt-4" counts tokens with cl100k_base, the pool's model (gpt-4o-mini) with o200k_base`}},
		{"with the single endpoint", entry(""), map[string]string{"AZURE_OPENAI_ENDPOINT": "https://a.openai.azure.com"},
			[]string{"AZURE_OPENAI_ENDPOINT: must not be set with AZURE_OPENAI_BACKENDS"}},
		{"with the single key", entry(""), map[string]string{"AZURE_OPENAI_API_KEY": "k"},
			[]string{"AZURE_OPENAI_API_KEY: must not be set with AZURE_OPENAI_BACKENDS"}},
		{"with the single api version", entry(""), map[string]string{"AZURE_OPENAI_API_VERSION": "2024-10-21"},
			[]string{"AZURE_OPENAI_API_VERSION: must not be set with AZURE_OPENAI_BACKENDS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := map[string]string{"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_BACKENDS": tt.backends}
			for k, v := range tt.env {
				kv[k] = v
			}
			_, err := config.Load(env(kv))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "secret-key-1")
		})
	}
}

// The prompt must fit the smallest window of the pool: a gpt-4o backend
// (128,000) beside a gpt-4.1 one (300,000 on Azure) makes 128,000 the
// window.
func TestPoolSmallestWindow(t *testing.T) {
	kv := map[string]string{
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4.1",
		"AZURE_OPENAI_BACKENDS": `[{"name": "a", "endpoint": "https://a.openai.azure.com", "deployment": "gpt-4.1"},
			{"name": "b", "endpoint": "https://b.openai.azure.com", "deployment": "gpt-4o"}]`,
	}
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, 128000, c.ContextWindow)
	kv["AZURE_OPENAI_BACKENDS"] = strings.Replace(kv["AZURE_OPENAI_BACKENDS"], `"gpt-4o"`, `"gpt-4.1-mini"`, 1)
	c, err = config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, 300_000, c.ContextWindow)
}

// Long answers run in background mode only where every backend's model
// supports it: a create may fail over to any.
func TestPoolBackground(t *testing.T) {
	kv := map[string]string{
		"AZURE_OPENAI_DEPLOYMENT": "o3",
		"AZURE_OPENAI_BACKENDS": `[{"name": "a", "endpoint": "https://a.openai.azure.com", "deployment": "o3"},
			{"name": "b", "endpoint": "https://b.openai.azure.com", "deployment": "reasoning", "model": "o3"}]`,
	}
	c, err := config.Load(env(kv))
	require.NoError(t, err)
	assert.True(t, c.Background())
	kv["AZURE_OPENAI_BACKENDS"] = strings.Replace(kv["AZURE_OPENAI_BACKENDS"], `"model": "o3"`, `"model": "o1-mini"`, 1)
	c, err = config.Load(env(kv))
	require.NoError(t, err)
	assert.False(t, c.Background())
}
