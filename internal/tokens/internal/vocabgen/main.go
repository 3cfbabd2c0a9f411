// Command vocabgen writes the vocabularies package tokens embeds
// (internal/tokens/vocab/<encoding>.gz) from github.com/tiktoken-go/tokenizer,
// the version go.mod names: every token in id order, each as its length (a
// uvarint; 0 for an id with no token) and its bytes, gzipped. Run it with go
// generate in internal/tokens after upgrading the tokenizer; a test checks the
// files against the library token by token.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tiktoken-go/tokenizer"
)

func main() {
	for _, enc := range []tokenizer.Encoding{tokenizer.O200kBase, tokenizer.Cl100kBase} {
		if err := write(enc); err != nil {
			fmt.Fprintln(os.Stderr, "vocabgen:", err)
			os.Exit(1)
		}
	}
}

func write(enc tokenizer.Encoding) error {
	c, err := tokenizer.Get(enc)
	if err != nil {
		return err
	}
	var toks []string
	last := -1
	for id := range 1 << 18 { // above every id of both encodings
		tok, err := c.Decode([]uint{uint(id)})
		if err != nil {
			tok = "" // no token has this id
		} else {
			last = id
		}
		toks = append(toks, tok)
	}
	var raw bytes.Buffer
	for _, tok := range toks[:last+1] {
		raw.Write(binary.AppendUvarint(nil, uint64(len(tok))))
		raw.WriteString(tok)
	}
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("vocab", string(enc)+".gz"), out.Bytes(), 0o644)
}
