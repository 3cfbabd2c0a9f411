package cursor_test

import (
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

func TestCursorRoundTrips(t *testing.T) {
	c := cursor.Cursor{ResponseID: id, After: 412, Hop: 3, Offset: 2017}
	s := c.String()
	assert.NotContains(t, s, id, "opaque on the wire")
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, s, "safe in JSON and URLs")
	back, err := cursor.Parse(s)
	require.NoError(t, err)
	assert.Equal(t, c, back)
}

// Anything but a cursor String made is not found: nothing of it reaches
// a URL.
func TestTamperedCursorsAreNotFound(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := cursor.Cursor{ResponseID: id, After: 3, Hop: 2, Offset: 10}.String()
	for _, s := range []string{
		"", "x", good + "=", good[:len(good)-2], strings.ToUpper(good),
		enc("2:" + id + ":3:2:0"), enc("1:" + id + ":-1:2:0"), enc("1:" + id + ":03:2:0"), enc("1:" + id + ":1073741825:2:0"),
		enc("1:" + id + ":3:2"), enc("1:" + id + ":3:2:0:0"), enc("1:" + id + ":3:1:0"), enc("1:" + id + ":3:2:-5"),
		enc("1:resp_../../x:3:2:0"), enc("1:resp_a/b:3:2:0"), enc("1:chatcmpl-1:3:2:0"), enc("1::3:2:0"),
		enc("1:resp_" + strings.Repeat("a", 121) + ":3:2:0"), strings.Repeat("A", 300),
	} {
		_, err := cursor.Parse(s)
		assert.ErrorIs(t, err, cursor.ErrNotFound, "%q", s)
	}
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

func FuzzParse(f *testing.F) {
	f.Add(cursor.Cursor{ResponseID: id, After: 3, Hop: 2}.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := cursor.Parse(s)
		if err != nil {
			return
		}
		back, err := cursor.Parse(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, back)
	})
}
