package extract

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// encoding/xml returns each run of character data as one token, so a DOCX
// whose one <w:t> holds 60 MiB of text (61 KB once deflated, under the
// expansion cap) made it buffer the whole run, twice, before the text cap
// could cut it: 8 such uploads took 4.4 GB. xmlStream reads the XML of an
// OOXML part with memory bounded per token instead: text comes out in
// chunks of at most maxXMLChunk bytes, names are capped at maxXMLName,
// attribute values the caller does not keep are skipped without being held,
// and kept ones are capped at maxXMLAttr. It knows what WordprocessingML
// and package relationships use (elements, attributes, character and
// entity references, CDATA, comments, processing instructions) and refuses
// a DTD, which OOXML parts may not hold (ECMA-376 part 2, M1.20). It does
// not check that end tags match start tags, as encoding/xml's RawToken did
// not.
const (
	maxXMLChunk = 32 << 10
	maxXMLName  = 256
	maxXMLAttr  = 4 << 10
	maxXMLAttrs = 64
)

type xmlKind int

const (
	xmlStart xmlKind = iota + 1
	xmlEnd
	xmlText
)

// xmlAttr is one kept attribute: local name and decoded value.
type xmlAttr struct{ name, value string }

type xmlStream struct {
	r *bufio.Reader
	// keepAttrs makes the stream return attributes (capped); otherwise
	// they are skipped.
	keepAttrs bool

	kind    xmlKind
	name    string    // local name of a start or end tag
	attrs   []xmlAttr // of a start tag, when keepAttrs
	text    []byte    // a chunk of character data; reused
	selfEnd bool      // the start tag just returned was <x/>: an end follows
	inCDATA bool      // inside <![CDATA[ ... ]]>, between chunks
}

func newXMLStream(r io.Reader, keepAttrs bool) *xmlStream {
	return &xmlStream{r: bufio.NewReaderSize(r, 16<<10), keepAttrs: keepAttrs, text: make([]byte, 0, maxXMLChunk)}
}

var errXMLSyntax = fmt.Errorf("%w: malformed XML", ErrUnreadable)

func xmlSyntax(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errXMLSyntax, fmt.Sprintf(format, args...))
}

// next reads the next token; io.EOF at the end.
func (x *xmlStream) next() error {
	if x.selfEnd {
		x.selfEnd, x.kind = false, xmlEnd
		return nil
	}
	if x.inCDATA {
		return x.cdata()
	}
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return err
		}
		if c != '<' {
			_ = x.r.UnreadByte()
			return x.chars()
		}
		c, err = x.r.ReadByte()
		if err != nil {
			return eofIsSyntax(err)
		}
		switch c {
		case '/':
			return x.endTag()
		case '?':
			if err := x.skipPast("?>"); err != nil {
				return err
			}
		case '!':
			switch {
			case x.consume("--"):
				if err := x.skipPast("-->"); err != nil {
					return err
				}
			case x.consume("[CDATA["):
				x.inCDATA = true
				return x.cdata()
			default:
				return fmt.Errorf("%w: a DTD or declaration, which OOXML parts may not hold", ErrUnreadable)
			}
		default:
			_ = x.r.UnreadByte()
			return x.startTag()
		}
	}
}

func eofIsSyntax(err error) error {
	if err == io.EOF {
		return xmlSyntax("unexpected end")
	}
	return err
}

// consume reads s if it comes next.
func (x *xmlStream) consume(s string) bool {
	b, err := x.r.Peek(len(s))
	if err != nil || string(b) != s {
		return false
	}
	_, _ = x.r.Discard(len(s))
	return true
}

// skipPast discards input up to and including end, holding nothing.
func (x *xmlStream) skipPast(end string) error {
	matched := 0
	for matched < len(end) {
		c, err := x.r.ReadByte()
		if err != nil {
			return eofIsSyntax(err)
		}
		switch {
		case c == end[matched]:
			matched++
		case c == end[0]:
			matched = 1
		default:
			matched = 0
		}
	}
	return nil
}

// chars reads character data up to the next '<' or a full chunk, decoding
// references and line ends.
func (x *xmlStream) chars() error {
	x.kind, x.text = xmlText, x.text[:0]
	for len(x.text) < maxXMLChunk-utf8.UTFMax {
		c, err := x.r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch c {
		case '<':
			_ = x.r.UnreadByte()
			return nil
		case '&':
			if err := x.reference(); err != nil {
				return err
			}
		case '\r':
			if b, err := x.r.Peek(1); err != nil || b[0] != '\n' {
				x.text = append(x.text, '\n')
			}
		default:
			x.text = append(x.text, c)
		}
	}
	x.completeRune()
	return nil
}

// completeRune reads the rest of a UTF-8 sequence cut by the end of a
// chunk, so that no chunk ends inside a character.
func (x *xmlStream) completeRune() {
	i := len(x.text) - 1
	for i > 0 && i > len(x.text)-utf8.UTFMax && !utf8.RuneStart(x.text[i]) {
		i--
	}
	for i >= 0 && !utf8.FullRune(x.text[i:]) {
		b, err := x.r.Peek(1)
		if err != nil || utf8.RuneStart(b[0]) {
			return
		}
		x.text = append(x.text, b[0])
		_, _ = x.r.Discard(1)
	}
}

// cdata reads a chunk of a CDATA section, as is.
func (x *xmlStream) cdata() error {
	x.kind, x.text = xmlText, x.text[:0]
	for len(x.text) < maxXMLChunk-utf8.UTFMax {
		if x.consume("]]>") {
			x.inCDATA = false
			return nil
		}
		c, err := x.r.ReadByte()
		if err != nil {
			return eofIsSyntax(err)
		}
		x.text = append(x.text, c)
	}
	x.completeRune()
	return nil
}

// reference decodes an entity or character reference (after '&') into
// x.text.
func (x *xmlStream) reference() error {
	var ref [16]byte
	n := 0
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return eofIsSyntax(err)
		}
		if c == ';' {
			break
		}
		if n == len(ref) {
			return xmlSyntax("reference too long")
		}
		ref[n] = c
		n++
	}
	s := string(ref[:n])
	switch s {
	case "lt":
		x.text = append(x.text, '<')
	case "gt":
		x.text = append(x.text, '>')
	case "amp":
		x.text = append(x.text, '&')
	case "apos":
		x.text = append(x.text, '\'')
	case "quot":
		x.text = append(x.text, '"')
	default:
		var v uint64
		var err error
		switch {
		case len(s) > 2 && s[0] == '#' && s[1] == 'x':
			v, err = strconv.ParseUint(s[2:], 16, 32)
		case len(s) > 1 && s[0] == '#':
			v, err = strconv.ParseUint(s[1:], 10, 32)
		default:
			return xmlSyntax("unknown entity &%s;", s)
		}
		if err != nil || !utf8.ValidRune(rune(v)) {
			return xmlSyntax("bad character reference")
		}
		x.text = utf8.AppendRune(x.text, rune(v))
	}
	return nil
}

// readName reads a qualified name and returns its local part.
func (x *xmlStream) readName() (string, error) {
	var buf [maxXMLName]byte
	n := 0
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return "", eofIsSyntax(err)
		}
		if isXMLSpace(c) || c == '>' || c == '/' || c == '=' {
			_ = x.r.UnreadByte()
			break
		}
		if n == len(buf) {
			return "", xmlSyntax("a name longer than %d bytes", maxXMLName)
		}
		buf[n] = c
		n++
	}
	if n == 0 {
		return "", xmlSyntax("empty name")
	}
	name := buf[:n]
	if i := bytes.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	return string(name), nil
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (x *xmlStream) skipSpace() (byte, error) {
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return 0, eofIsSyntax(err)
		}
		if !isXMLSpace(c) {
			return c, nil
		}
	}
}

func (x *xmlStream) endTag() error {
	name, err := x.readName()
	if err != nil {
		return err
	}
	if c, err := x.skipSpace(); err != nil || c != '>' {
		return xmlSyntax("bad end tag")
	}
	x.kind, x.name = xmlEnd, name
	return nil
}

func (x *xmlStream) startTag() error {
	name, err := x.readName()
	if err != nil {
		return err
	}
	x.kind, x.name, x.attrs = xmlStart, name, x.attrs[:0]
	for {
		c, err := x.skipSpace()
		if err != nil {
			return err
		}
		switch c {
		case '>':
			return nil
		case '/':
			if c, err := x.r.ReadByte(); err != nil || c != '>' {
				return xmlSyntax("bad empty-element tag")
			}
			x.selfEnd = true
			return nil
		}
		_ = x.r.UnreadByte()
		attr, err := x.readName()
		if err != nil {
			return err
		}
		if c, err := x.skipSpace(); err != nil || c != '=' {
			return xmlSyntax("attribute without a value")
		}
		quote, err := x.skipSpace()
		if err != nil || (quote != '"' && quote != '\'') {
			return xmlSyntax("unquoted attribute value")
		}
		if err := x.attrValue(attr, quote); err != nil {
			return err
		}
	}
}

// attrValue reads a value up to its closing quote: kept (decoded, capped)
// when keepAttrs, otherwise skipped.
func (x *xmlStream) attrValue(name string, quote byte) error {
	if !x.keepAttrs {
		_, err := x.r.ReadSlice(quote)
		for err == bufio.ErrBufferFull {
			_, err = x.r.ReadSlice(quote)
		}
		return eofIsSyntax(err)
	}
	x.text = x.text[:0]
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return eofIsSyntax(err)
		}
		if c == quote {
			break
		}
		if len(x.text) >= maxXMLAttr {
			return fmt.Errorf("%w: an attribute longer than %d bytes", ErrUnreadable, maxXMLAttr)
		}
		if c == '&' {
			if err := x.reference(); err != nil {
				return err
			}
			continue
		}
		x.text = append(x.text, c)
	}
	if len(x.attrs) == maxXMLAttrs {
		return fmt.Errorf("%w: more than %d attributes on one element", ErrUnreadable, maxXMLAttrs)
	}
	x.attrs = append(x.attrs, xmlAttr{name, string(x.text)})
	return nil
}
