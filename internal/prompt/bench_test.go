package prompt_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

var vocabulary = strings.Fields(`the report revenue grew quarter customers market costs fell
sales team product launch region Europe growth margin forecast risk supply chain delays
contract renewal partner pricing discount SharePoint site policy employees onboarding
training security compliance audit review budget approval project milestone deadline
is was are were has have will would could should may might and or but if then because
of to in on for with by from at about into over after before under between during`)

// prose returns about n bytes of English-like text with punctuation and
// paragraph breaks, the same for the same seed.
func prose(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	sentence := 0
	for b.Len() < n {
		w := vocabulary[r.IntN(len(vocabulary))]
		if sentence == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		sentence++
		switch {
		case sentence > 8 && r.IntN(6) == 0:
			fmt.Fprintf(&b, " %d.", r.IntN(2000))
			sentence = 0
			if r.IntN(5) == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		case r.IntN(12) == 0:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// bigRequest is a realistic large request: 50 sources of 2 KB and 20 turns
// of about 600 bytes.
func bigRequest() prompt.Input {
	in := prompt.Input{System: "You are the Contoso assistant. Answer from the sources and cite them by number."}
	for i := range 20 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		in.Messages = append(in.Messages, tokens.Message{Role: role, Content: prose(uint64(i), 600)})
	}
	in.Messages = append(in.Messages, tokens.Message{Role: "user", Content: "What changed in the Q3 forecast, and why?"})
	kinds := []string{prompt.KindSource, prompt.KindDocument, prompt.KindPage}
	for i := range 50 {
		in.Sources = append(in.Sources, prompt.Source{
			Kind:  kinds[i%3],
			Title: fmt.Sprintf("Passage %d", i+1),
			URL:   fmt.Sprintf("https://contoso.sharepoint.com/sites/finance/doc%d.docx", i+1),
			Text:  prose(uint64(100+i), 2048),
		})
	}
	return in
}

// BenchmarkFit fits bigRequest (about 115 KB, 25k tokens) to limits that
// keep everything, that keep half, and that keep what fits a TPM limit of
// 8000 with 1000 reserved; and a huge request (bigRequest plus five 2 MB
// documents, the most extraction returns) to a 128k context window.
func BenchmarkFit(b *testing.B) {
	in := bigRequest()
	var size int
	for _, s := range in.Sources {
		size += len(s.Text)
	}
	for _, m := range in.Messages {
		size += len(m.Content)
	}
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		c, err := tokens.ForModel(model)
		require.NoError(b, err)
		full, err := prompt.Fit(c, in, prompt.Limits{ContextWindow: 1 << 30})
		require.NoError(b, err)
		tests := []struct {
			name string
			lim  prompt.Limits
		}{
			{"fits", prompt.Limits{ContextWindow: 128000, MaxTokens: 4096}},
			{"trim_half", prompt.Limits{ContextWindow: full.PromptTokens / 2, MaxTokens: 0}},
			{"trim_tpm_8k", prompt.Limits{ContextWindow: 128000, MaxTokens: 1000, TPM: 8000}},
		}
		for _, tt := range tests {
			b.Run(model+"/"+tt.name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				var res prompt.Result
				for b.Loop() {
					res, err = prompt.Fit(c, in, tt.lim)
				}
				require.NoError(b, err)
				b.ReportMetric(float64(full.PromptTokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(res.PromptTokens), "kept_tokens")
			})
		}
	}
}

func BenchmarkFitHuge(b *testing.B) {
	in := bigRequest()
	var docs []prompt.Source
	for i := range 5 {
		docs = append(docs, prompt.Source{Kind: prompt.KindDocument, Title: fmt.Sprintf("doc%d.pdf", i), Text: prose(uint64(1000+i), 2<<20)})
	}
	in.Sources = append(docs, in.Sources...)
	size := 0
	for _, s := range in.Sources {
		size += len(s.Text)
	}
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		c, err := tokens.ForModel(model)
		require.NoError(b, err)
		b.Run(model, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var res prompt.Result
			for b.Loop() {
				res, err = prompt.Fit(c, in, prompt.Limits{ContextWindow: 128000, MaxTokens: 4096})
			}
			require.NoError(b, err)
			b.ReportMetric(float64(res.PromptTokens), "kept_tokens")
			b.ReportMetric(float64(len(res.Dropped.Sources)), "dropped_sources")
		})
	}
}
