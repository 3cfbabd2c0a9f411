package tokens

import (
	"compress/gzip"
	"embed"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/dlclark/regexp2/v2"
)

//go:generate go run ./internal/vocabgen

// vocabularies are o200k_base's and cl100k_base's tokens, written by
// internal/vocabgen from github.com/tiktoken-go/tokenizer: every token in id
// order as a uvarint length (0 for an id with no token) and its bytes,
// gzipped. Only the two encodings the handler's models use are here.
//
//go:embed vocab/o200k_base.gz vocab/cl100k_base.gz
var vocabularies embed.FS

// vocabs holds each encoding's vocabulary once it is loaded: Counters of one
// encoding share it (it is only read).
var vocabs = map[string]*vocabOnce{"o200k_base": {}, "cl100k_base": {}}

type vocabOnce struct {
	once  sync.Once
	vocab map[string]uint
	err   error
}

// newBPE loads an encoding New accepted: the first time in a process, about
// 1.6 MB to inflate and a map of 100,000-200,000 tokens to build (tens of
// ms, which is why it happens after the port opens); then only the split
// pattern to compile.
func newBPE(encoding string) (*bpe, error) {
	split := o200kSplit
	if encoding == "cl100k_base" {
		split = cl100kSplit
	}
	re, err := regexp2.Compile(split, regexp2.None)
	if err != nil {
		return nil, err
	}
	v := vocabs[encoding]
	if v == nil {
		return nil, fmt.Errorf("no vocabulary for %s", encoding)
	}
	v.once.Do(func() { v.vocab, v.err = readVocab(encoding) })
	if v.err != nil {
		return nil, v.err
	}
	return &bpe{vocabulary: v.vocab, split: re}, nil
}

func readVocab(encoding string) (map[string]uint, error) {
	f, err := vocabularies.Open("vocab/" + encoding + ".gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	// One string holds every token; the map's keys are slices of it.
	all := string(raw)
	vocab := make(map[string]uint, len(raw)/8)
	for id, at := 0, 0; at < len(all); id++ {
		n, k := binary.Uvarint(raw[at:])
		if k <= 0 || n > uint64(len(all)-at-k) {
			return nil, fmt.Errorf("vocabulary %s is damaged at id %d", encoding, id)
		}
		at += k
		if n > 0 {
			vocab[all[at:at+int(n)]] = uint(id)
		}
		at += int(n)
	}
	return vocab, nil
}
