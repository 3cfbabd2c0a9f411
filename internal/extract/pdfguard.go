package extract

import (
	"bytes"
	"fmt"
)

// The PDF library reads each token of a content stream whole (a string, a
// name, a number) and keeps every operand on its stack until an operator
// comes: a page whose one string is 60 MiB long (60 KB once deflated) or
// whose stream is operands without an operator makes it hold all of it,
// several times over. contentGuard follows the stream as the library will
// lex it, while drain decompresses it, and refuses it before the library
// sees it when a token or an operator's operands are over a fixed bound.
const (
	maxPDFToken    = 256 << 10
	maxPDFOperands = 100_000
)

type lexState uint8

const (
	lexSpace   lexState = iota // between tokens
	lexRegular                 // a name, number or operator
	lexLiteral                 // inside ( )
	lexEscape                  // after a backslash inside ( )
	lexHex                     // inside < >
	lexComment                 // after % to the end of the line
	lexAngle                   // after a '<': a hex string or "<<"
)

type contentGuard struct {
	state    lexState
	depth    int  // parentheses open in a literal string
	token    int  // bytes of the current token
	operand  bool // the current regular token is an operand (starts like a number or is a name)
	operands int  // operands since the last operator
}

// isPDFSpace and isPDFDelim follow ISO 32000-1, 7.2.2.
func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// isRegular reports whether c is a regular character, one that may continue
// a name, number or operator: neither white space nor a delimiter.
func isRegular(c byte) bool { return !isPDFSpace(c) && !isPDFDelim(c) }

func (g *contentGuard) write(p []byte) error {
	for len(p) > 0 {
		// Inside a string or a comment, skip at once to the next byte that
		// can change the state: most of a long stream is read here.
		if skip := g.plain(p); skip > 0 {
			g.token += skip
			if g.state != lexComment && g.token > maxPDFToken {
				return g.grow()
			}
			p = p[skip:]
			continue
		}
		if err := g.byte(p[0]); err != nil {
			return err
		}
		p = p[1:]
	}
	return nil
}

// plain returns how many leading bytes of p leave the state as it is.
func (g *contentGuard) plain(p []byte) int {
	var stops string
	switch g.state {
	case lexLiteral:
		stops = "\\()"
	case lexHex:
		stops = ">"
	case lexComment:
		stops = "\r\n"
	default:
		return 0
	}
	if i := bytes.IndexAny(p, stops); i >= 0 {
		return i
	}
	return len(p)
}

func (g *contentGuard) byte(c byte) error {
	switch g.state {
	case lexLiteral:
		switch c {
		case '\\':
			g.state = lexEscape
		case '(':
			g.depth++
		case ')':
			if g.depth--; g.depth == 0 {
				return g.end(true)
			}
		}
		return g.grow()
	case lexEscape:
		g.state = lexLiteral
		return g.grow()
	case lexHex:
		if c == '>' {
			return g.end(true)
		}
		return g.grow()
	case lexComment:
		if c == '\r' || c == '\n' {
			g.state = lexSpace
		}
		return nil
	case lexAngle:
		if c == '<' {
			g.state = lexSpace // "<<", a dictionary
			return nil
		}
		g.state = lexHex
		return g.byte(c)
	case lexRegular:
		if isRegular(c) {
			return g.grow()
		}
		if err := g.end(g.operand); err != nil {
			return err
		}
	}
	// Between tokens.
	switch {
	case isPDFSpace(c):
	case c == '%':
		g.state = lexComment
	case c == '(':
		g.state, g.depth, g.token = lexLiteral, 1, 0
	case c == '<':
		g.state, g.token = lexAngle, 0
	case c == '/':
		g.state, g.token, g.operand = lexRegular, 0, true
	case isPDFDelim(c):
		// [ ] { } > are tokens of their own.
	default:
		g.state, g.token = lexRegular, 1
		g.operand = c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9')
	}
	return nil
}

func (g *contentGuard) grow() error {
	if g.token++; g.token > maxPDFToken {
		return fmt.Errorf("%w: a PDF string or token longer than %d bytes", ErrUnreadable, maxPDFToken)
	}
	return nil
}

// end closes a token; an operator clears the operand count.
func (g *contentGuard) end(operand bool) error {
	g.state, g.token = lexSpace, 0
	if !operand {
		g.operands = 0
		return nil
	}
	if g.operands++; g.operands > maxPDFOperands {
		return fmt.Errorf("%w: more than %d PDF operands without an operator", ErrUnreadable, maxPDFOperands)
	}
	return nil
}
