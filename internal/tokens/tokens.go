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
// read-only data (vocab.go) and the split patterns are code (split.go). The
// first count of an encoding in a process checks its table's header and
// looks up its 256 single bytes; every Counter of that encoding then shares
// them.
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

// Text returns the number of tokens in s. Each byte of s that is not part of
// valid UTF-8 counts as U+FFFD, as tiktoken reads such a string (and as a JSON
// encoder sends it), so counting never fails.
func (c *Counter) Text(s string) int { return c.TextContext(context.Background(), s) }

// TextContext is Text that stops once ctx ends, returning what it had
// counted: callers check ctx.Err() after it. Counting is linear in the
// text, but a long text must still not outlive its request.
func (c *Counter) TextContext(ctx context.Context, s string) int {
	s, _ = valid(s)
	n := 0
	_ = c.codec().each(ctx, s, func(uint32, int) { n++ })
	return n
}

// Ends returns where each token of s ends, in bytes from the start of s:
// cutting s at Ends(s)[k-1] keeps its first k tokens. Where s is not valid
// UTF-8, a token that ends inside the U+FFFD standing for a byte ends before
// that byte.
func (c *Counter) Ends(s string) []int { return c.EndsContext(context.Background(), s) }

// EndsContext is Ends that stops once ctx ends (see TextContext).
func (c *Counter) EndsContext(ctx context.Context, s string) []int {
	text, ok := valid(s)
	var ends []int
	at := 0
	_ = c.codec().each(ctx, text, func(_ uint32, n int) { at += n; ends = append(ends, at) })
	if !ok {
		offsets := inputOffsets(s)
		for i, end := range ends {
			ends[i] = offsets[end]
		}
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
