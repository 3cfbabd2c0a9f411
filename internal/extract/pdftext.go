package extract

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ledongthuc/pdf"
)

// pageText writes one page's text to out. Panics inside the library for this
// page are recovered into an error.
func (x *extractor) pageText(ctx context.Context, page, res pdf.Value, expanded *int64, out *sink) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == errFull {
				return
			}
			if e, ok := r.(error); ok && (errors.Is(e, errTooBig) || errors.Is(e, ctx.Err())) {
				err = e
				return
			}
			err = fmt.Errorf("%w: page: %v", ErrUnreadable, r)
		}
	}()
	contents := page.Key("Contents")
	fonts := map[string]*pdf.Font{}
	fontDict := res.Key("Font")
	for _, name := range fontDict.Keys() {
		f := pdf.Font{V: fontDict.Key(name)}
		fonts[name] = &f
		if err := x.drain(ctx, f.V.Key("ToUnicode"), expanded); err != nil {
			return err
		}
	}
	if contents.Kind() == pdf.Array {
		for i := range contents.Len() {
			if err := x.drain(ctx, contents.Index(i), expanded); err != nil {
				return err
			}
		}
	} else if err := x.drain(ctx, contents, expanded); err != nil {
		return err
	}
	if contents.IsNull() {
		return nil
	}

	// The operators below are the text-showing subset of ISO 32000-1,
	// 9.4, as the library's own Page.GetPlainText handles them; it is
	// re-done here so that ctx is checked between operators.
	var enc pdf.TextEncoding = nopEncoding{}
	ops := 0
	out.separate("\n")
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		if out.full() {
			panic(errFull) // the text cap is reached: read no further
		}
		ops++
		if ops%4096 == 0 {
			if err := x.check(ctx); err != nil {
				panic(err)
			}
		}
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT", "T*", "Tm":
			out.separate("\n")
		case "Td", "TD":
			// A move down starts a line; a move along the line is
			// usually a word or a column.
			if len(args) == 2 && args[1].Float64() != 0 {
				out.separate("\n")
			} else {
				out.separate(" ")
			}
		case "Tf":
			enc = nopEncoding{}
			if len(args) == 2 {
				if f, ok := fonts[args[0].Name()]; ok {
					enc = f.Encoder()
				}
			}
		case "Tj", "'", "\"":
			if op != "Tj" {
				out.separate("\n")
			}
			if len(args) > 0 {
				out.WriteString(enc.Decode(args[len(args)-1].RawString()))
			}
		case "TJ":
			if len(args) == 1 {
				for i := range args[0].Len() {
					if v := args[0].Index(i); v.Kind() == pdf.String {
						out.WriteString(enc.Decode(v.RawString()))
					} else if v.Float64() < -200 {
						// A wide negative adjustment is how many
						// producers set a word space.
						out.WriteString(" ")
					}
				}
			}
		}
	})
	return nil
}

// drain decompresses stream v once, counting its bytes against expanded,
// checking ctx every chunk and following its tokens with a contentGuard, so
// that Interpret later reads a stream whose size and tokens are known to be
// within the limits. A value that is not a stream is skipped.
func (x *extractor) drain(ctx context.Context, v pdf.Value, expanded *int64) error {
	if v.Kind() != pdf.Stream {
		return nil
	}
	rc := v.Reader()
	defer rc.Close()
	buf := make([]byte, 32<<10)
	var guard contentGuard
	for {
		if err := x.check(ctx); err != nil {
			return err
		}
		n, err := rc.Read(buf)
		*expanded -= int64(n)
		if *expanded < 0 {
			return fmt.Errorf("%w: %w: PDF streams over %d bytes", ErrUnreadable, errTooBig, x.lim.MaxExpandedBytes)
		}
		if gerr := guard.write(buf[:n]); gerr != nil {
			return gerr
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: stream: %v", ErrUnreadable, err)
		}
	}
}

// nopEncoding passes font codes through as bytes, for text shown before any
// font is set or in a font the page does not declare.
type nopEncoding struct{}

func (nopEncoding) Decode(raw string) string { return raw }
