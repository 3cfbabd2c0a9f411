package tokens

import "unicode/utf8"

// The split patterns (pre-tokenization) of tiktoken's encodings, as the
// regular expressions tiktoken and github.com/tiktoken-go/tokenizer write
// them:
//
//	o200k_base  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	            |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	            |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	cl100k_base (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Each is written here as a scanner that returns where the piece starting
// at i ends, trying the alternatives in the pattern's order and each one
// with the backtracking a regex engine would do, worked out ahead: a scan is
// one pass over the piece, so splitting is linear in the text. Some piece
// always matches at i (every character is a letter, a digit, white space or
// something else, and each has an alternative), so pieces tile the text.
// The input is valid UTF-8 (see valid). (?i:'s) also matches 'ſ (U+017F,
// whose upper case is S), as the regex engine's case folding has it.

// at returns the class and size of the character at s[i:], or size 0 at the
// end of s.
func at(s string, i int) (class, int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	// s is valid UTF-8, so the lead byte gives the length and the rest
	// needs no checking.
	switch b := s[i]; {
	case b < 0xE0:
		return classOf(rune(b&0x1F)<<6 | rune(s[i+1]&0x3F)), 2
	case b < 0xF0:
		return classOf(rune(b&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)), 3
	default:
		return classOf(rune(b&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)), 4
	}
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:],
// or 0.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D':
		return 2
	case 'r', 'R', 'v', 'V':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l', 'L':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	case 0xC5: // ſ is C5 BF
		if i+2 < len(s) && s[i+2] == 0xBF {
			return 3
		}
	}
	return 0
}

// notWordStart is [^\r\n\p{L}\p{N}], the optional character before a word.
const notWordStart = letter | number | newline

// punctuation reports [^\s\p{L}\p{N}].
func punctuation(c class) bool { return c&(space|letter|number) == 0 }

// splitO200k returns the end of o200k_base's piece at s[i:] (i < len(s)).
func splitO200k(s string, i int) int {
	c0, n0 := at(s, i)
	// The two word alternatives, each first with its optional leading
	// character, then without (a mark is both a leading character and a
	// word character).
	lead := c0&notWordStart == 0
	if lead {
		if e := o200kLowerWord(s, i+n0); e >= 0 {
			return e
		}
	}
	if c0&(upper|lower) != 0 {
		if e := o200kLowerWord(s, i); e >= 0 {
			return e
		}
	}
	if lead {
		if e := o200kUpperWord(s, i+n0); e >= 0 {
			return e
		}
	}
	if c0&upper != 0 {
		if e := o200kUpperWord(s, i); e >= 0 {
			return e
		}
	}
	if c0&number != 0 {
		return digits(s, i+n0)
	}
	if e := punctuationRun(s, i); e >= 0 {
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}
	return spaceRun(s, i)
}

// o200kLowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and the optional contraction at s[p:], returning its end or -1. The
// greedy upper run backs off to the last point a lower run can start: the
// character after it if that is lower case (the lower run then takes all it
// can), else the last character of the upper run that is also on the lower
// side (the lower run then takes just it).
func o200kLowerWord(s string, p int) int {
	lastLower := -1
	c, n := at(s, p)
	for c&upper != 0 {
		p += n
		if c&lower != 0 {
			lastLower = p
		}
		c, n = at(s, p)
	}
	var e int
	switch {
	case c&lower != 0:
		e = p
		for c&lower != 0 {
			e += n
			c, n = at(s, e)
		}
	case lastLower >= 0:
		e = lastLower
	default:
		return -1
	}
	return e + contraction(s, e)
}

// o200kUpperWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and the optional contraction at s[p:], returning its end or -1.
func o200kUpperWord(s string, p int) int {
	c, n := at(s, p)
	if c&upper == 0 {
		return -1
	}
	for c&upper != 0 {
		p += n
		c, n = at(s, p)
	}
	for c&lower != 0 {
		p += n
		c, n = at(s, p)
	}
	return p + contraction(s, p)
}

// splitCl100k returns the end of cl100k_base's piece at s[i:] (i < len(s)).
func splitCl100k(s string, i int) int {
	if k := contraction(s, i); k > 0 {
		return i + k
	}
	c0, n0 := at(s, i)
	if c0&notWordStart == 0 {
		if c, n := at(s, i+n0); c&letter != 0 {
			return letters(s, i+n0+n)
		}
	}
	if c0&letter != 0 {
		return letters(s, i+n0)
	}
	if c0&number != 0 {
		return digits(s, i+n0)
	}
	if e := punctuationRun(s, i); e >= 0 {
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	return spaceRun(s, i)
}

// letters returns the end of the run of letters from s[p:].
func letters(s string, p int) int {
	for {
		c, n := at(s, p)
		if c&letter == 0 {
			return p
		}
		p += n
	}
}

// digits returns the end of \p{N}{1,3} whose first digit ends at p.
func digits(s string, p int) int {
	for range 2 {
		c, n := at(s, p)
		if c&number == 0 {
			break
		}
		p += n
	}
	return p
}

// punctuationRun matches " ?[^\s\p{L}\p{N}]+" at s[i:] (the space taken
// atomically), returning its end or -1.
func punctuationRun(s string, i int) int {
	p := i
	if s[p] == ' ' {
		p++
	}
	c, n := at(s, p)
	if n == 0 || !punctuation(c) {
		return -1
	}
	for n > 0 && punctuation(c) {
		p += n
		c, n = at(s, p)
	}
	return p
}

// spaceRun matches \s*[\r\n]+|\s+(?!\S)|\s+ at s[i:], which is white space:
// the run up to its last line break if it has one; else all of it at the end
// of the text or when it is one character; else all but its last character,
// which goes with the word that follows.
func spaceRun(s string, i int) int {
	e, last, afterBreak := i, i, -1
	for {
		c, n := at(s, e)
		if c&space == 0 {
			break
		}
		last = e
		e += n
		if c&newline != 0 {
			afterBreak = e
		}
	}
	switch {
	case afterBreak >= 0:
		return afterBreak
	case e == len(s) || last == i:
		return e
	}
	return last
}
