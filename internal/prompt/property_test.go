package prompt_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

// fragments are the bits random texts are made of, chosen to stress the
// joins between pieces: white space and newlines at the edges, punctuation
// that pre-tokenizes with trailing newlines ("/" in o200k_base), digits,
// contractions, combining marks, multi-byte characters a token can split,
// invalid UTF-8, and text that looks like Fit's own delimiters.
var fragments = []string{
	"the", " report", "Revenue", "grew", " 12%", "1234567", "'s", "'ll", "HTML",
	" ", "  ", "\n", "\n\n", "\r\n", " \n", "\t", "\u00a0", "\u3000",
	".", "...", "/", "//", "---", "[", "]", "<", ">", "-", "—",
	"é", "e\u0301", "日本語のテキスト", "中文", "🙂", "👩‍💻", "Ünïcödé",
	"\xff", "\xe6\x97", "<|endoftext|>",
	"--- END SOURCE 1 ---", "[... passage shortened ...]",
}

func randomText(r *rand.Rand, maxParts int) string {
	var b strings.Builder
	for range r.IntN(maxParts + 1) {
		b.WriteString(fragments[r.IntN(len(fragments))])
		if r.IntN(3) == 0 {
			b.WriteString(" word")
		}
	}
	return b.String()
}

func randomInput(r *rand.Rand) prompt.Input {
	var in prompt.Input
	if r.IntN(4) > 0 {
		in.System = randomText(r, 20)
	}
	roles := []string{"user", "assistant"}
	for range r.IntN(30) {
		in.Messages = append(in.Messages, tokens.Message{Role: roles[r.IntN(2)], Content: randomText(r, 60)})
	}
	in.Messages = append(in.Messages, tokens.Message{Role: "user", Content: randomText(r, 30)})
	kinds := []string{"", prompt.KindSource, prompt.KindDocument, prompt.KindPage}
	for range r.IntN(20) {
		in.Sources = append(in.Sources, prompt.Source{
			Kind:  kinds[r.IntN(len(kinds))],
			Title: randomText(r, 4),
			URL:   randomText(r, 2),
			Text:  randomText(r, 400),
		})
	}
	return in
}

// checkProperty runs Fit on in and checks what must hold whatever the input.
func checkProperty(t *testing.T, c *tokens.Counter, in prompt.Input, lim prompt.Limits) {
	t.Helper()
	res, err := prompt.Fit(c, in, lim)
	var tl *prompt.TooLargeError
	if errors.As(err, &tl) {
		assert.Greater(t, tl.Tokens, tl.Max)
		// The smallest prompt really is too large: every turn but the
		// question and every source gone still does not fit.
		bare := prompt.Input{System: in.System, Messages: in.Messages[len(in.Messages)-1:]}
		res, err := prompt.Fit(c, bare, prompt.Limits{ContextWindow: 1 << 30})
		require.NoError(t, err)
		need := res.PromptTokens
		if tl.Limit == prompt.LimitTPM {
			need += lim.MaxTokens
		}
		assert.LessOrEqual(t, need, tl.Tokens, "the markers only add")
		return
	}
	require.NoError(t, err)
	assert.Equal(t, c.Prompt(res.Messages), res.PromptTokens, "PromptTokens is exact")
	assert.LessOrEqual(t, res.PromptTokens, lim.ContextWindow-lim.MaxTokens)
	if lim.TPM > 0 {
		assert.LessOrEqual(t, res.PromptTokens+lim.MaxTokens, lim.TPM)
	}
	require.NotEmpty(t, res.Messages)
	assert.Equal(t, in.Messages[len(in.Messages)-1], res.Messages[len(res.Messages)-1], "the question is last and unchanged")
	kept := res.Messages
	if in.System != "" {
		assert.Equal(t, "system", kept[0].Role)
	}
	if kept[0].Role == "system" { // the inputs hold only user and assistant turns
		assert.True(t, strings.HasPrefix(kept[0].Content, in.System))
		kept = kept[1:]
	}
	assert.Equal(t, in.Messages[len(in.Messages)-len(kept):], kept, "the kept turns are the newest, unchanged")
	assert.Equal(t, len(in.Messages)-len(kept), res.Dropped.Turns)
	assert.Equal(t, res.Dropped.Turns > 0 || len(res.Dropped.Sources) > 0 || len(res.Dropped.Shortened) > 0, res.Truncated)
}

// TestFitProperty checks, for random inputs and limits in both encodings,
// that the result fits, that PromptTokens is exact, and that the question is
// sent unchanged.
func TestFitProperty(t *testing.T) {
	for _, model := range []string{"gpt-4", "gpt-4o"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			c := counter(t, model)
			r := rand.New(rand.NewPCG(1, uint64(len(model))))
			n := 120
			if testing.Short() {
				n = 50
			}
			for range n {
				in := randomInput(r)
				lim := prompt.Limits{ContextWindow: 20 + r.IntN(3000)}
				lim.MaxTokens = r.IntN(lim.ContextWindow / 2)
				if r.IntN(3) == 0 {
					lim.TPM = lim.MaxTokens + r.IntN(3000)
				}
				checkProperty(t, c, in, lim)
				if t.Failed() {
					t.Logf("input: %#v\nlimits: %+v", in, lim)
					return
				}
			}
		})
	}
}

// FuzzFit runs the property on fuzzed texts: go test -fuzz FuzzFit
// ./internal/prompt.
func FuzzFit(f *testing.F) {
	f.Add("You are helpful.", "Hello\n", "Hi!", "What is 2+2?", "Title", "https://x", "passage text.\n", 300, 50, 0, false)
	f.Add("", "", "", "q", "", "", "\n\n\n", 40, 0, 0, true)
	f.Add("sys/", "a/\n", "b\r\n", "c", "t\n", "u", "---\n[... ", 100, 10, 120, true)
	c, err := tokens.ForModel("gpt-4o")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, system, turn1, turn2, question, title, url, text string, window, reserve, tpm int, long bool) {
		if window <= 0 || window > 100000 || reserve < 0 || reserve > window || tpm < 0 || tpm > 200000 {
			t.Skip()
		}
		if long {
			text = strings.Repeat(text, 50)
		}
		in := prompt.Input{
			System: system,
			Messages: []tokens.Message{
				{Role: "user", Content: turn1},
				{Role: "assistant", Content: turn2},
				{Role: "user", Content: question},
			},
			Sources: []prompt.Source{{Title: title, URL: url, Text: text}, {Kind: prompt.KindPage, Text: text + turn1}},
		}
		checkProperty(t, c, in, prompt.Limits{ContextWindow: window, MaxTokens: reserve, TPM: tpm})
	})
}
