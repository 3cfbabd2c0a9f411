package tokens

import (
	"context"
	"math"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	// The tokenizer's package registers code-generated engines for the
	// split patterns below with regexp2, so compiling the same patterns here
	// gets them (several times faster than regexp2's interpreter). Its
	// vocabularies are not linked: nothing here calls its constructors.
	_ "github.com/tiktoken-go/tokenizer/codec"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

// The split patterns of tiktoken's encodings, exactly as
// github.com/tiktoken-go/tokenizer/codec writes them (the engines are
// registered under these strings).
const (
	o200kSplit  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kSplit = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// bpe is tiktoken's byte-pair encoding over one vocabulary. The algorithm is
// github.com/tiktoken-go/tokenizer/codec's (v0.10.0, MIT licence), kept
// as it is there so that counts agree token for token (a test compares the
// two); what differs is where the vocabulary comes from: a table embedded
// here and read in place (vocab.go), which the binary carries in 5.3 MB
// where the library's Go map literals took 8.5 MB and, once built, 17-19 MB
// of heap.
type bpe struct {
	vocab vocabtable.Table
	split *regexp2.Regexp
}

// each calls yield with the byte length of every token of input, in order.
// Invalid UTF-8 is tokenized as the library does (ErrorModeNone).
// ctx is checked every stopEvery pieces: once it ends, each stops and
// returns its error.
func (c *bpe) each(ctx context.Context, input string, yield func(n int)) error {
	for len(input) > 0 {
		seg := segment(input)
		if err := c.eachIn(ctx, input[:seg], yield); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		input = input[seg:]
	}
	return nil
}

// maxSegment bounds the input the split expression sees at once: a run of
// letters with no space (a hostile document's "word" of megabytes) is one
// match, and regexp2 cannot be stopped inside a match (1 MiB took 0.75 s).
const maxSegment = 64 << 10

// segment returns how much of input to split at once: all of it when it is
// short; else up to maxSegment, cut before a space that follows a non-space
// (where the split starts a new piece anyway, so the count is Azure's), or,
// in a run with no such place, at a character boundary.
func segment(input string) int {
	if len(input) <= maxSegment {
		return len(input)
	}
	for i := maxSegment; i > maxSegment/2; i-- {
		if input[i] == ' ' && input[i-1] != ' ' && input[i-1] != '\n' {
			return i
		}
	}
	i := maxSegment
	for i > 0 && !utf8.RuneStart(input[i]) {
		i--
	}
	return i
}

// eachIn is each over one segment.
func (c *bpe) eachIn(ctx context.Context, input string, yield func(n int)) error {
	match, err := c.split.FindStringMatch(input)
	if err != nil {
		return err
	}
	for pieces := 1; match != nil; pieces++ {
		if pieces%stopEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		piece := match.String()
		if _, ok := c.vocab.Lookup(piece); ok {
			yield(len(piece))
		} else {
			for len(piece) > 0 {
				// A piece longer than maxPiece (a "word" of thousands of
				// letters, as a hostile document makes) is merged a slice
				// at a time: the merge holds 36 bytes per byte of its
				// piece, and a 1 MiB piece cost 36 MB and a second. The
				// count may then differ from Azure's by a token a slice.
				cut := len(piece)
				if cut > maxPiece {
					cut = maxPiece
					for cut > 0 && !utf8.RuneStart(piece[cut]) {
						cut--
					}
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				parts := c.mergePairs(piece[:cut])
				for i := range len(parts) - 1 {
					yield(parts[i+1].offset - parts[i].offset)
				}
				piece = piece[cut:]
			}
		}
		if match, err = c.split.FindNextMatch(match); err != nil {
			return err
		}
	}
	return nil
}

// maxPiece is the longest piece merged whole (see each).
const maxPiece = 4 << 10

// stopEvery is how many pieces each splits between checks of its context:
// a few hundred microseconds of work.
const stopEvery = 1024

type part struct {
	offset int
	rank   uint
}

// mergeHeapThreshold is the piece length, in bytes, from which mergePairs
// switches from mergePairsScan to mergePairsHeap.
const mergeHeapThreshold = 96

// mergePairs splits piece into the parts byte-pair encoding merges it into.
func (c *bpe) mergePairs(piece string) []part {
	if len(piece) < mergeHeapThreshold {
		return c.mergePairsScan(piece)
	}
	return c.mergePairsHeap(piece)
}

// mergePairsScan repeatedly merges the leftmost pair of parts with the lowest
// rank, finding it with a linear scan: O(n^2), fastest for short pieces.
func (c *bpe) mergePairsScan(piece string) []part {
	parts := make([]part, len(piece)+1)
	for i := range parts {
		parts[i] = part{i, math.MaxUint}
	}
	getRank := func(index, skip int) uint {
		if index+skip+2 < len(parts) {
			if rank, ok := c.vocab.Lookup(piece[parts[index].offset:parts[index+skip+2].offset]); ok {
				return uint(rank)
			}
		}
		return math.MaxUint
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = getRank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIndex := uint(math.MaxUint), 0
		for i, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIndex = p.rank, i
			}
		}
		if minRank == math.MaxUint {
			break
		}
		parts[minIndex].rank = getRank(minIndex, 1)
		if minIndex > 0 {
			parts[minIndex-1].rank = getRank(minIndex-1, 1)
		}
		parts = append(parts[:minIndex+1], parts[minIndex+2:]...)
	}
	return parts
}

// noRank marks a boundary that can't merge with its successor, or that was
// removed by a merge.
const noRank = math.MaxUint32

// mergeNode is a part boundary in mergePairsHeap's doubly linked list. rank
// is the rank of the token formed by merging this part with the next one.
type mergeNode struct {
	prev, next int32
	rank       uint32
}

// mergePairsHeap returns the same parts as mergePairsScan in O(n log n), so
// that a long piece (a run of spaces, a base64 blob) cannot take quadratic
// time.
func (c *bpe) mergePairsHeap(piece string) []part {
	n := int32(len(piece))
	nodes := make([]mergeNode, n+1)
	for i := range nodes {
		nodes[i] = mergeNode{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1
	rankOf := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		k := nodes[j].next
		if k < 0 {
			return noRank
		}
		if rank, ok := c.vocab.Lookup(piece[i:k]); ok {
			return rank
		}
		return noRank
	}
	candidates := make(mergeHeap, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if rank := rankOf(i); rank != noRank {
			nodes[i].rank = rank
			candidates = append(candidates, mergeCandidate{rank, i})
		}
	}
	candidates.init()
	for len(candidates) > 0 {
		top := candidates.pop()
		i := top.offset
		if nodes[i].rank != top.rank {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		for _, b := range [2]int32{i, nodes[i].prev} {
			if b < 0 {
				continue
			}
			nodes[b].rank = rankOf(b)
			if nodes[b].rank != noRank {
				candidates.push(mergeCandidate{nodes[b].rank, b})
			}
		}
	}
	parts := make([]part, 0, n+1)
	for i := int32(0); i >= 0; i = nodes[i].next {
		rank := uint(math.MaxUint)
		if nodes[i].rank != noRank {
			rank = uint(nodes[i].rank)
		}
		parts = append(parts, part{int(i), rank})
	}
	return parts
}

type mergeCandidate struct {
	rank   uint32
	offset int32
}

// mergeHeap is a binary min-heap of merge candidates ordered by rank, then by
// offset, so that among equal ranks the leftmost pair merges first.
type mergeHeap []mergeCandidate

func (h mergeHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCandidate) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

func (h *mergeHeap) pop() mergeCandidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h mergeHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h mergeHeap) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}
