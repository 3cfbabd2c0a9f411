package api

import (
	"context"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// tallyBatch is how much of an answer's text a tally holds before it
// counts it: the count of what is left when the answer ends is of less
// than this, a millisecond's work, and a short answer, which Azure's own
// usage counts, is never counted here at all.
const tallyBatch = 4 << 10

// tally counts an answer's completion tokens as its pieces arrive from
// Azure OpenAI, a batch at a time, so that the count is there when the
// answer ends, however it ends: the deadline's 500 carries its partial
// answer's count without a count of the whole text first, and a stream
// whose caller stopped reading leaves nothing to count after it. A batch
// whose count the request's deadline cuts is estimated from its length
// instead (estimated), so that no count holds a core past the deadline.
type tally struct {
	counter *tokens.Counter
	ctx     context.Context // the request's: its deadline ends exact counting
	pending []byte          // the pieces not counted yet, fewer than tallyBatch bytes
	counted int             // the tokens of the text before pending
	// delivered is the tokens a stream's caller was sent, once a piece was
	// not (undelivered): the pieces after it are not sent either.
	delivered int
	stopped   bool
	estimated bool
}

// tallied starts the request's tally (its bill's) under ctx and returns
// the aoai.Request.OnDelta that feeds it: deltas, for an answer written
// whole.
func (s *server) tallied(ctx context.Context) func(string) {
	billOf(ctx).tally = tally{counter: s.Tokens, ctx: ctx}
	return deltas(ctx, nil)
}

// deltas is the one counter of an answer's pieces as they arrive from
// Azure OpenAI (an aoai.Request.OnDelta): each goes to the request's
// tally, the first one's time to the log line and, for a stream of
// timebox's dialect (es), to the caller first as a delta event. A piece
// the caller did not take, and every one after it, is undelivered.
func deltas(ctx context.Context, es *eventStream) func(string) {
	rec, t := recordFrom(ctx), &billOf(ctx).tally
	return func(text string) {
		rec.firstToken(text)
		if es != nil && !es.delta(text) {
			t.undelivered()
		}
		t.piece(text)
	}
}

// piece adds one piece of the answer.
func (t *tally) piece(text string) {
	t.pending = append(t.pending, text...)
	if len(t.pending) >= tallyBatch {
		t.flush(t.ctx)
	}
}

// undelivered notes that the piece about to be added, and every one after
// it, did not reach the caller: what was added so far did.
func (t *tally) undelivered() {
	if t.stopped {
		return
	}
	t.flush(context.Background()) // less than tallyBatch
	t.delivered, t.stopped = t.counted, true
}

// generated is the tokens of every piece added.
func (t *tally) generated() int {
	t.flush(context.Background()) // less than tallyBatch
	return t.counted
}

// sent is the tokens a stream's caller was sent.
func (t *tally) sent() int {
	if t.stopped {
		return t.delivered
	}
	return t.generated()
}

// of is the tokens of partial, the text of an answer cut short: the tally
// of its pieces, or, when none was kept (a call that did not tally its
// pieces), an estimate.
func (t *tally) of(partial string) int {
	if n := t.generated(); n > 0 || partial == "" {
		return n
	}
	t.estimated = true
	return estimateTokens(partial)
}

// flush counts pending under ctx: exactly, unless ctx ends first.
func (t *tally) flush(ctx context.Context) {
	if len(t.pending) == 0 {
		return
	}
	text := string(t.pending)
	t.pending = t.pending[:0]
	if t.counter != nil && ctx.Err() == nil {
		if n := t.counter.TextContext(ctx, text); ctx.Err() == nil {
			t.counted += n
			return
		}
	}
	t.counted += estimateTokens(text)
	t.estimated = true
}

// estimateTokens is text's tokens from its length: about four bytes a
// token, OpenAI's rule of thumb for English text.
func estimateTokens(text string) int {
	return (len(text) + 3) / 4
}
