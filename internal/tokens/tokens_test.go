package tokens

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The recorded exchange in internal/aoaitest/testdata/aoai/chat_200_success_apikey.json
// (gpt-4-0613) reports usage.prompt_tokens = 42 for this one user message.
const fixturePrompt = "Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."

func TestPromptMatchesRecordedUsage(t *testing.T) {
	c, err := ForModel("gpt-4-0613")
	require.NoError(t, err)
	assert.Equal(t, "cl100k_base", c.Encoding())
	assert.Equal(t, 42, c.Prompt([]Message{{Role: "user", Content: fixturePrompt}}))
}

func TestNewRefusesUnknownEncoding(t *testing.T) {
	_, err := New("p50k_base")
	assert.Error(t, err)
}

func BenchmarkText(b *testing.B) {
	c, err := New("o200k_base")
	require.NoError(b, err)
	text := ""
	for range 200 {
		text += fixturePrompt + " "
	}
	n := c.Text(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		c.Text(text)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
