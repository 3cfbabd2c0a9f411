// Package tokens counts tokens the way Azure OpenAI bills them, offline, with
// the vocabularies of github.com/tiktoken-go/tokenizer (embedded as tables
// read in place, see vocab.go). The server uses it to fit prompts before they
// are sent and the simulator uses the same code to answer usage, rate limits
// and context_length_exceeded, so the two agree.
package tokens

import (
	"context"
	"fmt"
	"sync"

	"github.com/timebox-dev/timebox/internal/modelfacts"
)

// Per-message overheads of the chat format (OpenAI cookbook, "How to count
// tokens with tiktoken", for gpt-3.5-turbo-0613 and later, gpt-4 and gpt-4o):
// every message costs 3 tokens of framing plus its role and content, and every
// reply is primed with 3 more.
const (
	perMessage = 3
	perReply   = 3
)

// Message is one chat turn as it is counted: a role and its text.
type Message struct {
	Role    string
	Content string
}

// Counter counts tokens with one encoding. A Counter is safe for concurrent
// use. The zero value is not usable; call New or ForModel.
//
// There is nothing to load: the vocabulary is a table in the binary's
// read-only data (vocab.go). The first count of an encoding in a process
// checks its table's header and compiles its split pattern (about 0.1 ms);
// every Counter of that encoding then shares them.
type Counter struct {
	encoding string
	codec    func() *bpe
}

// codecs builds each encoding's codec once, at its first count.
var codecs = map[string]func() *bpe{
	"o200k_base":  sync.OnceValue(func() *bpe { return mustBPE("o200k_base") }),
	"cl100k_base": sync.OnceValue(func() *bpe { return mustBPE("cl100k_base") }),
}

func mustBPE(encoding string) *bpe {
	c, err := newBPE(encoding)
	if err != nil {
		// The tables are embedded: this is a broken build, which
		// TestADamagedTableIsRefused and TestEveryIDRoundTrips catch first.
		panic(fmt.Sprintf("tokens: a broken build: %v", err))
	}
	return c
}

// New returns a Counter for an encoding name: "o200k_base" or
// "cl100k_base".
func New(encoding string) (*Counter, error) {
	codec, ok := codecs[encoding]
	if !ok {
		return nil, fmt.Errorf("tokens: unsupported encoding %q (want o200k_base or cl100k_base)", encoding)
	}
	return &Counter{encoding: encoding, codec: codec}, nil
}

// ForModel returns a Counter with the model's encoding (modelfacts).
func ForModel(model string) (*Counter, error) {
	return New(modelfacts.Lookup(model).Encoding)
}

// Encoding returns the name of the Counter's encoding.
func (c *Counter) Encoding() string { return c.encoding }

// Text returns the number of tokens in s. Invalid UTF-8 is counted as the
// bytes it is (the tokenizer is byte-level), so it never fails.
func (c *Counter) Text(s string) int { return c.TextContext(context.Background(), s) }

// TextContext is Text that stops once ctx ends, returning what it had
// counted: callers check ctx.Err() after it. Counting runs at 2-7 MB/s a
// core, so a long text must not outlive its request.
func (c *Counter) TextContext(ctx context.Context, s string) int {
	n := 0
	if err := c.codec().each(ctx, s, func(int) { n++ }); err != nil && ctx.Err() == nil {
		// regexp2 fails only on a match timeout, and none is set.
		return len(s)
	}
	return n
}

// Ends returns where each token of s ends, in bytes from the start of s:
// cutting s at Ends(s)[k-1] keeps its first k tokens.
func (c *Counter) Ends(s string) []int { return c.EndsContext(context.Background(), s) }

// EndsContext is Ends that stops once ctx ends (see TextContext).
func (c *Counter) EndsContext(ctx context.Context, s string) []int {
	var ends []int
	at := 0
	if err := c.codec().each(ctx, s, func(n int) { at += n; ends = append(ends, at) }); err != nil && ctx.Err() == nil {
		return nil
	}
	return ends
}

// Message returns the tokens one message adds to a prompt, framing included.
func (c *Counter) Message(m Message) int { return c.MessageContext(context.Background(), m) }

// MessageContext is Message that stops once ctx ends (see TextContext).
func (c *Counter) MessageContext(ctx context.Context, m Message) int {
	return perMessage + c.TextContext(ctx, m.Role) + c.TextContext(ctx, m.Content)
}

// Prompt returns the prompt tokens of a whole chat request: every message
// plus the reply priming. It equals Azure OpenAI's usage.prompt_tokens for
// plain text messages.
func (c *Counter) Prompt(msgs []Message) int {
	n := perReply
	for _, m := range msgs {
		n += c.Message(m)
	}
	return n
}
