// Package cursor is the token a caller continues a long answer with
// (POST /api/chat/continue and /api/chat/cancel): which response at Azure
// OpenAI, after which of its events, in which hop, and how much of the
// answer the hops before it delivered.
//
// A cursor is sealed: its fields are followed by an HMAC-SHA256 of them
// and of the deployment that made it, under a key every instance shares
// (CURSOR_KEYS). So a cursor is one that timebox made, for this
// deployment, exactly as it made it: one edited in any way (a character
// changed, cut short, forged, another deployment's) does not open, and is
// not found. What billing reads of a cursor (the hop, what was delivered
// before it) is therefore timebox's own number, never the caller's.
//
// Whose a response is lives with the response, in the metadata it was
// created with (Owner.Metadata), and each hop checks it with a retrieve
// before it relays or cancels anything (Check): a sealed cursor another
// caller was handed is still not theirs to continue.
package cursor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
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

// version starts every cursor's fields, so that a later format can be told
// apart (version 1 was unsealed).
const version = "2"

// maxNumber bounds each number a cursor carries.
const maxNumber = 1 << 30

// maxLength bounds a cursor's text: one is well under 200 characters.
const maxLength = 512

// Cursor names where a long answer goes on: after event After of response
// ResponseID, in hop Hop (2 for the first continue), Offset bytes of text
// into the answer (what the hops before relayed: where the rest starts
// when it is read whole, from a retrieve, because the stream cannot be
// resumed), Received completion tokens into it (what the hops before
// delivered, as counted: where the quota charges the next hop from); at
// the pool's backend Backend, which holds the response.
type Cursor struct {
	ResponseID string
	After      int
	Hop        int
	Offset     int
	Received   int
	// Backend names the backend of the pool (AZURE_OPENAI_BACKENDS) that
	// created the response: a continue, a cancel and the settlement go
	// there, from any instance, and nowhere else. It is sealed with the
	// rest, so a caller cannot send a hop to another backend.
	Backend string
}

// fields are c's fields as sealed, in order. A new field goes at the end
// here and in parse, with the version raised when old cursors must not
// open.
func (c Cursor) fields() []string {
	return []string{version, c.ResponseID, strconv.Itoa(c.After), strconv.Itoa(c.Hop), strconv.Itoa(c.Offset), strconv.Itoa(c.Received), c.Backend}
}

// backendName matches a backend's name (config's rule), or none.
var backendName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]{0,32}$`) })

// responseID matches Azure OpenAI's response ids (resp_ and hex digits),
// with room to spare; nothing else reaches a URL.
var responseID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^resp_[A-Za-z0-9]{1,120}$`) })

// parse reads what fields wrote; anything else is ErrNotFound.
func parse(s string) (Cursor, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 7 || parts[0] != version || !responseID().MatchString(parts[1]) || !backendName().MatchString(parts[6]) {
		return Cursor{}, ErrNotFound
	}
	var n [4]int
	for i, p := range parts[2:6] {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > maxNumber || strconv.Itoa(v) != p {
			return Cursor{}, ErrNotFound
		}
		n[i] = v
	}
	if n[1] < 2 {
		return Cursor{}, ErrNotFound // the first hop is the create's
	}
	return Cursor{ResponseID: parts[1], After: n[0], Hop: n[1], Offset: n[2], Received: n[3], Backend: parts[6]}, nil
}

// MinKeyBytes is the least length of a key: 256 bits, HMAC-SHA256's
// output.
const MinKeyBytes = 32

// Keys seal cursors and open them. The first key seals; every key opens,
// so that a key can be rotated without breaking the answers in flight
// (docs/operations.md, "The cursor key"). Keys is safe for concurrent use.
type Keys struct {
	keys       [][]byte
	deployment string
}

// NewKeys returns the Keys of keys (one or two, each at least MinKeyBytes)
// for the deployment the cursors are bound to: a cursor sealed for one
// deployment does not open for another, even under the same key.
func NewKeys(keys [][]byte, deployment string) (*Keys, error) {
	if len(keys) == 0 || len(keys) > 2 {
		return nil, fmt.Errorf("cursor: %d keys: one or two are needed", len(keys))
	}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("cursor: key %d has %d bytes: at least %d are needed", i+1, len(k), MinKeyBytes)
		}
	}
	return &Keys{keys: keys, deployment: deployment}, nil
}

// RandomKey is a fresh key, for a process that was given none: its
// cursors open on this process only, and only until it stops.
func RandomKey() []byte {
	k := make([]byte, MinKeyBytes)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24 and later)
	return k
}

// encoding is strict: a cursor has one spelling, so changing any one of
// its characters changes what it decodes to, or it does not decode.
var encoding = base64.RawURLEncoding.Strict()

// Seal is c on the wire: URL-safe base64 of its fields and their MAC.
func (k *Keys) Seal(c Cursor) string {
	fields := strings.Join(c.fields(), ":")
	return encoding.EncodeToString(append([]byte(fields), k.mac(k.keys[0], fields)...))
}

// Open is the cursor s, when Seal made it under one of the keys for this
// deployment; anything else is ErrNotFound.
func (k *Keys) Open(s string) (Cursor, error) {
	if len(s) > maxLength {
		return Cursor{}, ErrNotFound
	}
	b, err := encoding.DecodeString(s)
	if err != nil || len(b) <= sha256.Size {
		return Cursor{}, ErrNotFound
	}
	fields, sum := string(b[:len(b)-sha256.Size]), b[len(b)-sha256.Size:]
	for _, key := range k.keys {
		if hmac.Equal(sum, k.mac(key, fields)) {
			return parse(fields)
		}
	}
	return Cursor{}, ErrNotFound
}

// mac is the HMAC-SHA256 of fields under key, for the deployment: a
// purpose label first, so that the key's MAC of anything else is never a
// cursor's, and the deployment's name with its length, so that no two
// deployments' inputs run together.
func (k *Keys) mac(key []byte, fields string) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "timebox cursor\x00%d:%s\x00%s", len(k.deployment), k.deployment, fields)
	return m.Sum(nil)
}

// Owner is who started a generation: the caller's object and tenant ids
// (both empty for an anonymous caller, AUTH_MODE=none).
type Owner struct {
	OID, TID string
}

// madeBy marks a response timebox made, in its metadata.
const madeBy = "1"

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
	return map[string]string{keyMadeBy: madeBy, keyOID: o.OID, keyTID: o.TID}
}

// Check reports whether caller may continue a response created with
// metadata at createdAt: nil when it was made by timebox for the same oid
// and tid and started less than limit before now; ErrExpired past its
// limit (its owner's, still: the caller may have it cancelled); else
// ErrNotFound.
func Check(metadata map[string]string, createdAt time.Time, caller Owner, limit time.Duration, now time.Time) error {
	if metadata[keyMadeBy] != madeBy || metadata[keyOID] != caller.OID || metadata[keyTID] != caller.TID {
		return ErrNotFound
	}
	if !now.Before(createdAt.Add(limit)) {
		return ErrExpired
	}
	return nil
}
