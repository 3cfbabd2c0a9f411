package prompt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// A prompt sent whole is refused when it does not fit, never trimmed, and
// counted as Azure OpenAI counts it when counting is needed.
func TestFitWhole(t *testing.T) {
	c, err := tokens.ForModel("gpt-4o")
	require.NoError(t, err)
	long := strings.Repeat("word ", 3000)
	msgs := []tokens.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: long}}
	ctx := context.Background()

	n, err := prompt.FitWhole(ctx, c, msgs[:1], prompt.Limits{ContextWindow: 128000, MaxTokens: 100})
	require.NoError(t, err)
	assert.Zero(t, n, "a prompt whose bytes fit is not counted")

	n, err = prompt.FitWhole(ctx, c, msgs, prompt.Limits{ContextWindow: 4000, MaxTokens: 100})
	require.NoError(t, err)
	assert.Equal(t, c.Prompt(msgs), n, "counted as the whole prompt")

	_, err = prompt.FitWhole(ctx, c, msgs, prompt.Limits{ContextWindow: 3000, MaxTokens: 100})
	var tooBig *prompt.TooLargeError
	require.ErrorAs(t, err, &tooBig)
	assert.Equal(t, prompt.LimitContextWindow, tooBig.Limit)
	assert.Equal(t, c.Prompt(msgs), tooBig.Prompt)
	assert.Equal(t, 2900, tooBig.Max)

	_, err = prompt.FitWhole(ctx, c, msgs, prompt.Limits{ContextWindow: 128000, MaxTokens: 1000, TPM: 3500})
	require.ErrorAs(t, err, &tooBig)
	assert.Equal(t, prompt.LimitTPM, tooBig.Limit)
	assert.Equal(t, c.Prompt(msgs)+1000, tooBig.Tokens)
}
