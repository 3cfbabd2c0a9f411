package prompt_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

const system = "You are a helpful assistant for a SharePoint site. Answer the user's question concisely. " +
	"When sources are given, base the answer on them and name the source you used; say so when they do not contain the answer."

// The shortcut must build exactly what Fit builds, and must step aside
// whenever counting could matter.
func TestFitUncountedAgreesWithFit(t *testing.T) {
	c, err := tokens.New("o200k_base")
	require.NoError(t, err)
	in := prompt.Input{System: system, Messages: []tokens.Message{
		{Role: "user", Content: "first"}, {Role: "assistant", Content: "reply"}, {Role: "user", Content: "What does the travel policy say about trains?"},
	}}
	lim := prompt.Limits{ContextWindow: 128000, MaxTokens: 1024}
	fast, ok := prompt.FitUncounted(in, lim)
	require.True(t, ok)
	slow, err := prompt.Fit(c, in, lim)
	require.NoError(t, err)
	assert.Equal(t, slow.Messages, fast.Messages)
	assert.False(t, fast.Truncated)

	// Bytes that might not fit: counted.
	_, ok = prompt.FitUncounted(in, prompt.Limits{ContextWindow: 1024 + len(system) + 20, MaxTokens: 1024})
	assert.False(t, ok)
	_, ok = prompt.FitUncounted(in, prompt.Limits{ContextWindow: 128000, MaxTokens: 1024, TPM: 1100})
	assert.False(t, ok, "the TPM bound applies too")
	_, ok = prompt.FitUncounted(prompt.Input{System: system, Messages: in.Messages, Sources: []prompt.Source{{Text: "x"}}}, lim)
	assert.False(t, ok, "sources always go through Fit")

	// The bound is an upper bound: whenever the shortcut says yes, the exact
	// count fits.
	checked := 0
	for n := 1; n < 4000; n += 97 {
		in := prompt.Input{System: system, Messages: []tokens.Message{{Role: "user", Content: strings.Repeat("é", n)}}}
		lim := prompt.Limits{ContextWindow: 1200 + n, MaxTokens: 100}
		if _, ok := prompt.FitUncounted(in, lim); ok {
			checked++
			res, err := prompt.Fit(c, in, lim)
			require.NoError(t, err)
			assert.LessOrEqual(t, res.PromptTokens, lim.ContextWindow-lim.MaxTokens)
		}
	}
	assert.Positive(t, checked, "the loop exercised the shortcut")
}
