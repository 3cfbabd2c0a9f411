package cursor_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/cursor"
)

const id = "resp_688c4e49bd888198a02ca36606345e7f0d712d55500687ca"

var (
	keyA = bytes.Repeat([]byte{0xa1}, cursor.MinKeyBytes)
	keyB = bytes.Repeat([]byte{0xb2}, cursor.MinKeyBytes)
)

func keys(t testing.TB, deployment string, ks ...[]byte) *cursor.Keys {
	t.Helper()
	k, err := cursor.NewKeys(ks, deployment)
	require.NoError(t, err)
	return k
}

func TestCursorRoundTrips(t *testing.T) {
	k := keys(t, "o3", keyA)
	c := cursor.Cursor{ResponseID: id, After: 412, Hop: 3, Offset: 2017, Received: 388, Backend: "swedencentral-ptu"}
	s := k.Seal(c)
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, s, "safe in JSON and URLs")
	assert.Less(t, len(s), 200)
	back, err := k.Open(s)
	require.NoError(t, err)
	assert.Equal(t, c, back)
}

// Every cursor that differs from one Seal made by one character, in every
// position, to every other character of its alphabet, does not open; nor
// does one cut short, lengthened, or forged from fields with no key.
func TestEditedCursorsAreNotFound(t *testing.T) {
	k := keys(t, "o3", keyA)
	good := k.Seal(cursor.Cursor{ResponseID: id, After: 3, Hop: 2, Offset: 10, Received: 4})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	opened := 0
	for i := range len(good) {
		for _, r := range alphabet + "=+/." {
			if byte(r) == good[i] {
				continue
			}
			edited := good[:i] + string(r) + good[i+1:]
			if _, err := k.Open(edited); !errors.Is(err, cursor.ErrNotFound) {
				opened++
				t.Errorf("position %d changed to %q opens", i, r)
			}
		}
	}
	assert.Zero(t, opened)

	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"", "x", good + "=", good + "A", good[:len(good)-1], good[:len(good)/2], strings.ToUpper(good),
		enc("2:" + id + ":3:2:10:4:a"), enc("1:" + id + ":3:2:10"), // the fields alone, and version 1's unsealed cursor
		enc("2:" + id + ":3:2:10:4" + strings.Repeat("\x00", 32)), strings.Repeat("A", 600),
	} {
		_, err := k.Open(s)
		assert.ErrorIs(t, err, cursor.ErrNotFound, "%q", s)
	}
}

// Fields Seal would never write do not open even when sealed: nothing of
// them reaches a URL.
func TestSealedNonsenseIsNotFound(t *testing.T) {
	k := keys(t, "o3", keyA)
	for _, c := range []cursor.Cursor{
		{ResponseID: "resp_../../x", After: 3, Hop: 2}, {ResponseID: "resp_a/b", Hop: 2}, {ResponseID: "chatcmpl-1", Hop: 2},
		{ResponseID: "", Hop: 2}, {ResponseID: "resp_" + strings.Repeat("a", 121), Hop: 2},
		{ResponseID: id, Hop: 1}, {ResponseID: id, After: -1, Hop: 2}, {ResponseID: id, Hop: 2, Offset: -5},
		{ResponseID: id, Hop: 2, Received: 1<<30 + 1},
		{ResponseID: id, Hop: 2, Backend: "East US"}, {ResponseID: id, Hop: 2, Backend: "a:b"}, {ResponseID: id, Hop: 2, Backend: strings.Repeat("a", 33)},
	} {
		_, err := k.Open(k.Seal(c))
		assert.ErrorIs(t, err, cursor.ErrNotFound, "%+v", c)
	}
}

// A cursor opens only under a key it was sealed with and for the
// deployment that sealed it. Of two keys the first seals and both open:
// a key rotated in first keeps the cursors of the one before it working.
func TestKeysAndDeployments(t *testing.T) {
	c := cursor.Cursor{ResponseID: id, After: 3, Hop: 2}
	old := keys(t, "o3", keyA).Seal(c)

	_, err := keys(t, "o3", keyB).Open(old)
	assert.ErrorIs(t, err, cursor.ErrNotFound, "another key")
	_, err = keys(t, "o4-mini", keyA).Open(old)
	assert.ErrorIs(t, err, cursor.ErrNotFound, "another deployment")

	rotated := keys(t, "o3", keyB, keyA)
	back, err := rotated.Open(old)
	require.NoError(t, err, "the second key opens what the first sealed before the rotation")
	assert.Equal(t, c, back)
	_, err = keys(t, "o3", keyA).Open(rotated.Seal(c))
	assert.ErrorIs(t, err, cursor.ErrNotFound, "the first key seals")

	for _, ks := range [][][]byte{nil, {keyA, keyB, keyA}, {keyA[:31]}} {
		_, err := cursor.NewKeys(ks, "o3")
		assert.Error(t, err, "%d keys", len(ks))
	}
	assert.NotEqual(t, cursor.RandomKey(), cursor.RandomKey())
	assert.Len(t, cursor.RandomKey(), cursor.MinKeyBytes)
}

// A response is continued only by the caller that started it (oid and
// tid), only if timebox made it, and only until its limit.
func TestCheck(t *testing.T) {
	owner := cursor.Owner{OID: "o1", TID: "t1"}
	created := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	limit := 30 * time.Minute
	meta := owner.Metadata()
	assert.NoError(t, cursor.Check(meta, created, owner, limit, created.Add(29*time.Minute)))
	for _, caller := range []cursor.Owner{{OID: "o2", TID: "t1"}, {OID: "o1", TID: "t2"}, {}} {
		assert.ErrorIs(t, cursor.Check(meta, created, caller, limit, created), cursor.ErrNotFound, "%+v", caller)
	}
	assert.ErrorIs(t, cursor.Check(map[string]string{}, created, cursor.Owner{}, limit, created), cursor.ErrNotFound, "not made by timebox")
	assert.ErrorIs(t, cursor.Check(nil, created, cursor.Owner{}, limit, created), cursor.ErrNotFound)
	anonymous := cursor.Owner{}
	assert.NoError(t, cursor.Check(anonymous.Metadata(), created, anonymous, limit, created))
	err := cursor.Check(meta, created, owner, limit, created.Add(limit))
	assert.ErrorIs(t, err, cursor.ErrExpired)
	assert.ErrorIs(t, err, cursor.ErrNotFound, "expired is not found to the caller")
	assert.False(t, errors.Is(cursor.Check(meta, created, cursor.Owner{OID: "x"}, limit, created.Add(time.Hour)), cursor.ErrExpired), "another caller's is not found, expired or not")
}

func FuzzOpen(f *testing.F) {
	k := keys(f, "o3", keyA)
	f.Add(k.Seal(cursor.Cursor{ResponseID: id, After: 3, Hop: 2}))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := k.Open(s)
		if err != nil {
			return
		}
		assert.Equal(t, s, k.Seal(c), "only what Seal made opens")
	})
}
