package tokens

import (
	_ "embed" // the vocabulary tables
	"fmt"
	"sync"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
)

//go:generate go run ./internal/vocabgen

// The vocabularies of o200k_base and cl100k_base (the two encodings the
// handler's models use), written by internal/vocabgen from
// github.com/tiktoken-go/tokenizer as internal/vocabtable's tables: token
// bytes, offsets and a hash table, uncompressed. Embedded as strings, they sit
// in the binary's read-only data and are read in place: nothing to inflate,
// no map to build, nothing on the heap for the GC to scan.
var (
	//go:embed vocab/o200k_base.table
	o200kTable string
	//go:embed vocab/cl100k_base.table
	cl100kTable string
)

// newBPE returns the codec of an encoding New accepted: its table, checked,
// and its split scanner.
func newBPE(encoding string) (*bpe, error) {
	split, data := splitO200k, o200kTable
	switch encoding {
	case "o200k_base":
	case "cl100k_base":
		split, data = splitCl100k, cl100kTable
	default:
		return nil, fmt.Errorf("no vocabulary for %s", encoding)
	}
	vocab, err := vocabtable.Open(data)
	if err != nil {
		return nil, fmt.Errorf("the embedded %s table: %w", encoding, err)
	}
	if vocab.Len() > maxRanks {
		return nil, fmt.Errorf("the embedded %s table: %d ids, more than the %d merging indexes", encoding, vocab.Len(), maxRanks)
	}
	c := &bpe{vocab: vocab, split: split}
	for b := range 256 {
		id, ok := vocab.Lookup(string([]byte{byte(b)}))
		if !ok {
			return nil, fmt.Errorf("the embedded %s table: byte %#x is no token", encoding, b)
		}
		c.byteID[b] = id
	}
	c.merging = sync.OnceValue(func() *mergeTables { return newMergeTables(vocab) })
	return c, nil
}

// newMergeTables fills the tables merges read (mergeTables) from a
// vocabulary: a lookup of each pair of bytes and a hash of each token.
func newMergeTables(vocab vocabtable.Table) *mergeTables {
	t := new(mergeTables)
	for p := range t.pairs {
		id, ok := vocab.Lookup(string([]byte{byte(p >> 8), byte(p)}))
		if !ok {
			id = noRank
		}
		t.pairs[p] = id
	}
	for id := range vocab.Len() {
		if tok := vocab.Token(id); len(tok) > 2 {
			t.maybe.add(vocabtable.Hash(tok))
		}
	}
	return t
}
