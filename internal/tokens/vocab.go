package tokens

import (
	_ "embed" // the vocabulary tables
	"fmt"

	"github.com/dlclark/regexp2/v2"

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
// and its split pattern, compiled (about 0.1 ms).
func newBPE(encoding string) (*bpe, error) {
	split, data := o200kSplit, o200kTable
	switch encoding {
	case "o200k_base":
	case "cl100k_base":
		split, data = cl100kSplit, cl100kTable
	default:
		return nil, fmt.Errorf("no vocabulary for %s", encoding)
	}
	vocab, err := vocabtable.Open(data)
	if err != nil {
		return nil, fmt.Errorf("the embedded %s table: %w", encoding, err)
	}
	re, err := regexp2.Compile(split, regexp2.None)
	if err != nil {
		return nil, err
	}
	return &bpe{vocab: vocab, split: re}, nil
}
