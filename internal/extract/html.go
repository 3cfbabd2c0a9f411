package extract

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"

	"codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
)

// maxHTMLElements caps the elements of an HTML document handed to
// readability, which cannot be interrupted: its work grows with the element
// count, so the count is bounded instead. 100k elements is several times a
// large real article page.
const maxHTMLElements = 100_000

// html extracts the article text of an HTML page with readability (the
// readeck fork of go-readability), falling back to the whole body's text
// when readability finds no article. Before any tree is built, a tokenizer
// pass refuses more than maxHTMLElements elements; after parsing, the tree
// depth is checked against MaxDepth, so readability only ever sees a
// bounded tree.
func (x *extractor) html(ctx context.Context, data []byte, out *sink) error {
	if err := x.prescanHTML(ctx, data); err != nil {
		return err
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		// x/net/html's only parse error is its nesting limit.
		return fmt.Errorf("%w: HTML nested too deep: %v", ErrUnreadable, err)
	}
	if err := x.checkTree(ctx, doc); err != nil {
		return err
	}
	if err := x.check(ctx); err != nil {
		return err
	}
	parser := readability.NewParser()
	parser.MaxElemsToParse = maxHTMLElements
	base := &url.URL{Scheme: "https", Host: "document.invalid", Path: "/"}
	article, err := parser.ParseAndMutate(doc, base)
	var text string
	if err == nil && article.Node != nil {
		text = strings.TrimSpace(render.InnerText(article.Node))
		if title := strings.TrimSpace(article.Title()); title != "" && text != "" && !strings.HasPrefix(text, title) {
			text = title + "\n\n" + text
		}
	}
	if text == "" {
		// readability mutated the tree; parse again for the plain body.
		if err := x.check(ctx); err != nil {
			return err
		}
		doc, err = html.Parse(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%w: HTML: %v", ErrUnreadable, err)
		}
		text = strings.TrimSpace(render.InnerText(doc))
	}
	out.WriteString(text)
	return nil
}

// prescanHTML counts start tags with the tokenizer (linear, checking ctx)
// and refuses more than maxHTMLElements before any tree is built. Nesting
// is left to the tree builder, which knows which tags close which (many
// unclosed <a> or <p> are shallow in the tree): x/net/html refuses an open
// element stack over 512, and checkTree applies MaxDepth to the result.
func (x *extractor) prescanHTML(ctx context.Context, data []byte) error {
	z := html.NewTokenizer(bytes.NewReader(data))
	elements := 0
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := x.check(ctx); err != nil {
				return err
			}
		}
		switch z.Next() {
		case html.ErrorToken:
			return nil // io.EOF: the tokenizer reports no other error on a bytes.Reader
		case html.StartTagToken, html.SelfClosingTagToken:
			if elements++; elements > maxHTMLElements {
				return fmt.Errorf("%w: more than %d HTML elements", ErrUnreadable, maxHTMLElements)
			}
		}
	}
}

// checkTree refuses a parsed tree deeper than MaxDepth, walking it without
// recursion.
func (x *extractor) checkTree(ctx context.Context, doc *html.Node) error {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{doc, 0}}
	for visited := 1; len(stack) > 0; visited++ {
		if visited%1024 == 0 {
			if err := x.check(ctx); err != nil {
				return err
			}
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > x.lim.MaxDepth {
			return fmt.Errorf("%w: HTML nested deeper than %d", ErrUnreadable, x.lim.MaxDepth)
		}
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return nil
}
