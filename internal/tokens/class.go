package tokens

import (
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// class is what the split patterns ask of a character, as bits: the
// patterns' character sets are unions and complements of these.
type class uint8

const (
	letter  class = 1 << iota // \p{L}
	number                    // \p{N}
	space                     // \s (unicode.IsSpace, as the regex engine has it)
	newline                   // \r or \n
	upper                     // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k_base's "cased or uncased, upper" side)
	lower                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (its "lower" side)
)

// classify computes the class of r from Go's unicode tables, the ones the
// regex engine the patterns were written for reads. A mark (\p{M}) is in both
// case sides but is not a letter; Lm and Lo are letters on both sides.
func classify(r rune) class {
	switch {
	case unicode.IsLetter(r):
		switch {
		case unicode.IsLower(r):
			return letter | lower
		case unicode.IsUpper(r), unicode.Is(unicode.Lt, r):
			return letter | upper
		default: // Lm, Lo
			return letter | upper | lower
		}
	case unicode.IsMark(r):
		return upper | lower
	case unicode.IsNumber(r):
		return number
	case r == '\r' || r == '\n':
		return space | newline
	case unicode.IsSpace(r):
		return space
	}
	return 0
}

// asciiClass is classify over ASCII, the common case, read without a call.
var asciiClass = func() (t [utf8.RuneSelf]class) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = classify(r)
	}
	return t
}()

// bmpPages caches classify over the Basic Multilingual Plane a page of 256
// characters at a time, each page computed at its first use (a few
// microseconds) so that a process pays only for the scripts it meets. A page
// is computed whole before it is published, so readers never see half of it.
var bmpPages [256]atomic.Pointer[[256]class]

// classOf returns the class of r.
func classOf(r rune) class {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	if r > 0xFFFF {
		return classify(r)
	}
	page := bmpPages[r>>8].Load()
	if page == nil {
		page = new([256]class)
		base := r &^ 0xFF
		for i := range page {
			page[i] = classify(base + rune(i))
		}
		bmpPages[r>>8].Store(page)
	}
	return page[r&0xFF]
}
