package modelfacts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/modelfacts"
)

// The table against Microsoft Learn's figures (standard deployments), by
// the names deployments are given.
func TestLookup(t *testing.T) {
	tests := []struct {
		name       string
		window     int
		input      int
		encoding   string
		tokenField string
		reasoning  bool
		background bool
	}{
		{"gpt-4o", 128_000, 0, "o200k_base", "max_tokens", false, false},
		{"gpt-4o-mini", 128_000, 0, "o200k_base", "max_tokens", false, false},
		{"GPT-4o-Prod", 128_000, 0, "o200k_base", "max_tokens", false, false},
		{"gpt-4", 8_192, 0, "cl100k_base", "max_tokens", false, false},
		{"gpt-4-0613", 8_192, 0, "cl100k_base", "max_tokens", false, false},
		{"gpt-4-32k", 32_768, 0, "cl100k_base", "max_tokens", false, false},
		{"gpt-4-turbo", 128_000, 0, "cl100k_base", "max_tokens", false, false},
		{"gpt-35-turbo", 16_385, 0, "cl100k_base", "max_tokens", false, false},
		{"gpt-4.1", 300_000, 0, "o200k_base", "max_tokens", false, false},
		{"gpt-4.1-nano", 300_000, 0, "o200k_base", "max_tokens", false, false},
		{"gpt-5", 400_000, 272_000, "o200k_base", "max_completion_tokens", true, true},
		{"gpt-5-mini", 400_000, 272_000, "o200k_base", "max_completion_tokens", true, true},
		{"gpt-5.1", 400_000, 272_000, "o200k_base", "max_completion_tokens", true, true},
		{"gpt-5-chat", 128_000, 0, "o200k_base", "max_completion_tokens", false, false},
		{"gpt-5.2-chat", 128_000, 111_616, "o200k_base", "max_completion_tokens", true, true},
		{"gpt-5.4", 1_050_000, 922_000, "o200k_base", "max_completion_tokens", true, true},
		{"gpt-5.4-mini", 400_000, 272_000, "o200k_base", "max_completion_tokens", true, true},
		{"o1", 200_000, 0, "o200k_base", "max_completion_tokens", true, true},
		{"o1-mini", 128_000, 0, "o200k_base", "max_completion_tokens", true, false},
		{"o3-mini", 200_000, 0, "o200k_base", "max_completion_tokens", true, true},
		{"o4-mini", 200_000, 0, "o200k_base", "max_completion_tokens", true, true},
		{"o1-preview", 128_000, 0, "o200k_base", "max_completion_tokens", true, false},
		{"codex-mini", 200_000, 0, "o200k_base", "max_completion_tokens", true, false},
		{"my-deployment", 128_000, 0, "o200k_base", "max_tokens", false, false},
	}
	for _, tt := range tests {
		f := modelfacts.Lookup(tt.name)
		assert.Equal(t, modelfacts.Facts{ContextWindow: tt.window, InputLimit: tt.input, Encoding: tt.encoding, TokenField: tt.tokenField, Reasoning: tt.reasoning, Background: tt.background}, f, tt.name)
	}
}

// A prompt gets the window less the completion, and never more than the
// input limit.
func TestPromptWindow(t *testing.T) {
	assert.Equal(t, 128_000-1024, modelfacts.Lookup("gpt-4o").PromptWindow(1024))
	assert.Equal(t, 272_000, modelfacts.Lookup("gpt-5").PromptWindow(1024))
	assert.Equal(t, 400_000-200_000, modelfacts.Lookup("gpt-5").PromptWindow(200_000))
}
