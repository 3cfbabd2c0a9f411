package prompt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/ctxtest"
	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// FitContext stops counting once its context ends and returns its error,
// instead of finishing seconds of counting for a request that is out of
// time (the issue: 2.4-3.1 s of fitting, then an upstream call with 0.5 s
// left). Five 100 KB documents are counted, the context checked every 1024 pieces;
// the context ends after its first few checks.
func TestFitContextStopsWhenTheContextEnds(t *testing.T) {
	c := counter(t, "gpt-4o")
	in := prompt.Input{System: "system", Messages: []tokens.Message{{Role: "user", Content: "question"}}}
	for range 5 {
		in.Sources = append(in.Sources, prompt.Source{Kind: prompt.KindDocument, Title: "doc", Text: strings.Repeat("words to count ", 7_000)})
	}
	lim := prompt.Limits{ContextWindow: 10_000_000, MaxTokens: 1000}

	ctx := ctxtest.ExpireAfter(5)
	_, err := prompt.FitContext(ctx, c, in, lim)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Greater(t, ctx.Calls(), int64(5), "it saw the context end")
	assert.Less(t, ctx.Calls()-5, int64(1000), "it stopped soon after the end, not after counting everything")

	res, err := prompt.FitContext(context.Background(), c, in, lim)
	require.NoError(t, err)
	assert.Greater(t, res.PromptTokens, 100_000, "the same input counts whole when there is time")
}
