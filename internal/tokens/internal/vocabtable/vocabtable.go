// Package vocabtable is the one definition of the tokenizer's vocabulary
// table: the file internal/vocabgen writes and package tokens embeds as a
// string and reads in place. The table needs no loading: no inflating, no
// map, nothing on the heap; the binary's read-only data is the table.
//
// A table file is, all integers little-endian:
//
//	header   magic "tbvocab" and format version 2 (8 bytes),
//	         ids n, blob length, log2 of the slot count (3 x uint32)
//	offsets  n+1 entries of 3 bytes: id i's bytes are blob[offsets[i]:offsets[i+1]]
//	         (empty for an id with no token)
//	slots    2^bits entries of 3 bytes: 0 for an empty slot, else id+1 in
//	         its low 18 bits and 6 bits of the token's hash above them, in an
//	         open-addressing hash table of token bytes (hash, linear probing)
//	blob     every token's bytes, in id order
//
// Three-byte entries keep the binary small (ids below 2^18-1, blobs below
// 16 MiB; both encodings are below). The hash bits in a slot let a lookup
// pass over a slot of another token without reading that token's offsets
// and bytes, two cache misses in a table of megabytes. The slot count is the
// smallest power of two that keeps the load factor at or below 0.4, so a miss
// (most lookups while byte-pair merging are misses) stops after about two
// slots.
package vocabtable

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// magic starts every table file; its last byte is the format version.
const magic = "tbvocab\x02"

// headerSize is magic plus three uint32s.
const headerSize = len(magic) + 3*4

// entry is the size of an offset or a slot, in bytes.
const entry = 3

// maxEntry is the largest value an entry holds.
const maxEntry = 1<<(8*entry) - 1

// hash mixes s eight bytes at a time (the writer and the reader must agree,
// so it is defined here only): deterministic across builds and machines, and
// fast on the long pieces merging looks up as on short ones.
func hash(s string) uint32 {
	h := uint64(len(s)) * 0x9E3779B97F4A7C15
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = (h ^ w) * 0xBF58476D1CE4E5B9
		h ^= h >> 31
	}
	var w uint64
	for i := range len(s) {
		w |= uint64(s[i]) << (8 * i)
	}
	h = (h ^ w) * 0x94D049BB133111EB
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	return uint32(h >> 32)
}

// idBits is how many of a slot's bits hold id+1; the rest hold tagOf.
const idBits = 18

// tagOf is the hash bits a slot keeps of its token.
func tagOf(h uint32) uint32 { return h >> (32 - (8*entry - idBits)) }

// Build returns the table file of a vocabulary: tokens[id] is the bytes of
// the token with that id, or "" for an id with no token. It fails on a
// duplicate token or a vocabulary too big for three-byte entries.
func Build(tokens []string) ([]byte, error) {
	n := len(tokens)
	if n+1 >= 1<<idBits {
		return nil, fmt.Errorf("vocabtable: %d ids do not fit in %d bits of a slot", n, idBits)
	}
	blobLen, count := 0, 0
	for _, tok := range tokens {
		blobLen += len(tok)
		if tok != "" {
			count++
		}
	}
	if blobLen > maxEntry {
		return nil, fmt.Errorf("vocabtable: %d bytes of tokens do not fit in %d-byte offsets", blobLen, entry)
	}
	// Load factor at most 0.4: a miss then probes about two slots.
	bits := 1
	for count*5 > 2<<bits {
		bits++
	}
	slots := 1 << bits
	out := make([]byte, headerSize, headerSize+entry*(n+1+slots)+blobLen)
	copy(out, magic)
	binary.LittleEndian.PutUint32(out[len(magic):], uint32(n))
	binary.LittleEndian.PutUint32(out[len(magic)+4:], uint32(blobLen))
	binary.LittleEndian.PutUint32(out[len(magic)+8:], uint32(bits))
	at := 0
	for _, tok := range tokens {
		out = put(out, at)
		at += len(tok)
	}
	out = put(out, at)
	table := make([]uint32, slots)
	mask := uint32(slots - 1)
	for id, tok := range tokens {
		if tok == "" {
			continue
		}
		h := hash(tok)
		i := h & mask
		for table[i] != 0 {
			if other := table[i]&(1<<idBits-1) - 1; tokens[other] == tok {
				return nil, fmt.Errorf("vocabtable: ids %d and %d have the same token %q", other, id, tok)
			}
			i = (i + 1) & mask
		}
		table[i] = uint32(id+1) | tagOf(h)<<idBits
	}
	for _, e := range table {
		out = put(out, int(e))
	}
	for _, tok := range tokens {
		out = append(out, tok...)
	}
	return out, nil
}

func put(b []byte, v int) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16))
}

// Table reads a table file in place. The zero value is an empty table.
type Table struct {
	offsets, slots, blob string
	mask                 uint32
}

// Open checks data's header and sizes and returns its table, which reads
// data in place (it copies nothing). It does not read the entries: a table
// damaged inside but of the right size gives wrong answers, which the tests
// of the package that embeds it catch.
func Open(data string) (Table, error) {
	if len(data) < headerSize || data[:len(magic)] != magic {
		return Table{}, errors.New("vocabtable: not a table of this format (wrong magic or version)")
	}
	n, blobLen, bits := u32(data, len(magic)), u32(data, len(magic)+4), u32(data, len(magic)+8)
	if n+1 >= 1<<idBits || blobLen > maxEntry || bits < 1 || bits > 8*entry || n >= 1<<bits {
		return Table{}, fmt.Errorf("vocabtable: impossible header (%d ids, %d bytes, 2^%d slots)", n, blobLen, bits)
	}
	offsetsEnd := headerSize + entry*(n+1)
	slotsEnd := offsetsEnd + entry<<bits
	if len(data) != slotsEnd+blobLen {
		return Table{}, fmt.Errorf("vocabtable: %d bytes where the header says %d", len(data), slotsEnd+blobLen)
	}
	t := Table{offsets: data[headerSize:offsetsEnd], slots: data[offsetsEnd:slotsEnd], blob: data[slotsEnd:], mask: 1<<bits - 1}
	if u24(t.offsets, 0) != 0 || int(u24(t.offsets, entry*n)) != blobLen {
		return Table{}, errors.New("vocabtable: the offsets do not span the blob")
	}
	return t, nil
}

// Len returns the number of ids: every id with a token is below it.
func (t Table) Len() int { return len(t.offsets)/entry - 1 }

// Token returns the bytes of id's token, or "" if id has none.
func (t Table) Token(id int) string {
	if id < 0 || id >= t.Len() {
		return ""
	}
	return t.blob[u24(t.offsets, entry*id):u24(t.offsets, entry*id+entry)]
}

// Hash returns the hash of s that Lookup starts from, for a caller that
// keys a cache of its own with it (LookupHashed).
func Hash(s string) uint32 { return hash(s) }

// Lookup returns the id of the token whose bytes are s, and whether there is
// one.
func (t Table) Lookup(s string) (id uint32, ok bool) { return t.LookupHashed(s, hash(s)) }

// LookupHashed is Lookup of s whose Hash is h.
func (t Table) LookupHashed(s string, h uint32) (id uint32, ok bool) {
	i, tag := h&t.mask, tagOf(h)
	// At most every slot once, so that even a damaged table ends.
	for range len(t.slots) / entry {
		e := u24(t.slots, entry*int(i))
		if e == 0 {
			return 0, false
		}
		if e>>idBits == tag {
			id = e&(1<<idBits-1) - 1
			lo, hi := u24(t.offsets, entry*int(id)), u24(t.offsets, entry*int(id)+entry)
			if int(hi-lo) == len(s) && t.blob[lo:hi] == s {
				return id, true
			}
		}
		i = (i + 1) & t.mask
	}
	return 0, false
}

// u32 is the four-byte little-endian integer at s[at:], as an int.
func u32(s string, at int) int {
	return int(u24(s, at)) | int(s[at+3])<<24
}

// u24 is the three-byte little-endian entry at s[at:].
func u24(s string, at int) uint32 {
	_ = s[at+2]
	return uint32(s[at]) | uint32(s[at+1])<<8 | uint32(s[at+2])<<16
}
