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
	"golang.org/x/net/html/atom"
)

// maxHTMLElements caps the elements of an HTML document handed to
// readability, which cannot be interrupted: its work grows with the element
// count, so the count is bounded instead. 100k elements is several times a
// large real article page.
const maxHTMLElements = 100_000

// html extracts the article text of an HTML page with readability (the
// readeck fork of go-readability), falling back to the whole body's text
// when readability finds no article. Before any tree is built, a tokenizer
// pass (linear, checking ctx) refuses nesting far past MaxDepth and more
// than maxHTMLElements elements; after parsing, the real tree depth is
// checked against MaxDepth, so readability only ever sees a bounded tree.
func (x *extractor) html(ctx context.Context, data []byte, out *sink) error {
	if err := x.prescanHTML(ctx, data); err != nil {
		return err
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: HTML: %v", ErrUnreadable, err)
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

// prescanHTML counts open elements with the tokenizer. It is an estimate
// (the tree builder closes some elements implicitly), so it only refuses
// what is far past MaxDepth; checkTree applies the exact limit.
func (x *extractor) prescanHTML(ctx context.Context, data []byte) error {
	z := html.NewTokenizer(bytes.NewReader(data))
	var stack []atom.Atom
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
		case html.StartTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if elements++; elements > maxHTMLElements {
				return fmt.Errorf("%w: more than %d HTML elements", ErrUnreadable, maxHTMLElements)
			}
			if voidElement(a) {
				continue
			}
			// An element whose end tag is optional closes an open one
			// of the same name (<p>a<p>b), as the tree builder would.
			if optionalEnd(a) && len(stack) > 0 && stack[len(stack)-1] == a {
				continue
			}
			stack = append(stack, a)
			if len(stack) > 4*x.lim.MaxDepth {
				return fmt.Errorf("%w: HTML nested deeper than %d", ErrUnreadable, x.lim.MaxDepth)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i] == a {
					stack = stack[:i]
					break
				}
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

func voidElement(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img, atom.Input,
		atom.Link, atom.Meta, atom.Param, atom.Source, atom.Track, atom.Wbr, atom.Keygen:
		return true
	}
	return false
}

func optionalEnd(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Li, atom.Dt, atom.Dd, atom.Option, atom.Tr, atom.Td, atom.Th, atom.Rt, atom.Rp:
		return true
	}
	return false
}
