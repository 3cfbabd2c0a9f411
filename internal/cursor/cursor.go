// Package cursor is the opaque token a caller continues a long answer with
// (POST /api/chat/continue and /api/chat/cancel): which response at Azure
// OpenAI, and after which of its events. It holds no secret and needs
// none, so there is nothing for operators to manage or rotate: whose the
// response is lives with the response, in the metadata it was created with
// (Owner.Metadata), and each hop checks it with a retrieve before it relays
// or cancels anything (Check). A cursor that does not decode, one naming a
// response Azure OpenAI does not have, one another caller started and one
// past its limit are all the same to a caller: not found.
//
// Editing a cursor gains nothing: another response id is another caller's
// (refused by Check) or nobody's (unknown), and another sequence number
// replays or skips the caller's own text.
package cursor

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is the answer to every cursor that may not be continued:
// malformed, tampered with, unknown, another caller's. ErrExpired (past its
// limit) wraps it.
var ErrNotFound = errors.New("cursor not found")

// ErrExpired is the cause of a cursor whose generation started longer ago
// than the limit; it wraps ErrNotFound.
var ErrExpired = errors.Join(ErrNotFound, errors.New("past its limit"))

// version starts every cursor, so that a later format can be told apart.
const version = "1"

// maxNumber bounds each number a cursor carries.
const maxNumber = 1 << 30

// Cursor names where a long answer goes on: after event After of response
// ResponseID, in hop Hop (2 for the first continue), Offset bytes of text
// into the answer (what the hops before relayed: where the rest starts
// when it is read whole, from a retrieve, because the stream cannot be
// resumed).
type Cursor struct {
	ResponseID string
	After      int
	Hop        int
	Offset     int
}

// String encodes c for the wire: URL-safe base64 of the version and the
// fields.
func (c Cursor) String() string {
	s := strings.Join([]string{version, c.ResponseID, strconv.Itoa(c.After), strconv.Itoa(c.Hop), strconv.Itoa(c.Offset)}, ":")
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// responseID matches Azure OpenAI's response ids (resp_ and hex digits),
// with room to spare; nothing else reaches a URL.
var responseID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^resp_[A-Za-z0-9]{1,120}$`) })

// Parse decodes a cursor; anything but one String made is ErrNotFound.
func Parse(s string) (Cursor, error) {
	if len(s) > 256 {
		return Cursor{}, ErrNotFound
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrNotFound
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 5 || parts[0] != version || !responseID().MatchString(parts[1]) {
		return Cursor{}, ErrNotFound
	}
	var n [3]int
	for i, p := range parts[2:] {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > maxNumber || strconv.Itoa(v) != p {
			return Cursor{}, ErrNotFound
		}
		n[i] = v
	}
	if n[1] < 2 {
		return Cursor{}, ErrNotFound // the first hop is the create's
	}
	return Cursor{ResponseID: parts[1], After: n[0], Hop: n[1], Offset: n[2]}, nil
}

// Owner is who started a generation: the caller's object and tenant ids
// (both empty for an anonymous caller, AUTH_MODE=none).
type Owner struct {
	OID, TID string
}

// The metadata keys a response is created with. Azure OpenAI stores
// metadata with the response (at most 16 keys, values of at most 512
// characters) and every retrieve returns it.
const (
	keyMadeBy = "timebox"
	keyOID    = "timebox_oid"
	keyTID    = "timebox_tid"
)

// Metadata is what a response is created with so that Check can tell its
// owner: a mark that timebox made it, and the owner's ids.
func (o Owner) Metadata() map[string]string {
	return map[string]string{keyMadeBy: version, keyOID: o.OID, keyTID: o.TID}
}

// Check reports whether caller may continue a response created with
// metadata at createdAt: nil when it was made by timebox for the same oid
// and tid and started less than limit before now; ErrExpired past its
// limit (its owner's, still: the caller may have it cancelled); else
// ErrNotFound.
func Check(metadata map[string]string, createdAt time.Time, caller Owner, limit time.Duration, now time.Time) error {
	if metadata[keyMadeBy] != version || metadata[keyOID] != caller.OID || metadata[keyTID] != caller.TID {
		return ErrNotFound
	}
	if !now.Before(createdAt.Add(limit)) {
		return ErrExpired
	}
	return nil
}
