// Package modelfacts is the one table of what timebox knows about each Azure
// OpenAI model: its context window (and input limit, where Azure sets one
// below the window), its tokenizer, the field that carries the completion
// token limit, whether it is a reasoning model, and whether timebox runs its
// generations in the Responses API's background mode. Config takes its
// defaults from it, the upstream client its token field, and the simulator
// its limits and tokenizer, so the three cannot disagree.
//
// The figures are those of Microsoft Learn, "Azure OpenAI in Microsoft
// Foundry models" (learn.microsoft.com/azure/foundry/foundry-models/concepts/
// models-sold-directly-by-azure, checked 2026-11-30), for standard
// (pay-as-you-go) deployments, the kind timebox is deployed against.
package modelfacts

import "strings"

// The tokenizer encodings (tiktoken names) the table uses.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// The completion token limit's field names.
const (
	MaxTokens           = "max_tokens"
	MaxCompletionTokens = "max_completion_tokens"
)

// Facts are what timebox knows about one model.
type Facts struct {
	// ContextWindow is the tokens the prompt and the completion may hold together.
	ContextWindow int
	// InputLimit is the tokens the prompt may hold, where Azure sets a limit
	// below ContextWindow (gpt-5: 272,000 of 400,000); 0 means none besides
	// ContextWindow.
	InputLimit int
	// Encoding is the tokenizer: O200kBase or Cl100kBase.
	Encoding string
	// TokenField names the completion token limit the model accepts:
	// reasoning models reject max_tokens and take max_completion_tokens.
	TokenField string
	// Reasoning says the model reasons before it answers (o-series, gpt-5).
	Reasoning bool
	// Background says the model's generations run in the Responses API's
	// background mode (background: true, store: true), so that one longer
	// than a request's budget is delivered across hops. Azure's how-to
	// ("Azure OpenAI Responses API", Background tasks) offers background
	// mode on the Responses API "using models like o3 and o1-pro", for
	// "complex reasoning tasks that can take several minutes"; timebox
	// takes it for the reasoning models of that API's model list (o1, o3,
	// o4-mini, gpt-5 and its successors). A chat model answers well within
	// a budget and keeps Chat Completions.
	Background bool
}

// PromptWindow is the tokens a prompt may hold when maxTokens are asked for
// the completion: the context window less the completion, and no more than
// the input limit.
func (f Facts) PromptWindow(maxTokens int) int {
	w := f.ContextWindow - maxTokens
	if f.InputLimit > 0 {
		w = min(w, f.InputLimit)
	}
	return w
}

// entry is one row: the facts of every model whose name starts with prefix.
type entry struct {
	prefix string
	facts  Facts
}

// chat is a current chat model: 128,000 tokens, o200k_base, max_tokens.
var chat = Facts{ContextWindow: 128_000, Encoding: O200kBase, TokenField: MaxTokens}

// reasoning is a reasoning model of the o200k_base generation.
func reasoning(window, input int) Facts {
	return Facts{ContextWindow: window, InputLimit: input, Encoding: O200kBase, TokenField: MaxCompletionTokens, Reasoning: true}
}

// background is f with its generations in background mode: a reasoning
// model on the Responses API's model list.
func background(f Facts) Facts {
	f.Background = true
	return f
}

// gpt4Family is gpt-4, gpt-4-turbo or gpt-35-turbo: cl100k_base, max_tokens.
func gpt4Family(window int) Facts {
	return Facts{ContextWindow: window, Encoding: Cl100kBase, TokenField: MaxTokens}
}

// table is searched in order; the first prefix that matches wins, so a
// longer prefix sits above a shorter one it starts with.
var table = []entry{
	{"gpt-5.5", background(reasoning(1_050_000, 922_000))},
	{"gpt-5.4-mini", background(reasoning(400_000, 272_000))},
	{"gpt-5.4-nano", background(reasoning(400_000, 272_000))},
	{"gpt-5.4", background(reasoning(1_050_000, 922_000))},
	// The gpt-5.x chat models (preview) reason; gpt-5-chat does not, but
	// takes max_completion_tokens like the rest of gpt-5.
	{"gpt-5.3-chat", background(reasoning(128_000, 111_616))},
	{"gpt-5.2-chat", background(reasoning(128_000, 111_616))},
	{"gpt-5.1-chat", background(reasoning(128_000, 111_616))},
	{"gpt-5-chat", Facts{ContextWindow: 128_000, Encoding: O200kBase, TokenField: MaxCompletionTokens}},
	{"gpt-5", background(reasoning(400_000, 272_000))}, // gpt-5, -mini, -nano, 5.1, 5.2, 5.3-codex
	// gpt-4.1 (-mini, -nano): 1,047,576 for the model, but 300,000 on
	// standard deployments (128,000 on provisioned ones: set CONTEXT_WINDOW).
	{"gpt-4.1", Facts{ContextWindow: 300_000, Encoding: O200kBase, TokenField: MaxTokens}},
	{"gpt-4.5", chat},
	{"gpt-4o", chat}, // gpt-4o, gpt-4o-mini
	{"gpt-4-turbo", gpt4Family(128_000)},
	{"gpt-4-32k", gpt4Family(32_768)},
	{"gpt-4", gpt4Family(8_192)},
	{"gpt-35-turbo", gpt4Family(16_385)},
	{"gpt-3.5-turbo", gpt4Family(16_385)},
	// o1-mini and o1-preview are not on the Responses API's model list.
	{"o1-mini", reasoning(128_000, 0)},
	{"o1-preview", reasoning(128_000, 0)},
	{"o1", background(reasoning(200_000, 0))},
	{"o3", background(reasoning(200_000, 0))}, // o3, o3-mini, o3-pro
	{"o4", background(reasoning(200_000, 0))},
	{"codex-mini", reasoning(200_000, 0)},
}

// Unknown are the facts assumed for a name the table does not know: a
// current chat model (128,000 tokens, o200k_base, max_tokens).
var Unknown = chat

// Lookup returns the facts of a model, or of a deployment named after one
// ("gpt-4o-mini", "gpt-4-0613", "GPT-5-prod"): the first row whose prefix
// the lowercased name starts with, else Unknown.
func Lookup(name string) Facts {
	n := strings.ToLower(name)
	for _, e := range table {
		if strings.HasPrefix(n, e.prefix) {
			return e.facts
		}
	}
	return Unknown
}
