package prompt

import "fmt"

// The limits a TooLargeError names.
const (
	LimitContextWindow = "context_window" // the model's context window minus the completion reserve
	LimitTPM           = "tpm"            // the deployment's tokens-per-minute limit
)

// TooLargeError means a request can never be sent: even the smallest prompt
// Fit could build (the system prompt and the question, with markers for
// everything else) does not fit. The server answers it with 413
// prompt_too_large before any upstream call.
type TooLargeError struct {
	// Limit is LimitContextWindow or LimitTPM.
	Limit string
	// Tokens is what the smallest prompt needs: its prompt tokens for
	// LimitContextWindow; its prompt tokens plus MaxTokens for LimitTPM,
	// which is how Azure OpenAI counts a request against the limit.
	Tokens int
	// Max is what fits: ContextWindow - MaxTokens (never below 0), or TPM.
	Max int
	// Question is the tokens of the question's text, to tell whether
	// shortening it can help at all.
	Question int
	// Prompt is the smallest prompt counted: the system prompt and the
	// question, everything else dropped (the size the log line reports).
	Prompt int
}

// Over returns how many tokens must go: Tokens - Max.
func (e *TooLargeError) Over() int { return e.Tokens - e.Max }

// Error says, in words an end user can act on, which limit the request is
// over and by how much to shorten the question.
func (e *TooLargeError) Error() string {
	over := e.Over()
	var what string
	switch e.Limit {
	case LimitTPM:
		what = fmt.Sprintf("This request is larger than the AI deployment accepts: with the room reserved for the answer it needs %d tokens, and the deployment allows %d tokens per minute.", e.Tokens, e.Max)
	default:
		what = fmt.Sprintf("This question is too long for the AI model: the prompt needs %d tokens, and %d fit after the room reserved for the answer.", e.Tokens, e.Max)
	}
	if over > e.Question {
		return what + " Even without the question the request would not fit; ask for a shorter answer or contact the administrator."
	}
	return what + fmt.Sprintf(" Shorten the question by about %d tokens (~%d words).", over, words(over))
}

// words estimates the English words in n tokens: about 3/4 of a word per
// token (OpenAI's rule of thumb), rounded up.
func words(n int) int {
	return max((n*3+3)/4, 1)
}
