package aoaitest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/timebox-dev/timebox/internal/tokens"
)

// This file holds answer synthesis: what the simulated model says to a
// question, cut into tokens as the deployment's tokenizer cuts it.

// piece is one streamed delta: whole tokens that together are valid UTF-8.
type piece struct {
	text   string
	tokens int
}

// answer is a completion cut into tokens.
type answer struct {
	pieces []piece
	tokens int
	finish string // "stop", "length", "content_filter" or "tool_calls"
	// call, when set, makes the answer a call of this tool, its pieces
	// the call's arguments.
	call *toolCall
}

// filtered returns the answer as the output filter leaves it: cut after
// half its pieces, finish_reason "content_filter".
func (a answer) filtered() answer {
	return a.filteredAt(len(a.pieces[:min(len(a.pieces), max(1, len(a.pieces)/2))]))
}

// filteredAfter is filtered, cut after at most n tokens instead of half.
func (a answer) filteredAfter(n int) answer {
	keep, sum := 0, 0
	for keep < len(a.pieces) && sum+a.pieces[keep].tokens <= n {
		sum += a.pieces[keep].tokens
		keep++
	}
	return a.filteredAt(keep)
}

// filteredAt keeps the first keep pieces, finish_reason "content_filter".
func (a answer) filteredAt(keep int) answer {
	a.pieces = a.pieces[:keep]
	a.tokens = 0
	for _, p := range a.pieces {
		a.tokens += p.tokens
	}
	a.finish = "content_filter"
	return a
}

// results are the content_filter_results of piece i: the last piece of a
// filtered answer is the one that tripped the filter.
func (a answer) results(i int) filterResults {
	r := safeResults()
	if a.finish == "content_filter" && i == len(a.pieces)-1 {
		r.Violence = filterResult{Filtered: true, Severity: "medium"}
	}
	return r
}

func (a answer) text() string {
	var b strings.Builder
	for _, p := range a.pieces {
		b.WriteString(p.text)
	}
	return b.String()
}

// newAnswer cuts text into the tokens c counts and keeps at most limit of
// them (0: no limit), finishing "length" when it had to cut.
func newAnswer(c *tokens.Counter, text string, limit int) answer {
	var toks []string
	at := 0
	for _, end := range c.Ends(text) {
		toks, at = append(toks, text[at:end]), end
	}
	if at < len(text) {
		toks = append(toks, text[at:]) // Ends failed: the rest as one token
	}
	a := answer{finish: "stop"}
	if limit > 0 && len(toks) > limit {
		toks, a.finish = toks[:limit], "length"
	}
	a.tokens = len(toks)
	// Tokens are byte-level: merge until the text is valid UTF-8, as Azure
	// does before it sends a delta.
	var cur piece
	for _, t := range toks {
		cur.text += t
		cur.tokens++
		if utf8.ValidString(cur.text) {
			a.pieces = append(a.pieces, cur)
			cur = piece{}
		}
	}
	if cur.tokens > 0 {
		a.pieces = append(a.pieces, piece{text: strings.ToValidUTF8(cur.text, ""), tokens: cur.tokens})
	}
	return a
}

// lastUserText returns the last user message without directives.
func lastUserText(msgs []message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return stripDirectives(string(msgs[i].Content))
		}
	}
	return ""
}

var directiveRE = regexp.MustCompile(`\[\[sim:[^\]]*\]\]`)

func stripDirectives(s string) string {
	return strings.TrimSpace(directiveRE.ReplaceAllString(s, ""))
}

var countRE = regexp.MustCompile(`(?i)\bcount to (\d{1,4})\b`)

// maxCount caps the "count to N" answer.
const maxCount = 1000

// answerText is the simulator's deterministic answer: "1, 2, ..., N." for a
// "count to N" prompt (the recordings' prompt), else one short paragraph
// naming the model and quoting the first words of the question.
func answerText(question, model string) string {
	if m := countRE.FindStringSubmatch(question); m != nil {
		n, _ := strconv.Atoi(m[1])
		n = min(max(n, 1), maxCount)
		nums := make([]string, n)
		for i := range nums {
			nums[i] = strconv.Itoa(i + 1)
		}
		return strings.Join(nums, ", ") + "."
	}
	words := strings.Fields(question)
	if len(words) == 0 {
		return fmt.Sprintf("Hello! This is the Azure OpenAI simulator answering as %s. Ask me anything.", model)
	}
	const quoted = 8
	topic := strings.Join(words[:min(len(words), quoted)], " ")
	if len(words) > quoted {
		topic += " ..."
	}
	return fmt.Sprintf("This is the Azure OpenAI simulator answering as %s. You asked: \"%s\" A real deployment would answer here; the simulator gives a short, deterministic reply so that tests and demos can rely on it.", model, topic)
}
