package prompt

import (
	"context"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// FitWhole checks a prompt that is sent as it is, never trimmed: the OpenAI
// dialect's, whose messages (instructions, tool calls and their results)
// are the caller's to shape. It fits the limits when its tokens and the
// completion reserve fit them as Fit's prompts must (ContextWindow -
// MaxTokens, and TPM - MaxTokens when TPM is set). It returns the prompt's
// tokens, or 0 when its bytes alone show that it fits (as FitUncounted:
// byte-level BPE makes no more tokens than bytes); a *TooLargeError when it
// does not fit; ErrNoQuestion for no messages, ErrInvalidLimits for a limit
// out of range, and ctx's cause when ctx ends while it counts.
func FitWhole(ctx context.Context, c *tokens.Counter, msgs []tokens.Message, lim Limits) (int, error) {
	if len(msgs) == 0 {
		return 0, ErrNoQuestion
	}
	if lim.ContextWindow <= 0 || lim.MaxTokens < 0 || lim.TPM < 0 {
		return 0, ErrInvalidLimits
	}
	if _, ok := FitUncounted(Input{Messages: msgs}, lim); ok {
		return 0, nil
	}
	n := c.Prompt(nil) // the reply's priming
	for _, m := range msgs {
		n += c.MessageContext(ctx, m)
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
	}
	last := c.TextContext(ctx, msgs[len(msgs)-1].Content)
	if room := lim.ContextWindow - lim.MaxTokens; n > room {
		return n, &TooLargeError{Limit: LimitContextWindow, Tokens: n, Max: max(room, 0), Question: last, Prompt: n}
	}
	if lim.TPM > 0 && n+lim.MaxTokens > lim.TPM {
		return n, &TooLargeError{Limit: LimitTPM, Tokens: n + lim.MaxTokens, Max: lim.TPM, Question: last, Prompt: n}
	}
	return n, nil
}
