package extract

import (
	"bytes"
	"fmt"
	"strconv"
)

// checkXref refuses cross-reference numbers that no file of this size can
// mean. The library allocates its object table from them before reading a
// single object, in a loop no context reaches, so a tiny file that claims
// millions of objects costs it gigabytes; they are bounded here instead: a
// file cannot hold more objects than half its bytes (plus slack for object
// streams), and no xref stream field is wider than 8 bytes. The numbers
// checked are the subsection headers of classic xref tables, and /Size,
// /Index and /W wherever they appear. It is a plain byte scan rather than a
// regexp because it reads the whole file before the first page.
func checkXref(data []byte) error {
	maxObjects := uint64(len(data))/2 + 1024
	tooMany := func(nums ...uint64) bool {
		var sum uint64
		for _, v := range nums {
			if v > maxObjects {
				return true
			}
			sum += v
		}
		return sum > maxObjects
	}
	// Classic tables: "xref", then lines of "start count" headers and
	// "offset gen f|n" entries, up to "trailer".
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("xref"))
		if i < 0 {
			break
		}
		off += i + len("xref")
		if i := off - len("startxref"); i >= 0 && string(data[i:i+5]) == "start" {
			continue
		}
		_, rest := nextLine(data[off:]) // the rest of the "xref" line
		for line, rest := nextLine(rest); ; line, rest = nextLine(rest) {
			f := bytes.Fields(line)
			if len(f) == 3 {
				continue // an entry
			}
			if len(f) != 2 {
				break // "trailer", or the end of a broken table
			}
			a, err1 := strconv.ParseUint(string(f[0]), 10, 64)
			b, err2 := strconv.ParseUint(string(f[1]), 10, 64)
			if err1 != nil || err2 != nil {
				break
			}
			if tooMany(a, b) {
				return fmt.Errorf("%w: xref subsection %d %d does not fit a %d-byte file", ErrUnreadable, a, b, len(data))
			}
		}
	}
	// Xref streams: /Size, /Index and /W of each dictionary that says
	// /Type /XRef (the same names mean other things elsewhere: the size of
	// an embedded file, the widths of a CID font).
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("/XRef"))
		if i < 0 {
			break
		}
		at := off + i
		off = at + len("/XRef")
		from := max(bytes.LastIndex(data[:at], []byte("obj")), 0)
		to := len(data)
		if j := bytes.Index(data[at:], []byte("stream")); j >= 0 {
			to = at + j
		}
		if err := checkXrefDict(data[from:to], tooMany, len(data)); err != nil {
			return err
		}
	}
	return nil
}

// checkXrefDict checks the numbers of one xref stream dictionary.
func checkXrefDict(dict []byte, tooMany func(...uint64) bool, size int) error {
	for _, key := range []string{"/Size", "/Index", "/W"} {
		for off := 0; ; {
			i := bytes.Index(dict[off:], []byte(key))
			if i < 0 {
				break
			}
			off += i + len(key)
			if off < len(dict) && isRegular(dict[off]) {
				continue // a longer name
			}
			nums := leadingNumbers(dict[off:], key != "/Size")
			switch key {
			case "/Size":
				if len(nums) > 0 && tooMany(nums[0]) {
					return fmt.Errorf("%w: /Size %d does not fit a %d-byte file", ErrUnreadable, nums[0], size)
				}
			case "/Index":
				for i := 0; i+1 < len(nums); i += 2 {
					if tooMany(nums[i], nums[i+1]) {
						return fmt.Errorf("%w: /Index does not fit a %d-byte file", ErrUnreadable, size)
					}
				}
			case "/W":
				for _, w := range nums {
					if w > 8 {
						return fmt.Errorf("%w: xref stream field width %d", ErrUnreadable, w)
					}
				}
			}
		}
	}
	return nil
}

// nextLine splits data at its first end of line (CR, LF or CRLF).
func nextLine(data []byte) (line, rest []byte) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil
	}
	line, rest = data[:i], data[i+1:]
	if data[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return line, rest
}

// leadingNumbers parses the unsigned integers that follow a key: one
// number, or with array set the numbers of a flat array "[n n ...]" (an
// array holding anything else gives nil). A number too large to parse
// counts as the largest.
func leadingNumbers(data []byte, array bool) []uint64 {
	data = bytes.TrimLeft(data, " \t\r\n")
	if array {
		end := bytes.IndexByte(data, ']')
		if len(data) == 0 || data[0] != '[' || end < 0 {
			return nil
		}
		var nums []uint64
		for _, f := range bytes.Fields(data[1:end]) {
			v, ok := parseCount(f)
			if !ok {
				return nil
			}
			nums = append(nums, v)
		}
		return nums
	}
	j := 0
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if v, ok := parseCount(data[:j]); ok {
		return []uint64{v}
	}
	return nil
}

// parseCount parses a run of digits, saturating at the largest uint64.
func parseCount(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		v = ^uint64(0)
	}
	return v, true
}
