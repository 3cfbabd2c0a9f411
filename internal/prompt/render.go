package prompt

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file holds the text of the prompt: how a source, its shortened end
// and the markers of what was cut are laid out, and how a source's text is
// kept from imitating those lines.

// maxLabel caps the runes of a title or URL in a source's BEGIN line, so that
// a hostile title cannot crowd out the passages.
const maxLabel = 200

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
// It is compiled on first use: package init runs at every start of the
// handler, whether or not it ever fits a prompt with sources.
var delimiter = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)-{2,}[ \t]*(?:begin|end)[ \t]+source`)
})

// defuse keeps a passage from closing its own source and opening text the
// model would take for something else (a fetched page is anyone's text): a
// dash run before BEGIN/END SOURCE becomes one dash, which no delimiter has.
func defuse(text string) string {
	if !strings.Contains(text, "--") {
		return text
	}
	return delimiter().ReplaceAllStringFunc(text, func(m string) string {
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
