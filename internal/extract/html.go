package extract

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

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
// pass (boundHTML) makes a bounded copy of the page, refusing more than
// maxHTMLElements elements; after parsing, the tree depth is checked against
// MaxDepth, so readability only ever sees a bounded tree.
func (x *extractor) html(ctx context.Context, data []byte, out *sink) error {
	data, err := x.boundHTML(ctx, data)
	if err != nil {
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

// Bounds of the copy of an HTML document that is parsed into a tree. The
// tree builder and readability copy every text node and attribute (a page
// of one 10 MiB text node cost tens of megabytes per document); the copy
// keeps what can reach the answer and no more.
const (
	// maxHTMLAttr: longer attribute values (data: URIs, inline state) are
	// dropped; readability reads only short ones (class, id, href).
	maxHTMLAttr = 2 << 10
)

// boundHTML tokenizes data (linear, checking ctx) into the copy that is
// parsed: at most maxHTMLElements elements (more is refused); no comments,
// scripts or styles; no attribute value over maxHTMLAttr; no text node
// over MaxTextBytes and no more than twice MaxTextBytes of text in all
// (the answer holds at most MaxTextBytes). Nesting is left to the tree
// builder, which knows which tags close which (many unclosed <a> or <p> are
// shallow in the tree): x/net/html refuses an open element stack over 512,
// and checkTree applies MaxDepth to the result.
func (x *extractor) boundHTML(ctx context.Context, data []byte) ([]byte, error) {
	z := html.NewTokenizer(bytes.NewReader(data))
	var out bytes.Buffer
	out.Grow(min(len(data), 2*x.lim.MaxTextBytes))
	elements, textLeft, skipText := 0, 2*x.lim.MaxTextBytes, false
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := x.check(ctx); err != nil {
				return nil, err
			}
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return out.Bytes(), nil // io.EOF: the tokenizer reports no other error on a bytes.Reader
		case html.StartTagToken, html.SelfClosingTagToken:
			if elements++; elements > maxHTMLElements {
				return nil, fmt.Errorf("%w: more than %d HTML elements", ErrUnreadable, maxHTMLElements)
			}
			skipText = writeTag(&out, z, tt)
		case html.EndTagToken:
			skipText = false
			out.Write(z.Raw())
		case html.DoctypeToken:
			if raw := z.Raw(); len(raw) <= maxHTMLAttr {
				out.Write(raw)
			}
		case html.TextToken:
			if skipText || textLeft <= 0 {
				continue
			}
			raw := z.Raw()
			cut := min(len(raw), textLeft, x.lim.MaxTextBytes)
			for cut < len(raw) && cut > 0 && !utf8.RuneStart(raw[cut]) {
				cut--
			}
			out.Write(raw[:cut])
			textLeft -= cut
		}
	}
}

// writeTag writes a start tag without its over-long attribute values, and
// reports whether the element's text is to be skipped (script, style).
func writeTag(out *bytes.Buffer, z *html.Tokenizer, tt html.TokenType) (skipText bool) {
	name, more := z.TagName()
	out.WriteByte('<')
	out.Write(name)
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		if len(val) > maxHTMLAttr {
			continue
		}
		out.WriteByte(' ')
		out.Write(key)
		out.WriteString(`="`)
		out.WriteString(html.EscapeString(string(val)))
		out.WriteByte('"')
	}
	if tt == html.SelfClosingTagToken {
		out.WriteString("/>")
		return false
	}
	out.WriteByte('>')
	switch string(name) {
	case "script", "style", "template", "noscript":
		return true
	}
	return false
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
