package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// The WordprocessingML namespace (ECMA-376 part 1, 17) and the relationship
// type of the main document part.
const (
	nsW            = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	relOfficeDoc   = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
	relStrictOffic = "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument"
)

// maxRatio is a compression ratio that text XML does not reach with
// deflate (typical parts compress 5-20x; a bomb of one repeated byte, about
// 1000x).
const maxRatio = 100

// docx extracts the paragraphs of the main document part. Only the parts it
// reads are decompressed (images are never touched), through a reader that
// fails past MaxExpandedBytes, whatever the zip directory claims.
func (x *extractor) docx(ctx context.Context, data []byte, out *sink) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("%w: not a zip archive: %v", ErrUnreadable, err)
	}
	if len(zr.File) > x.lim.MaxEntries {
		return fmt.Errorf("%w: %d zip entries, more than %d", ErrUnreadable, len(zr.File), x.lim.MaxEntries)
	}
	files := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		files[f.Name] = f
	}
	expandLeft := x.lim.MaxExpandedBytes
	main := "word/document.xml"
	if rels, ok := files["_rels/.rels"]; ok {
		target, err := x.mainPart(ctx, rels, &expandLeft)
		if err != nil {
			return err
		}
		if target != "" {
			main = target
		}
	}
	doc, ok := files[main]
	if !ok {
		return fmt.Errorf("%w: no main document part (%s) in the zip", ErrUnreadable, main)
	}
	return x.readPart(ctx, doc, &expandLeft, false, func(s *xmlStream) error { return x.paragraphs(s, out) })
}

// mainPart reads the package relationships for the officeDocument target.
func (x *extractor) mainPart(ctx context.Context, rels *zip.File, expandLeft *int64) (string, error) {
	var target string
	err := x.readPart(ctx, rels, expandLeft, true, func(s *xmlStream) error {
		depth := 0
		for {
			if err := s.next(); err != nil {
				return err
			}
			switch s.kind {
			case xmlStart:
				if depth++; depth > x.lim.MaxDepth {
					return fmt.Errorf("%w: XML nested deeper than %d", ErrUnreadable, x.lim.MaxDepth)
				}
				if s.name != "Relationship" {
					continue
				}
				var typ, tgt string
				for _, a := range s.attrs {
					switch a.name {
					case "Type":
						typ = a.value
					case "Target":
						tgt = a.value
					}
				}
				if typ == relOfficeDoc || typ == relStrictOffic {
					target = strings.TrimPrefix(path.Clean("/"+tgt), "/")
				}
			case xmlEnd:
				depth--
			}
		}
	})
	return target, err
}

// readPart decompresses one zip entry through a capped reader that checks
// ctx on every read, and hands a bounded XML stream over it to parse.
func (x *extractor) readPart(ctx context.Context, f *zip.File, expandLeft *int64, keepAttrs bool, parse func(*xmlStream) error) error {
	// A part that says it is over what is left to expand at a ratio no real XML
	// reaches is a bomb: refuse it without inflating anything. A large
	// real part is read, and reading stops at the text cap; the capped
	// reader below is what holds either way, whatever the zip claims.
	if f.UncompressedSize64 > uint64(*expandLeft) && f.UncompressedSize64 > maxRatio*f.CompressedSize64 {
		return fmt.Errorf("%w: %s declares %d bytes from %d, over the %d-byte limit", ErrUnreadable, f.Name, f.UncompressedSize64, f.CompressedSize64, x.lim.MaxExpandedBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreadable, f.Name, err)
	}
	defer rc.Close()
	capped := &cappedReader{r: rc, left: expandLeft, max: x.lim.MaxExpandedBytes, check: func() error { return x.check(ctx) }}
	err = parse(newXMLStream(capped, keepAttrs))
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		if errors.Is(err, ErrUnreadable) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %s: %v", ErrUnreadable, f.Name, err)
	}
	return nil
}

// paragraphs writes the text runs of a WordprocessingML body: w:t text, a
// tab for w:tab, a line break for w:br and w:cr, and a newline after each
// w:p, until the text cap. It refuses nesting over MaxDepth; ctx is checked
// by the reader under the stream, at every read.
func (x *extractor) paragraphs(s *xmlStream, out *sink) error {
	depth, inText := 0, false
	for !out.full() {
		if err := s.next(); err != nil {
			return err
		}
		switch s.kind {
		case xmlStart:
			if depth++; depth > x.lim.MaxDepth {
				return fmt.Errorf("%w: XML nested deeper than %d", ErrUnreadable, x.lim.MaxDepth)
			}
			switch s.name {
			case "t":
				inText = true
			case "tab":
				out.WriteString("\t")
			case "br", "cr":
				out.WriteString("\n")
			}
		case xmlEnd:
			depth--
			switch s.name {
			case "t":
				inText = false
			case "p":
				out.WriteString("\n")
			}
		case xmlText:
			if inText {
				out.WriteString(string(s.text))
			}
		}
	}
	return nil
}

// cappedReader counts bytes against a shared allowance and fails once it is
// spent, so a zip entry that lies about its size still stops at the limit.
type cappedReader struct {
	r     io.Reader
	left  *int64
	max   int64
	check func() error // the extraction's checkpoint, run before every read
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	if *c.left <= 0 {
		// At the limit exactly: fine if the entry ends here.
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %w: more than %d bytes decompressed", ErrUnreadable, errTooBig, c.max)
	}
	if int64(len(p)) > *c.left {
		p = p[:*c.left]
	}
	n, err := c.r.Read(p)
	*c.left -= int64(n)
	return n, err
}
