package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// The fast path must build exactly what prompt.Fit builds, and must step
// aside whenever counting could matter.
func TestFitsUncountedAgreesWithFit(t *testing.T) {
	c, err := tokens.New("o200k_base")
	require.NoError(t, err)
	in := prompt.Input{System: SystemPrompt, Messages: []tokens.Message{
		{Role: "user", Content: "first"}, {Role: "assistant", Content: "reply"}, {Role: "user", Content: "What does the travel policy say about trains?"},
	}}
	lim := prompt.Limits{ContextWindow: 128000, MaxTokens: 1024}
	fast, ok := fitsUncounted(in, lim)
	require.True(t, ok)
	slow, err := prompt.Fit(c, in, lim)
	require.NoError(t, err)
	assert.Equal(t, slow.Messages, fast.Messages)
	assert.False(t, fast.Truncated)

	// Bytes that might not fit: counted.
	tight := prompt.Limits{ContextWindow: 1024 + len(SystemPrompt) + 20, MaxTokens: 1024}
	_, ok = fitsUncounted(in, tight)
	assert.False(t, ok)
	_, ok = fitsUncounted(in, prompt.Limits{ContextWindow: 128000, MaxTokens: 1024, TPM: 1100})
	assert.False(t, ok, "the TPM bound applies too")
	_, ok = fitsUncounted(prompt.Input{System: SystemPrompt, Messages: in.Messages, Sources: []prompt.Source{{Text: "x"}}}, lim)
	assert.False(t, ok, "sources always go through Fit")

	// The bound is an upper bound: whenever the fast path says yes, the
	// exact count fits.
	for n := 1; n < 4000; n += 97 {
		in := prompt.Input{System: SystemPrompt, Messages: []tokens.Message{{Role: "user", Content: strings.Repeat("é", n)}}}
		lim := prompt.Limits{ContextWindow: 1200 + n, MaxTokens: 100}
		if _, ok := fitsUncounted(in, lim); ok {
			res, err := prompt.Fit(c, in, lim)
			require.NoError(t, err)
			assert.LessOrEqual(t, res.PromptTokens, lim.ContextWindow-lim.MaxTokens)
		}
	}
}
