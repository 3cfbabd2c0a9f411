package tokens

import (
	"context"
	"math"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

// Byte-pair merging as tiktoken does it: a piece starts as its bytes, and
// the adjacent pair of parts whose concatenation is the token of lowest rank
// (its id), the leftmost of equals, merges, until no pair is a token. The
// parts left are the piece's tokens.
//
// A piece of up to maxMedium bytes (the usual case: a word that is not one
// token, a run of Japanese between two punctuation marks) is merged by
// tiktoken's loop with the lowest pair kept at the root of a tournament tree
// over the piece's positions, so that a merge costs a few steps up the tree
// rather than a scan of the parts. A longer one (a run of one letter, of
// spaces, a line of base64) is merged by rank: every candidate pair sits in
// a bucket for its rank, the buckets are taken lowest first, each in order
// of position, and a merge adds the new pairs it makes on either side. That
// is the same order as the scan's, so the same tokens, in time and memory
// linear in the piece's length (but for sorting a bucket whose pairs came in
// out of order, which repeated text, the costly case, does not do).

// noRank marks a pair that is no token.
const noRank = math.MaxUint32

// merge calls yield with the id and length of each token of piece, which is
// not a token itself; h is its hash (pieceRank's).
func (c *bpe) merge(ctx context.Context, piece string, h uint32, cache *rankCache, yield func(id uint32, n int)) error {
	if len(piece) > maxMedium {
		return c.mergeLong(ctx, piece, cache, yield)
	}
	var e *pieceEntry
	if len(piece) <= len(pieceEntry{}.key) {
		e = &cache.pieces[h%uint32(len(cache.pieces))]
		if int(e.n) == len(piece) && string(e.key[:len(piece)]) == piece {
			for i := range e.count {
				yield(e.ids[i], int(e.lens[i]))
			}
			return nil
		}
		e.n, e.count = 0, 0
	}
	m := c.mergeMedium(piece, cache)
	for at := 0; at < len(piece); at = int(m.next[at]) {
		n := int(m.next[at]) - at
		yield(m.id[at], n)
		if e != nil {
			if int(e.count) == len(e.ids) {
				e = nil // too many tokens to remember
				continue
			}
			e.ids[e.count], e.lens[e.count] = m.id[at], uint8(n)
			e.count++
		}
	}
	if e != nil {
		e.n = uint8(copy(e.key[:], piece))
	}
	return nil
}

// rank returns the rank of piece[from:to] as one token, or noRank.
func (c *bpe) rank(piece string, from, to int, cache *rankCache) uint32 {
	n := to - from
	switch {
	case n == 2:
		return cache.tables.pairs[uint16(piece[from])<<8|uint16(piece[from+1])]
	case n <= 8:
		return c.cachedWord(piece, from, n, cache)
	case n > longestToken:
		return noRank
	}
	s := piece[from:to]
	return c.cached(s, vocabtable.Hash(s), cache)
}

// pieceRank returns the rank of piece as one token, or noRank, and the
// hash of a piece that is none (merge's cache of pieces is keyed by it):
// rank's lookup, through the cache, as words come back.
func (c *bpe) pieceRank(piece string, cache *rankCache) (rank, hash uint32) {
	if len(piece) > longestToken {
		return noRank, 0
	}
	if len(piece) <= 8 {
		if r := c.rank(piece, 0, len(piece), cache); r != noRank {
			return r, 0
		}
		return noRank, vocabtable.Hash(piece)
	}
	h := vocabtable.Hash(piece)
	return c.cached(piece, h, cache), h
}

// cached is the rank of s, whose hash is h, through the cache.
func (c *bpe) cached(s string, h uint32, cache *rankCache) uint32 {
	if len(s) > len(rankCacheEntry{}.key) {
		return c.lookup(s, h, cache)
	}
	e := &cache.ranks[h%uint32(len(cache.ranks))]
	if int(e.n) == len(s) && string(e.key[:len(s)]) == s {
		return e.rank
	}
	e.n, e.rank = uint8(copy(e.key[:], s)), c.lookup(s, h, cache)
	return e.rank
}

// cachedWord is the rank of piece[from:from+n], 3 to 8 bytes, through the
// cache's slots of short keys: a key of at most eight bytes is one word, so
// its slot is found and compared without hashing the bytes or comparing
// strings, which is most of a lookup that hits.
func (c *bpe) cachedWord(piece string, from, n int, cache *rankCache) uint32 {
	var w uint64
	if from+8 <= len(piece) {
		b := piece[from : from+8]
		w = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		w &= 1<<(8*n) - 1 // 0 - 1 for n = 8: all of it
	} else {
		for i := range n {
			w |= uint64(piece[from+i]) << (8 * i)
		}
	}
	// The length goes into the key so that a key ending in zero bytes is
	// not another one's.
	key := w ^ uint64(n)<<61
	if n == 8 {
		key = w
	}
	e := &cache.words[(key*0x9E3779B97F4A7C15)>>(64-wordSlotBits)]
	if e.key == key && e.n == uint32(n) {
		return e.rank
	}
	s := piece[from : from+n]
	e.key, e.n, e.rank = key, uint32(n), c.lookup(s, vocabtable.Hash(s), cache)
	return e.rank
}

// lookup is the rank of s, whose hash is h, in the vocabulary, past the
// filter of tokens longer than two bytes.
func (c *bpe) lookup(s string, h uint32, cache *rankCache) uint32 {
	if len(s) > 2 && !cache.tables.maybe.has(h) {
		return noRank
	}
	if id, ok := c.vocab.LookupHashed(s, h); ok {
		return id
	}
	return noRank
}

// rankCache remembers the ranks of the short substrings merges looked up
// last, a slot per hash: merging asks for the same pairs again and again
// (the same syllables, characters, letters), and a lookup in the
// vocabulary's table of megabytes is a few cache misses where this is one.
// It remembers the tokens of the short pieces merged last too, as texts
// repeat their words. What a slot holds is true of the vocabulary, whatever
// text asked, so caches are reused between counts (a sync.Pool in bpe) as
// they are.
type rankCache struct {
	// tables is the codec's merging tables, taken once for the cache's life.
	tables *mergeTables
	words  [1 << wordSlotBits]wordEntry
	ranks  [4096]rankCacheEntry
	pieces [1024]pieceEntry
	// medium is mergeMedium's scratch.
	medium medium
}

// wordSlotBits is log2 of the slots for keys of at most eight bytes.
const wordSlotBits = 12

// wordEntry is a key of at most eight bytes, as a little-endian word, its
// length (0 in an empty slot) and its rank.
type wordEntry struct {
	key     uint64
	n, rank uint32
}

type rankCacheEntry struct {
	key  [15]byte
	n    uint8 // the key's length; 0 in an empty slot (no key is empty)
	rank uint32
}

// pieceEntry is a short piece and its tokens, if it has at most eight.
type pieceEntry struct {
	key   [31]byte
	n     uint8 // the key's length; 0 in an empty slot
	count uint8
	lens  [8]uint8
	ids   [8]uint32
}

// maxMedium is the longest piece merged through a tournament tree (below);
// longer ones are merged by rank buckets, whose memory is the piece's.
const maxMedium = 256

// medium is mergeMedium's scratch: a tournament tree over the piece's
// positions, whose leaf at a part's start holds the rank of that part merged
// with the next one (above it, its position, so the lowest leaf is the
// leftmost of the lowest rank) and whose every other node the lower of its
// two children; and for each part its id and the starts of its neighbours.
type medium struct {
	tree       [2 * maxMedium]uint64
	id         [maxMedium]uint32
	next, prev [maxMedium + 1]uint16
}

// mergeMedium is tiktoken's merge loop over a piece of 2 to maxMedium bytes,
// the lowest pair the root of a tournament tree rather than found by
// scanning: a merge updates three leaves and their paths up to where nothing
// changes. It returns its scratch, where the piece's tokens start at 0 and
// m.next of each, each with its id in m.id.
func (c *bpe) mergeMedium(piece string, cache *rankCache) *medium {
	m := &cache.medium
	n := len(piece)
	size := 1
	for size < n {
		size *= 2
	}
	tree := m.tree[:2*size]
	const none = math.MaxUint64
	leaf := func(at, end int) uint64 {
		if end >= n {
			return none
		}
		r := c.rank(piece, at, int(m.next[end]), cache)
		if r == noRank {
			return none
		}
		return uint64(r)<<32 | uint64(at)
	}
	// update sets a leaf and its path up to the first node it leaves as it was.
	update := func(at int, v uint64) {
		t := &m.tree
		j := (size + at) & (len(t) - 1)
		t[j] = v
		for j > 1 {
			j /= 2
			low := min(t[2*j&(len(t)-1)], t[(2*j+1)&(len(t)-1)])
			if t[j] == low {
				return
			}
			t[j] = low
		}
	}
	for i := range n {
		m.id[i] = c.byteID[piece[i]]
		m.next[i], m.prev[i] = uint16(i+1), uint16(i-1)
	}
	for i := range n {
		tree[size+i] = leaf(i, i+1)
	}
	for i := n; i < size; i++ {
		tree[size+i] = none
	}
	for j := size - 1; j >= 1; j-- {
		tree[j] = min(tree[2*j], tree[2*j+1])
	}
	for tree[1] != none {
		at := int(uint32(tree[1]))
		m.id[at] = uint32(tree[1] >> 32)
		mid := int(m.next[at])
		end := int(m.next[mid])
		m.next[at] = uint16(end)
		if end < n {
			m.prev[end] = uint16(at)
		}
		update(mid, none)
		update(at, leaf(at, end))
		if at > 0 {
			prev := int(m.prev[at])
			update(prev, leaf(prev, at))
		}
	}
	return m
}
