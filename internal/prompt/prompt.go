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
// smallest one it could send, so its work is bounded by the budget rather
// than by the size of the request.
package prompt

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

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

// maxBytesPerToken bounds the bytes of a source Fit counts, per token of
// budget: text beyond budget*maxBytesPerToken bytes is cut before counting.
// Prose, code and CJK run 1-5 bytes a token, so what is cut could never have
// fit; text that runs longer per token (long runs of spaces) is still cut
// correctly, only earlier than it had to be.
const maxBytesPerToken = 16

// maxLabel caps the runes of a title or URL in a source's BEGIN line, so that
// a hostile title cannot crowd out the passages.
const maxLabel = 200

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
// before Fit returns. Fit takes no context: it is bounded (about a budget's
// worth of text, at 2-7 MB/s a core) and does not block.
func Fit(c *tokens.Counter, in Input, lim Limits) (Result, error) {
	if len(in.Messages) == 0 {
		return Result{}, ErrNoQuestion
	}
	if lim.ContextWindow <= 0 || lim.MaxTokens < 0 || lim.TPM < 0 {
		return Result{}, fmt.Errorf("%w: context window %d, max tokens %d, tpm %d", ErrInvalidLimits, lim.ContextWindow, lim.MaxTokens, lim.TPM)
	}
	// The budget is known before anything is counted, and the smallest
	// prompt needs only the system prompt, the question and the markers: a
	// request that can never fit fails before its bulk is counted.
	budget := lim.ContextWindow - lim.MaxTokens
	if lim.TPM > 0 {
		budget = min(budget, lim.TPM-lim.MaxTokens)
	}
	f := newFitter(c, in, max(budget, 0)*maxBytesPerToken)
	minimal := f.tokens(f.minimal())
	question := f.turns[len(f.turns)-1] - c.Message(tokens.Message{Role: in.Messages[len(in.Messages)-1].Role})

	if ctxBudget := lim.ContextWindow - lim.MaxTokens; minimal > ctxBudget {
		return Result{}, &TooLargeError{Limit: LimitContextWindow, Tokens: minimal, Max: max(ctxBudget, 0), Question: question}
	}
	if lim.TPM > 0 && minimal+lim.MaxTokens > lim.TPM {
		return Result{}, &TooLargeError{Limit: LimitTPM, Tokens: minimal + lim.MaxTokens, Max: lim.TPM, Question: question}
	}
	f.fit(budget)
	return f.result(), nil
}

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
func newFitter(c *tokens.Counter, in Input, maxBytes int) *fitter {
	f := &fitter{
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
	f.turns[last] = c.Message(in.Messages[last])
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
		n = f.c.Text(s)
		f.markers[s] = n
	}
	return n
}

// fit grows the prompt from the minimal state, which fits budget, keeping
// the most it can. Dropping the least important first (the oldest turns,
// then the longest passages) until the rest fits keeps the same material
// (but for the odd token the numbers in the markers change) as adding it
// back in the opposite order while it fits: the shortest passages first, with
// no history, then, if every passage fits, the newest turns.
// Growing instead of trimming means that what is dropped is never counted:
// the work is bounded by the budget, not by the size of the request.
func (f *fitter) fit(budget int) {
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
		for _, i := range next {
			st := f.st
			st.kept++
			st.keptSum += f.sources[i].tokens
			if over := f.tokens(st) - budget; over > 0 {
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
		for g := hi - 1; g >= lo; g-- {
			st := f.st
			st.group = g
			for _, t := range f.turns[f.starts[g]:f.end(g)] {
				st.turnSum += t
			}
			if f.tokens(st) > budget {
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
		s.tokens = f.c.Text(s.unit)
	})
}

// countTurns counts messages lo to hi-1.
func (f *fitter) countTurns(lo, hi int) {
	size := 0
	for _, m := range f.in.Messages[lo:hi] {
		size += len(m.Content)
	}
	each(hi-lo, size, func(j int) {
		f.turns[lo+j] = f.c.Message(f.in.Messages[lo+j])
	})
}

// parallelBytes is the size of input from which each spreads its work over
// the processors; below it, goroutines cost more than they save. Counting
// runs at 2-7 MB/s on one core, so 16 KB is a few milliseconds.
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
	keep := target - f.c.Text(s.begin+end)
	if keep < MinShortened {
		return
	}
	codec, err := tokenizer.Get(tokenizer.Encoding(f.c.Encoding()))
	if err != nil {
		return // an encoding the tokenizer cannot cut: drop instead
	}
	// Encode only as much of the text as the cut can use, with room to
	// spare (twice the text's own bytes per token): encoding all of a 2 MB
	// document to keep its first pages costs as much as counting it.
	text := s.text
	if perToken := len(text)/max(s.tokens, 1) + 1; (keep+64)*perToken*2 < len(text) {
		text = prefix(text, (keep+64)*perToken*2)
	}
	_, toks, err := codec.Encode(text)
	if err != nil || keep >= len(toks) {
		return
	}
	// The prefix of a text cut at a token boundary usually counts as the
	// tokens before the cut, but not always (the cut and the marker change
	// how the edges merge), so count the result and cut deeper until it fits.
	for keep >= MinShortened {
		cut := 0
		for _, t := range toks[:keep] {
			cut += len(t)
		}
		unit := s.begin + prefix(s.text, cut) + end
		n := f.c.Text(unit)
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

// The text Fit adds to the system message. Every piece after the system
// prompt starts with a character that is not white space and ends with a
// newline: both tokenizers' pre-tokenization (the split regexps of
// cl100k_base and o200k_base) always splits there, so no token spans two
// pieces and the count of the whole is the sum of the counts of the pieces.
const (
	// sep separates the system prompt from what follows it.
	sep = "\n\n"
	// sourcesHeader opens the sources block.
	sourcesHeader = "Sources for this conversation follow, each between its BEGIN and END lines. Cite a source by its number, like [1].\n\n"
)

// render lays out source number n, cutting its text to maxBytes.
func render(n int, s Source, maxBytes int) source {
	kind := s.Kind
	if kind == "" {
		kind = KindSource
	}
	title, url := oneLine(s.Title), oneLine(s.URL)
	label := cmp.Or(title, url, "source "+strconv.Itoa(n))

	var b strings.Builder
	b.WriteString("--- BEGIN SOURCE ")
	b.WriteString(strconv.Itoa(n))
	b.WriteString(" (")
	b.WriteString(oneLine(kind))
	b.WriteString(")")
	switch {
	case title != "" && url != "":
		b.WriteString(": " + title + " <" + url + ">")
	case title != "":
		b.WriteString(": " + title)
	case url != "":
		b.WriteString(": <" + url + ">")
	}
	b.WriteString(" ---\n")
	begin := b.String()
	// Invalid UTF-8 would not survive JSON anyway; cleaning it here keeps
	// the cut in shorten on character boundaries.
	text := defuse(strings.ToValidUTF8(s.Text, "\uFFFD"))
	r := source{n: n, label: label, begin: begin, text: text, unit: begin + text + endLine(n)}
	if len(text) > maxBytes {
		r.text = prefix(text, maxBytes)
		r.unit = begin + r.text + shortenedEnd(n)
		r.shortened = true
	}
	return r
}

// delimiter matches what a passage could use to pass for the BEGIN or END
// line of a source: two or more dashes, then BEGIN or END SOURCE, in any case.
var delimiter = regexp.MustCompile(`(?i)-{2,}[ \t]*(?:begin|end)[ \t]+source`)

// defuse keeps a passage from closing its own source and opening text the
// model would take for something else (a fetched page is anyone's text): a
// dash run before BEGIN/END SOURCE becomes one dash, which no delimiter has.
func defuse(text string) string {
	if !strings.Contains(text, "--") {
		return text
	}
	return delimiter.ReplaceAllStringFunc(text, func(m string) string {
		return "- " + strings.TrimLeft(m, "- \t")
	})
}

// endLine closes source number n. The blank line after it keeps the next
// piece, which starts with "-" or "[", on a fresh pre-token.
func endLine(n int) string {
	return "\n--- END SOURCE " + strconv.Itoa(n) + " ---\n\n"
}

// shortenedEnd follows the text of source n where it was cut.
func shortenedEnd(n int) string {
	return "\n[... passage shortened to fit the context window ...]" + endLine(n)
}

// sourcesMarker stands for n sources left out.
func sourcesMarker(n int) string {
	if n == 1 {
		return "[... 1 passage omitted to fit the context window ...]\n\n"
	}
	return "[... " + strconv.Itoa(n) + " passages omitted to fit the context window ...]\n\n"
}

// turnsMarker stands for n earlier messages left out; it ends the system
// message, just before the turns that are kept.
func turnsMarker(n int) string {
	if n == 1 {
		return "[... 1 earlier turn omitted to fit the context window ...]\n"
	}
	return "[... " + strconv.Itoa(n) + " earlier turns omitted to fit the context window ...]\n"
}

// prefix returns the longest prefix of s of at most n bytes that does not
// end inside a character (a token may hold part of one).
func prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// oneLine flattens s to one trimmed line of at most maxLabel runes, valid
// UTF-8.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxLabel {
		s = string([]rune(s)[:maxLabel]) + "..."
	}
	return s
}
