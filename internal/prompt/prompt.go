// Package prompt assembles the messages timebox sends to Azure OpenAI so that
// they fit before they are sent: the server's system prompt, a block of
// sources (retrieved passages, extracted documents, fetched pages) that the
// model can cite, and the conversation, trimmed to the model's context window
// minus the completion reserve and, when the deployment's tokens-per-minute
// limit is known, to that limit too.
//
// Trimming drops the least important material first: the oldest turns (a
// user turn together with the replies that follow it), then the longest
// passages (by bytes of text), shortening a passage at a token boundary
// instead of dropping it when that is enough. Every cut leaves a visible
// marker in the prompt, and the Result says what was cut. The system prompt
// and the last message (the question) are never trimmed; when even they
// cannot fit, Fit returns a *TooLargeError that tells the user how much to
// cut.
//
// Counting is exact and cheap. Every piece of the prompt is counted at most
// once, and the pieces are joined only where the tokenizers' pre-tokenization
// always splits (after a newline, before a character that is not white
// space), so the tokens of the whole are the sum of the tokens of its parts.
// Material that is dropped is never counted: Fit grows the prompt from the
// smallest one it could send, so its work is bounded by the prompt's token limit rather
// than by the size of the request.
package prompt

import (
	"context"
	"errors"
	"fmt"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// The kinds of Source. An empty Kind is KindSource.
const (
	KindSource   = "source"   // a passage retrieved by the caller
	KindDocument = "document" // text extracted from an uploaded document
	KindPage     = "page"     // text read from a fetched web page
)

// MinShortened is the fewest tokens of a passage's text that a shortened
// passage keeps. When shortening the longest passage would leave less than
// this, the passage is dropped instead: a stub of a few words is not worth
// its header.
const MinShortened = 32

// maxBytesPerToken bounds the bytes of a source Fit counts, per token the
// prompt may hold: text beyond maxPrompt*maxBytesPerToken bytes is cut
// before counting.
// Prose, code and CJK run 1-5 bytes a token, so what is cut could never have
// fit; text that runs longer per token (long runs of spaces) is still cut
// correctly, only earlier than it had to be.
const maxBytesPerToken = 16

// Errors Fit returns besides *TooLargeError. Both are the caller's bugs, not
// the user's: the server answers them as internal errors.
var (
	// ErrNoQuestion means Input.Messages is empty.
	ErrNoQuestion = errors.New("prompt: no messages: the last message must be the question")
	// ErrInvalidLimits means a Limits field is out of range.
	ErrInvalidLimits = errors.New("prompt: invalid limits")
)

// Source is one piece of material the model should read and may cite: a
// retrieved passage, an extracted document or a fetched page. Title and URL
// label it (either may be empty); Text is what the model reads.
type Source struct {
	Kind  string // KindSource, KindDocument or KindPage; empty means KindSource
	Title string
	URL   string
	Text  string
}

// Input is what Fit assembles.
type Input struct {
	// System is the server's system prompt. It is never trimmed; empty means
	// no system prompt (a system message is still sent when there are
	// sources or markers to carry).
	System string
	// Messages are the user and assistant turns, oldest first. The last one
	// is the question and is never trimmed; there must be at least one.
	Messages []tokens.Message
	// Sources are the passages, documents and pages, most important first.
	Sources []Source
}

// Limits are the token limits a prompt must fit.
type Limits struct {
	// ContextWindow is the number of tokens the model accepts, prompt and
	// completion together. It must be positive.
	ContextWindow int
	// MaxTokens is the completion reserve: the token limit that will be sent
	// upstream. The prompt gets ContextWindow - MaxTokens. It must not be
	// negative.
	MaxTokens int
	// TPM is the deployment's tokens-per-minute limit. Azure OpenAI counts a
	// request against it as prompt tokens plus the token limit, so the
	// prompt gets at most TPM - MaxTokens. 0 means not set.
	TPM int
}

// Dropped says what Fit cut to make the prompt fit.
type Dropped struct {
	// Turns is the number of earlier messages (user and assistant turns)
	// left out.
	Turns int
	// Sources are the labels (title, else URL, else "source N") of the
	// passages left out, in input order.
	Sources []string
	// Shortened are the labels of the passages cut short but kept.
	Shortened []string
}

// Result is a prompt that fits.
type Result struct {
	// Messages are ready to send: the system message first (the system
	// prompt, the sources block and any markers), then the kept turns,
	// unchanged, ending with the question.
	Messages []tokens.Message
	// PromptTokens is exactly what tokens.Counter.Prompt says of Messages.
	PromptTokens int
	// Truncated reports that something was dropped or shortened.
	Truncated bool
	// Dropped says what.
	Dropped Dropped
}

// Fit assembles in into messages that fit lim, counting with c, and trims it
// when it does not fit (see the package doc for the order). The prompt gets
// ContextWindow - MaxTokens tokens, and, when TPM is set, at most
// TPM - MaxTokens.
//
// When even the system prompt and the question (with the markers of
// everything cut) exceed the context window, Fit returns a *TooLargeError
// with Limit "context_window"; when they and MaxTokens exceed TPM, one with
// Limit "tpm". It returns ErrNoQuestion when in has no messages and
// ErrInvalidLimits when a limit is out of range. Fit does not modify in.
//
// A big request is counted on up to GOMAXPROCS goroutines, all finished
// before Fit returns. Fit is bounded (about a token limit's worth of text,
// at 2-7 MB/s a core, which is seconds when many requests share the cores);
// FitContext also stops when its context ends.
func Fit(c *tokens.Counter, in Input, lim Limits) (Result, error) {
	return FitContext(context.Background(), c, in, lim)
}

// FitContext is Fit that stops counting once ctx ends, and then returns
// ctx's cause (context.Cause), so a request whose time runs out while its
// prompt is fitted answers at its deadline, not seconds later.
func FitContext(ctx context.Context, c *tokens.Counter, in Input, lim Limits) (Result, error) {
	if len(in.Messages) == 0 {
		return Result{}, ErrNoQuestion
	}
	if lim.ContextWindow <= 0 || lim.MaxTokens < 0 || lim.TPM < 0 {
		return Result{}, fmt.Errorf("%w: context window %d, max tokens %d, tpm %d", ErrInvalidLimits, lim.ContextWindow, lim.MaxTokens, lim.TPM)
	}
	// The prompt's token limit (maxPrompt) is known before anything is
	// counted, and the smallest prompt needs only the system prompt, the
	// question and the markers: a request that can never fit fails before
	// its bulk is counted.
	maxPrompt := lim.ContextWindow - lim.MaxTokens
	if lim.TPM > 0 {
		maxPrompt = min(maxPrompt, lim.TPM-lim.MaxTokens)
	}
	f := newFitter(ctx, c, in, max(maxPrompt, 0)*maxBytesPerToken)
	if ctx.Err() != nil {
		return Result{}, context.Cause(ctx)
	}
	minimal := f.tokens(f.minimal())
	question := f.turns[len(f.turns)-1] - c.Message(tokens.Message{Role: in.Messages[len(in.Messages)-1].Role})

	if ctxLimit := lim.ContextWindow - lim.MaxTokens; minimal > ctxLimit {
		return Result{}, &TooLargeError{Limit: LimitContextWindow, Tokens: minimal, Max: max(ctxLimit, 0), Question: question, Prompt: minimal}
	}
	if lim.TPM > 0 && minimal+lim.MaxTokens > lim.TPM {
		return Result{}, &TooLargeError{Limit: LimitTPM, Tokens: minimal + lim.MaxTokens, Max: lim.TPM, Question: question, Prompt: minimal}
	}
	f.fit(maxPrompt)
	if ctx.Err() != nil {
		return Result{}, context.Cause(ctx)
	}
	return f.result(), nil
}
