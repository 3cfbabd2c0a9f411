// Command vocabgen writes the vocabulary tables package tokens embeds
// (internal/tokens/vocab/<encoding>.table, in internal/vocabtable's format)
// from github.com/tiktoken-go/tokenizer, the version go.mod names. Run it with
// go generate in internal/tokens after upgrading the tokenizer; a test checks
// the tables against the library token by token.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tiktoken-go/tokenizer"

	"github.com/timebox-dev/timebox/internal/tokens/internal/vocabtable"
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
	table, err := vocabtable.Build(toks[:last+1])
	if err != nil {
		return fmt.Errorf("%s: %w", enc, err)
	}
	return os.WriteFile(filepath.Join("vocab", string(enc)+".table"), table, 0o644)
}
