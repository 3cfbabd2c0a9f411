package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// When the request's time runs out while the prompt is counted (a document
// of megabytes is counted in seconds on a busy instance), the AI service
// was never asked: the answer must say so, not "The AI service did not
// answer in time". Probed on the real binary; the whole path needs the
// deadline to strike during CPU work, which virtual time cannot do, so the
// prompt step is driven here with a deadline already past.
func TestFitOutOfTimeSaysTheAIServiceWasNotAsked(t *testing.T) {
	counter, err := tokens.New("o200k_base")
	require.NoError(t, err)
	s := &server{Options: Options{Tokens: counter, ContextWindow: 128_000, MaxTokens: 1024}}
	material := []prompt.Source{{Kind: prompt.KindDocument, Title: "big.html", Text: strings.Repeat("word ", 400_000)}}
	req := ChatRequest{Messages: []ChatMessage{{Role: "user", Content: "summarise"}}}

	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), budget.ErrExhausted)
	defer cancel()
	_, err = s.fit(ctx, req, material, 1024)
	require.Error(t, err)
	a := rowFor(err)
	assert.Equal(t, 500, a.status)
	assert.Equal(t, "deadline_exceeded", a.code)
	assert.Contains(t, a.msg, "the AI service was not asked")
	assert.ErrorIs(t, err, budget.ErrExhausted, "the log line keeps the cause")

	// A caller that went away is not a deadline: not relabelled.
	gone, stop := context.WithCancel(context.Background())
	stop()
	_, err = s.fit(gone, req, material, 1024)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errNoTimeForUpstream)
}
