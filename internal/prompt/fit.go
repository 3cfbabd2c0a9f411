package prompt

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// This file holds the fitter: it counts each piece of the prompt once and
// trims the least important material until the prompt fits its token limit.

// fitter holds the pieces of one prompt, each counted at most once, and the
// state of the trimming.
type fitter struct {
	c  *tokens.Counter
	in Input

	reply    int // tokens Prompt adds once: the reply priming
	sysFrame int // tokens of a system message with empty content
	sysAlone int // tokens of in.System alone
	sysJoin  int // tokens of in.System + sep, when more follows it

	header  int // tokens of sourcesHeader
	sources []source

	// ctx ends the counting: every count returns early once it is done,
	// and Fit reports ctx's cause instead of a result.
	ctx context.Context

	turns   []int // tokens of each message, framing included, once counted
	starts  []int // indexes where a droppable group of history turns starts, oldest first
	markers map[string]int

	st state
}

// state is how much of the input is kept.
type state struct {
	group   int // the first history group kept: turns before starts[group] are out
	turnSum int // tokens of the kept turns, the question included
	kept    int // sources kept
	keptSum int // their tokens
}

// source is one Source rendered as it is sent.
type source struct {
	n         int    // its number in the prompt, from 1, as the model cites it
	label     string // for Dropped
	begin     string // its BEGIN line, newline included
	text      string // its text, valid UTF-8
	unit      string // begin + text + its END line: what is sent
	tokens    int    // tokens of unit, once counted
	kept      bool
	shortened bool
}

// newFitter renders the pieces of in and counts the small ones: the system
// prompt, the header and the question. Sources longer than maxBytes are cut
// to maxBytes before anything else: they cannot fit whole, and counting
// megabytes of a document only to cut it costs seconds.
func newFitter(ctx context.Context, c *tokens.Counter, in Input, maxBytes int) *fitter {
	f := &fitter{
		ctx:      ctx,
		c:        c,
		in:       in,
		reply:    c.Prompt(nil),
		sysFrame: c.Message(tokens.Message{Role: "system"}),
		sysAlone: c.Text(in.System),
		markers:  map[string]int{},
	}
	if in.System != "" {
		f.sysJoin = c.Text(in.System + sep)
	}
	if len(in.Sources) > 0 {
		f.header = c.Text(sourcesHeader)
	}
	f.sources = make([]source, len(in.Sources))
	for i, s := range in.Sources {
		f.sources[i] = render(i+1, s, maxBytes)
	}
	last := len(in.Messages) - 1
	f.turns = make([]int, len(in.Messages))
	f.turns[last] = c.MessageContext(ctx, in.Messages[last])
	for i, m := range in.Messages[:last] {
		// A group is a user turn with the replies that follow it, so that
		// dropping the oldest group never leaves a reply without its
		// question. History that opens with replies makes a group of its own.
		if i == 0 || m.Role == "user" {
			f.starts = append(f.starts, i)
		}
	}
	f.st = f.minimal()
	return f
}

// minimal is the state with every history turn and every source dropped.
func (f *fitter) minimal() state {
	return state{group: len(f.starts), turnSum: f.turns[len(f.turns)-1]}
}

// firstTurn is the index of the first message kept in st.
func (f *fitter) firstTurn(st state) int {
	if st.group >= len(f.starts) {
		return len(f.in.Messages) - 1
	}
	return f.starts[st.group]
}

// tokens returns the prompt tokens of the prompt in state st, from the
// counts of its pieces.
func (f *fitter) tokens(st state) int {
	rest := 0 // the pieces after the system prompt
	if st.kept > 0 {
		rest += f.header + st.keptSum
	}
	if d := len(f.sources) - st.kept; d > 0 {
		rest += f.marker(sourcesMarker(d))
	}
	if first := f.firstTurn(st); first > 0 {
		rest += f.marker(turnsMarker(first))
	}
	n := f.reply + st.turnSum
	switch {
	case rest > 0 && f.in.System != "":
		n += f.sysFrame + f.sysJoin + rest
	case rest > 0:
		n += f.sysFrame + rest
	case f.in.System != "":
		n += f.sysFrame + f.sysAlone
	}
	return n
}

// marker counts a marker once per distinct text.
func (f *fitter) marker(s string) int {
	n, ok := f.markers[s]
	if !ok {
		n = f.c.TextContext(f.ctx, s)
		f.markers[s] = n
	}
	return n
}

// fit grows the prompt from the minimal state, which fits maxPrompt, keeping
// the most it can. Dropping the least important first (the oldest turns,
// then the longest passages) until the rest fits keeps the same material
// (but for the odd token the numbers in the markers change) as adding it
// back in the opposite order while it fits: the shortest passages first, with
// no history, then, if every passage fits, the newest turns.
// Growing instead of trimming means that what is dropped is never counted:
// the work is bounded by the token limit, not by the size of the request.
func (f *fitter) fit(maxPrompt int) {
	// Shortest first; among equals, the more important (earlier) first.
	order := make([]int, len(f.sources))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(len(f.sources[a].text), len(f.sources[b].text))
	})
	for k := 0; k < len(order); {
		n, size := 1, len(f.sources[order[k]].unit)
		for k+n < len(order) && n < chunk && size+len(f.sources[order[k+n]].unit) <= chunkBytes {
			size += len(f.sources[order[k+n]].unit)
			n++
		}
		next := order[k : k+n]
		k += n
		f.countSources(next)
		if f.ctx.Err() != nil {
			return
		}
		for _, i := range next {
			st := f.st
			st.kept++
			st.keptSum += f.sources[i].tokens
			if over := f.tokens(st) - maxPrompt; over > 0 {
				// The rest of the passages are at least this long: none of
				// them fits, and no history fits either.
				f.shorten(i, over)
				return
			}
			f.sources[i].kept = true
			f.st = st
		}
	}
	for hi := len(f.starts); hi > 0; {
		lo, size := hi-1, f.size(hi-1)
		for lo > 0 && hi-lo < chunk && size+f.size(lo-1) <= chunkBytes {
			lo--
			size += f.size(lo)
		}
		f.countTurns(f.starts[lo], f.end(hi-1))
		if f.ctx.Err() != nil {
			return
		}
		for g := hi - 1; g >= lo; g-- {
			st := f.st
			st.group = g
			for _, t := range f.turns[f.starts[g]:f.end(g)] {
				st.turnSum += t
			}
			if f.tokens(st) > maxPrompt {
				return
			}
			f.st = st
		}
		hi = lo
	}
}

// end is the index just past history group g.
func (f *fitter) end(g int) int {
	if g+1 < len(f.starts) {
		return f.starts[g+1]
	}
	return len(f.in.Messages) - 1
}

// size is the bytes of the messages in history group g.
func (f *fitter) size(g int) int {
	n := 0
	for _, m := range f.in.Messages[f.starts[g]:f.end(g)] {
		n += len(m.Content)
	}
	return n
}

// fit counts passages or history groups a chunk at a time, in parallel: up
// to chunk of them while they add up to at most chunkBytes (and at least
// one). What it counts and then does not need is bounded by the chunk.
const (
	chunk      = 8
	chunkBytes = 64 << 10
)

// countSources counts the sources at the given indexes.
func (f *fitter) countSources(idx []int) {
	size := 0
	for _, i := range idx {
		size += len(f.sources[i].unit)
	}
	each(len(idx), size, func(j int) {
		s := &f.sources[idx[j]]
		s.tokens = f.c.TextContext(f.ctx, s.unit)
	})
}

// countTurns counts messages lo to hi-1.
func (f *fitter) countTurns(lo, hi int) {
	size := 0
	for _, m := range f.in.Messages[lo:hi] {
		size += len(m.Content)
	}
	each(hi-lo, size, func(j int) {
		f.turns[lo+j] = f.c.MessageContext(f.ctx, f.in.Messages[lo+j])
	})
}

// parallelBytes is the size of input from which each spreads its work over
// the processors; below it, goroutines cost more than they save: counting
// 16 KB takes a few milliseconds on one core.
const parallelBytes = 16 << 10

// each calls f(0) ... f(n-1), on up to GOMAXPROCS goroutines when size (the
// bytes the calls work on) is at least parallelBytes, and returns when all
// calls have returned.
func each(n, size int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if size < parallelBytes || workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// shorten keeps source i cut so that the prompt fits, when the prompt with
// it whole is over by over tokens and the cut keeps at least MinShortened
// tokens of its text; otherwise source i stays out.
func (f *fitter) shorten(i, over int) {
	s := &f.sources[i]
	target := s.tokens - over
	end := shortenedEnd(s.n)
	keep := target - f.c.TextContext(f.ctx, s.begin+end)
	if keep < MinShortened {
		return
	}
	// Encode only as much of the text as the cut can use, with room to
	// spare (twice the text's own bytes per token): encoding all of a 2 MB
	// document to keep its first pages costs as much as counting it.
	text := s.text
	if perToken := len(text)/max(s.tokens, 1) + 1; (keep+64)*perToken*2 < len(text) {
		text = prefix(text, (keep+64)*perToken*2)
	}
	ends := f.c.EndsContext(f.ctx, text)
	if keep >= len(ends) {
		return
	}
	// The prefix of a text cut at a token boundary usually counts as the
	// tokens before the cut, but not always (the cut and the marker change
	// how the edges merge), so count the result and cut deeper until it fits.
	for keep >= MinShortened {
		cut := ends[keep-1]
		unit := s.begin + prefix(s.text, cut) + end
		n := f.c.TextContext(f.ctx, unit)
		if n <= target {
			s.unit, s.tokens, s.shortened, s.kept = unit, n, true, true
			f.st.kept++
			f.st.keptSum += n
			return
		}
		keep -= n - target
	}
}

// result renders the prompt in the current state.
func (f *fitter) result() Result {
	var b strings.Builder
	rest := false
	if f.st.kept > 0 {
		b.WriteString(sourcesHeader)
		for _, s := range f.sources {
			if s.kept {
				b.WriteString(s.unit)
			}
		}
		rest = true
	}
	var d Dropped
	for _, s := range f.sources {
		switch {
		case !s.kept:
			d.Sources = append(d.Sources, s.label)
		case s.shortened:
			d.Shortened = append(d.Shortened, s.label)
		}
	}
	if n := len(d.Sources); n > 0 {
		b.WriteString(sourcesMarker(n))
		rest = true
	}
	first := f.firstTurn(f.st)
	if first > 0 {
		b.WriteString(turnsMarker(first))
		rest = true
	}
	d.Turns = first

	msgs := make([]tokens.Message, 0, 1+len(f.in.Messages)-first)
	switch {
	case rest && f.in.System != "":
		msgs = append(msgs, tokens.Message{Role: "system", Content: f.in.System + sep + b.String()})
	case rest:
		msgs = append(msgs, tokens.Message{Role: "system", Content: b.String()})
	case f.in.System != "":
		msgs = append(msgs, tokens.Message{Role: "system", Content: f.in.System})
	}
	msgs = append(msgs, f.in.Messages[first:]...)
	return Result{
		Messages:     msgs,
		PromptTokens: f.tokens(f.st),
		Truncated:    d.Turns > 0 || len(d.Sources) > 0 || len(d.Shortened) > 0,
		Dropped:      d,
	}
}
