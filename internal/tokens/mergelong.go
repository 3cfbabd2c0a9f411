package tokens

// A piece longer than maxMedium bytes is merged by rank: every candidate
// pair sits in the bucket of its rank, the lowest bucket is found through a
// two-level bitmap, and the parts' boundaries are a bitset, so a merge is a
// few word operations and the whole piece costs time and memory linear in
// its length.

import (
	"context"
	"math"
	"math/bits"
	"slices"
)

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
		id := c.byteID[piece[at]]
		if end-at > 1 {
			id = c.rank(piece, at, end, cache)
		}
		yield(id, end-at)
		at = end
	}
	return nil
}
