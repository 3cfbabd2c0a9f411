package tokens

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

// Byte-pair merging as tiktoken does it: a piece starts as its bytes, and
// the adjacent pair of parts whose concatenation is the token of lowest rank
// (its id), the leftmost of equals, merges, until no pair is a token. The
// parts left are the piece's tokens.
//
// A short piece (the usual case: a word that is not one token) is merged by
// tiktoken's own loop, a scan of the parts for each merge, on the stack. A
// long one (a run of one letter, of spaces, a line of base64) is merged by
// rank: every candidate pair sits in a bucket for its rank, the buckets are
// taken lowest first, each in order of position, and a merge adds the new
// pairs it makes on either side. That is the same order as the scan's, so
// the same tokens, in time and memory linear in the piece's length (but for
// sorting a bucket whose pairs came in out of order, which repeated text,
// the costly case, does not do).

// noRank marks a pair that is no token.
const noRank = math.MaxUint32

// maxShort is the longest piece merged by scanning: its parts fit on the
// stack, and a scan of them costs less than the buckets' bookkeeping.
const maxShort = 40

// merge calls yield with the id and length of each token of piece, which is
// not a token itself; h is its hash (pieceRank's).
func (c *bpe) merge(ctx context.Context, piece string, h uint32, cache *rankCache, yield func(id uint32, n int)) error {
	if len(piece) > maxShort {
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
	}
	parts := c.mergeShort(piece, cache)
	for i := range len(parts) - 1 {
		yield(parts[i].id, int(parts[i+1].at-parts[i].at))
	}
	if e != nil && len(parts)-1 <= len(e.ids) {
		e.n, e.count = uint8(copy(e.key[:], piece)), uint8(len(parts)-1)
		for i := range len(parts) - 1 {
			e.ids[i], e.lens[i] = parts[i].id, uint8(parts[i+1].at-parts[i].at)
		}
	}
	return nil
}

// rank returns the rank of piece[from:to] as one token, or noRank.
func (c *bpe) rank(piece string, from, to int, cache *rankCache) uint32 {
	n := to - from
	switch {
	case n == 2:
		return c.pairs()[uint16(piece[from])<<8|uint16(piece[from+1])]
	case n > longestToken:
		return noRank
	}
	s := piece[from:to]
	return c.cached(s, vocabtable.Hash(s), cache)
}

// pieceRank returns the rank of piece as one token, or noRank: rank's
// lookup, through the cache (words come back) but without the table of
// pairs, which only merging builds.
func (c *bpe) pieceRank(piece string, cache *rankCache) (rank, hash uint32) {
	if len(piece) > longestToken {
		return noRank, 0
	}
	h := vocabtable.Hash(piece)
	return c.cached(piece, h, cache), h
}

// cached is the rank of s, whose hash is h, through the cache.
func (c *bpe) cached(s string, h uint32, cache *rankCache) uint32 {
	if len(s) > len(rankCacheEntry{}.key) {
		return c.lookup(s, h)
	}
	e := &cache.ranks[h%uint32(len(cache.ranks))]
	if int(e.n) == len(s) && string(e.key[:len(s)]) == s {
		return e.rank
	}
	e.n, e.rank = uint8(copy(e.key[:], s)), c.lookup(s, h)
	return e.rank
}

func (c *bpe) lookup(s string, h uint32) uint32 {
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
	ranks  [4096]rankCacheEntry
	pieces [1024]pieceEntry
	// parts is mergeShort's scratch.
	parts [maxShort + 1]shortPart
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

// shortPart is a part of a short piece: where it starts, its id, and the
// rank of it merged with the next part.
type shortPart struct {
	at, id, rank uint32
}

// mergeShort is tiktoken's merge loop over a piece of at most maxShort
// bytes. It returns the parts (in cache's scratch): each token's id and
// start, and the end.
func (c *bpe) mergeShort(piece string, cache *rankCache) []shortPart {
	parts := cache.parts[:len(piece)+1]
	for i := range len(piece) {
		parts[i] = shortPart{at: uint32(i), id: c.byteID[piece[i]], rank: noRank}
	}
	parts[len(piece)] = shortPart{at: uint32(len(piece)), rank: noRank}
	pairRank := func(i int) uint32 {
		if i+2 >= len(parts) {
			return noRank
		}
		return c.rank(piece, int(parts[i].at), int(parts[i+2].at), cache)
	}
	for i := range len(parts) - 2 {
		parts[i].rank = pairRank(i)
	}
	for {
		best, at := uint32(noRank), -1
		for i, p := range parts[:len(parts)-1] {
			if p.rank < best {
				best, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].id = best
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = pairRank(at)
		if at > 0 {
			parts[at-1].rank = pairRank(at - 1)
		}
	}
	return parts
}

// maxRanks bounds the ids of a vocabulary merged by rank (newBPE checks it):
// the buckets' index is a two-level bitmap of this many bits.
const maxRanks = 1 << 18

// mergeEvery is how many merges of a long piece run between checks of the
// context: well under a millisecond.
const mergeEvery = 1 << 14

// bucketEntry is a candidate pair in a bucket's list: the start of its left
// part, and the next entry (an index into entries, plus one; 0 ends the list).
type bucketEntry struct {
	at, next int32
}

// buckets is the scratch of a long merge, reused between pieces (a
// sync.Pool in bpe): the lists of candidate pairs by rank and the index of
// the ranks that have one. Between uses every list is empty and the index
// clear.
type buckets struct {
	head    []int32 // per rank: its first entry (index+1), 0 if none
	ranks   [maxRanks / 64]uint64
	summary [maxRanks / 64 / 64]uint64
	entries []bucketEntry
	free    int32 // a list of unused entries, as head
	low     int   // no summary word below this one has a bit set
	taken   []int32
	bounds  []uint64
}

func (b *buckets) add(rank uint32, at int) {
	e := b.free
	if e != 0 {
		b.free = b.entries[e-1].next
	} else {
		b.entries = append(b.entries, bucketEntry{})
		e = int32(len(b.entries))
	}
	b.entries[e-1] = bucketEntry{at: int32(at), next: b.head[rank]}
	b.head[rank] = e
	b.ranks[rank/64] |= 1 << (rank % 64)
	b.summary[rank/4096] |= 1 << (rank / 64 % 64)
	b.low = min(b.low, int(rank/4096))
}

// lowest returns the lowest rank with a list, or false if none has.
func (b *buckets) lowest() (uint32, bool) {
	for i := b.low; i < len(b.summary); i++ {
		if s := b.summary[i]; s != 0 {
			b.low = i
			w := i*64 + bits.TrailingZeros64(s)
			return uint32(w*64 + bits.TrailingZeros64(b.ranks[w])), true
		}
	}
	b.low = len(b.summary)
	return 0, false
}

// take empties rank's list into b.taken, in order of position.
func (b *buckets) take(rank uint32) {
	b.taken = b.taken[:0]
	for e := b.head[rank]; e != 0; {
		entry := &b.entries[e-1]
		b.taken = append(b.taken, entry.at)
		next := entry.next
		entry.next = b.free
		b.free = e
		e = next
	}
	b.head[rank] = 0
	if b.ranks[rank/64] &^= 1 << (rank % 64); b.ranks[rank/64] == 0 {
		b.summary[rank/4096] &^= 1 << (rank / 64 % 64)
	}
	// Lists are last in, first out, and pairs mostly come in left to right.
	switch {
	case slices.IsSorted(b.taken):
	case isDescending(b.taken):
		slices.Reverse(b.taken)
	default:
		slices.Sort(b.taken)
	}
}

func isDescending(s []int32) bool {
	for i := 1; i < len(s); i++ {
		if s[i] > s[i-1] {
			return false
		}
	}
	return true
}

// clear empties every list, for a merge stopped before its end.
func (b *buckets) clear() {
	for {
		rank, ok := b.lowest()
		if !ok {
			break
		}
		b.take(rank)
	}
	b.reset()
}

// keepScratch bounds the entries a pooled buckets keeps between merges: a
// piece of megabytes does not leave its megabytes of entries behind.
const keepScratch = 1 << 16

// reset drops the entries, every list being empty.
func (b *buckets) reset() {
	b.entries, b.free = b.entries[:0], 0
	if cap(b.entries) > keepScratch {
		b.entries, b.taken, b.bounds = nil, nil, nil
	}
}

// boundaries is a bit set of the positions where a part starts, with the
// end of the piece set too.
type boundaries []uint64

func (s boundaries) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s boundaries) unset(i int)    { s[i/64] &^= 1 << (i % 64) }

// after returns the first boundary after i (i is before the end).
func (s boundaries) after(i int) int {
	i++
	w := i / 64
	if x := s[w] >> (i % 64); x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; s[w] == 0; w++ {
	}
	return w*64 + bits.TrailingZeros64(s[w])
}

// before returns the last boundary before i (i > 0).
func (s boundaries) before(i int) int {
	i--
	w := i / 64
	if x := s[w] << (63 - i%64); x != 0 {
		return i - bits.LeadingZeros64(x)
	}
	for w--; s[w] == 0; w-- {
	}
	return w*64 + 63 - bits.LeadingZeros64(s[w])
}

// mergeLong merges a piece of any length by rank (see the top of this file).
func (c *bpe) mergeLong(ctx context.Context, piece string, cache *rankCache, yield func(id uint32, n int)) error {
	b, _ := c.long.Get().(*buckets)
	if b == nil {
		b = &buckets{head: make([]int32, c.vocab.Len())}
	}
	defer c.long.Put(b)
	n := len(piece)
	// At most one candidate a byte at first; each merge frees one entry
	// (its own) and adds at most two.
	b.entries = slices.Grow(b.entries[:0], n)
	b.taken = slices.Grow(b.taken[:0], n)
	b.bounds = slices.Grow(b.bounds[:0], n/64+1)[:n/64+1]
	clear(b.bounds)
	bounds := boundaries(b.bounds)
	for w := range bounds {
		bounds[w] = math.MaxUint64
	}
	bounds[n/64] &= 1<<(n%64+1) - 1 // nothing past the end
	for i := 0; i+2 <= n; i++ {
		if r := c.rank(piece, i, i+2, cache); r != noRank {
			b.add(r, i)
		}
	}
	merges := 0
	for {
		rank, ok := b.lowest()
		if !ok {
			break
		}
		b.take(rank)
		size := len(c.vocab.Token(int(rank)))
		for k, at := range b.taken {
			// A pair is current while its left part starts here and the
			// two parts still span its token: parts only grow.
			if !bounds.has(int(at)) {
				continue
			}
			mid := bounds.after(int(at))
			if mid == n || bounds.after(mid)-int(at) != size {
				continue
			}
			end := int(at) + size
			bounds.unset(mid)
			// The pairs the merged part makes with its neighbours. A rank at
			// or below this one (none, in a vocabulary built by merging)
			// must merge before the rest of the bucket: put the rest back
			// and start again from the lowest rank.
			again := false
			if end < n {
				if r := c.rank(piece, int(at), bounds.after(end), cache); r != noRank {
					b.add(r, int(at))
					again = again || r <= rank
				}
			}
			if at > 0 {
				prev := bounds.before(int(at))
				if r := c.rank(piece, prev, end, cache); r != noRank {
					b.add(r, prev)
					again = again || r <= rank
				}
			}
			if merges++; merges%mergeEvery == 0 {
				if err := ctx.Err(); err != nil {
					b.clear()
					return err
				}
			}
			if again {
				for _, rest := range b.taken[k+1:] {
					b.add(rank, int(rest))
				}
				break
			}
		}
	}
	b.reset()
	for at := 0; at < n; {
		end := bounds.after(at)
		id, _ := c.vocab.Lookup(piece[at:end])
		yield(id, end-at)
		at = end
	}
	return nil
}
