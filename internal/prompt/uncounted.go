package prompt

import "github.com/timebox-dev/timebox/internal/tokens"

// FitUncounted is Fit's shortcut for the common small request with no
// sources: byte-level BPE never makes more tokens than bytes, so when the
// bytes (plus the chat format's framing) fit the limits, the tokens do, and
// counting them, the costliest part of a small request, can be left to the
// usage Azure OpenAI reports. It returns the messages Fit would build, with
// PromptTokens 0 (not counted), and false whenever only counting can tell.
func FitUncounted(in Input, lim Limits) (Result, bool) {
	if len(in.Sources) > 0 || len(in.Messages) == 0 {
		return Result{}, false
	}
	room := lim.ContextWindow - lim.MaxTokens
	if lim.TPM > 0 {
		room = min(room, lim.TPM-lim.MaxTokens)
	}
	const framing = 3 + len("assistant") // per message, at most; 3 more prime the reply
	bound := 3 + framing + len(in.System)
	for _, m := range in.Messages {
		bound += framing + len(m.Content)
	}
	if bound > room {
		return Result{}, false
	}
	msgs := make([]tokens.Message, 0, len(in.Messages)+1)
	msgs = append(msgs, tokens.Message{Role: "system", Content: in.System})
	return Result{Messages: append(msgs, in.Messages...)}, true
}
