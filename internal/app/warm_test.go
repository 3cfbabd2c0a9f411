package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// New must leave the tokenizer's vocabulary unloaded, so that run opens the
// port at once (the Functions host is waiting for GET /); Warm, called once
// the port is open, loads it.
func TestNewLeavesTheVocabularyForWarm(t *testing.T) {
	env := map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:1", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	a, err := New(cfg, Ext{})
	require.NoError(t, err)
	assert.False(t, a.tokens.Loaded(), "New loaded the vocabulary before the port could open")

	a.Warm()
	require.NoError(t, a.tokens.Wait(t.Context()))
	assert.True(t, a.tokens.Loaded())
}
