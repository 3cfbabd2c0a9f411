package tokens

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

// bpe is tiktoken's byte-pair encoding over one vocabulary: the text is
// split into pieces (split.go), and each piece that is not a token itself is
// merged into tokens (merge.go), the ids token for token tiktoken's (a test
// and a fuzz target compare the two). The vocabulary is a table embedded
// here and read in place (vocab.go).
type bpe struct {
	vocab vocabtable.Table
	// split returns the end of the piece that starts at s[i:].
	split func(s string, i int) int
	// byteID is the id of each single byte (every byte is a token).
	byteID [256]uint32
	// long holds the scratch of long merges, reused (merge.go).
	long sync.Pool
	// caches holds rankCaches, reused (merge.go).
	caches sync.Pool
	// merging returns the tables merges read, built at the first merge.
	merging func() *mergeTables
}

// mergeTables are what merging reads besides the vocabulary: the rank of
// every two bytes as one token (noRank if none), the lookups of a merge's
// first pass; and a filter of the longer tokens, which answers most lookups
// that miss (most do, in text unlike the vocabulary's: random bytes, rare
// scripts) from 256 KB rather than from the table's megabytes.
type mergeTables struct {
	pairs [1 << 16]uint32
	maybe filter
}

// filter is a bit set of token hashes: a string whose hash's bit is clear
// is no token (one whose bit is set may be one).
type filter [1 << 21 / 64]uint64

func (f *filter) add(h uint32) { f[h>>(32-21)/64] |= 1 << (h >> (32 - 21) % 64) }

func (f *filter) has(h uint32) bool { return f[h>>(32-21)/64]&(1<<(h>>(32-21)%64)) != 0 }

// longestToken is the length in bytes of the longest token of either
// encoding (a test checks it): no pair of parts longer than this can merge.
const longestToken = 128

// stopEvery is how many pieces each splits between checks of its context:
// a few hundred microseconds of work at most.
const stopEvery = 1024

// each calls yield with the id and byte length of every token of input, in
// order. Each byte of input that is not part of valid UTF-8 is encoded as
// U+FFFD, as the library's regex engine reads it (valid); the lengths are
// then those of the text so encoded. Once ctx ends, each stops and returns
// its error.
func (c *bpe) each(ctx context.Context, input string, yield func(id uint32, n int)) error {
	var cache *rankCache // taken at the first merge
	defer func() {
		if cache != nil {
			c.caches.Put(cache)
		}
	}()
	for i, pieces := 0, 0; i < len(input); pieces++ {
		if pieces%stopEvery == stopEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		end := c.split(input, i)
		piece := input[i:end]
		i = end
		if len(piece) == 1 {
			yield(c.byteID[piece[0]], 1)
			continue
		}
		if cache == nil {
			if cache, _ = c.caches.Get().(*rankCache); cache == nil {
				cache = &rankCache{tables: c.merging()}
			}
		}
		id, h := c.pieceRank(piece, cache)
		if id != noRank {
			yield(id, len(piece))
			continue
		}
		if err := c.merge(ctx, piece, h, cache, yield); err != nil {
			return err
		}
	}
	return nil
}

// valid returns s with each byte that is not part of valid UTF-8 replaced by
// U+FFFD, one for each such byte (how Go converts a string to runes, which is
// what the tokenizer library's regex engine splits), and whether s was valid
// (then it is returned as it is).
func valid(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	from := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString(s[from:i])
			b.WriteString(string(utf8.RuneError))
			from = i + 1
		}
		i += n
	}
	b.WriteString(s[from:])
	return b.String(), false
}

// inputOffsets maps each byte offset of valid(s) to the offset of s it
// comes from: a U+FFFD that stands for one byte maps to where that byte
// starts, and its end to where the byte ends.
func inputOffsets(s string) []int {
	var offsets []int
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			offsets = append(offsets, i, i, i)
		} else {
			for k := range n {
				offsets = append(offsets, i+k)
			}
		}
		i += n
	}
	return append(offsets, len(s))
}
