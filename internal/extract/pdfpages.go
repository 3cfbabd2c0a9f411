package extract

import (
	"context"
	"errors"
	"fmt"

	"github.com/ledongthuc/pdf"
)

// maxPageTreeDepth bounds the recursion over a PDF page tree; real files
// nest a handful of levels.
const maxPageTreeDepth = 64

// errFull stops the page walk once the text cap is reached.
var errFull = errors.New("text cap reached")

// pageWalk reads the page tree in document order, extracting each page as
// it is reached, so that reading stops at the text cap without walking the
// rest of a long document.
type pageWalk struct {
	x         *extractor
	ctx       context.Context
	out       *sink
	nodesLeft int   // page tree nodes left to visit: a cycle guard
	expanded  int64 // decompressed stream bytes left
	pages     int   // pages reached
	read      int   // pages that gave text without error
	failed    error // the last page error
}

// walk visits node and its kids. res is the Resources dictionary inherited
// from the ancestors, carried down here: the library's own lookup climbs
// /Parent and re-parses the parent (with its whole Kids array) for every
// page, which is quadratic in a flat tree of thousands of pages.
func (w *pageWalk) walk(node pdf.Value, depth int, res pdf.Value) error {
	if err := w.x.check(w.ctx); err != nil {
		return err
	}
	w.nodesLeft--
	if w.nodesLeft < 0 || depth > maxPageTreeDepth {
		return fmt.Errorf("%w: page tree is cyclic or too deep", ErrUnreadable)
	}
	if own := node.Key("Resources"); own.Kind() == pdf.Dict {
		res = own
	}
	switch node.Key("Type").Name() {
	case "Page":
		if w.out.full() {
			return errFull
		}
		if w.pages++; w.pages > w.x.lim.MaxPages {
			return fmt.Errorf("%w: more than %d pages", ErrUnreadable, w.x.lim.MaxPages)
		}
		if err := w.x.pageText(w.ctx, node, res, &w.expanded, w.out); err != nil {
			if errors.Is(err, errTooBig) || w.ctx.Err() != nil {
				return err
			}
			// One bad page does not spoil the others; a file where no
			// page reads is unreadable.
			w.failed = err
			return nil
		}
		w.read++
		return nil
	case "Pages":
		kids := node.Key("Kids")
		for i := range kids.Len() {
			if err := w.walk(kids.Index(i), depth+1, res); err != nil {
				return err
			}
		}
		return nil
	}
	if depth == 0 {
		return fmt.Errorf("%w: no page tree", ErrUnreadable)
	}
	return nil // a stray node in Kids: skip it
}
