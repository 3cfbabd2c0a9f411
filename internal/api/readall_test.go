package api

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small body of declared length is read into one buffer of its size,
// allocated once: io.ReadAll's 512-byte first buffer was four times a small
// chat request. A larger one ends in a buffer of its size too (no spare
// room), grown as its bytes came.
func TestBodyOfKnownLengthIsReadIntoOneBufferOfItsSize(t *testing.T) {
	for _, n := range []int{1, 100, 4000, firstReadSize, firstReadSize + 1, sizedReadLimit} {
		body := strings.Repeat("x", n)
		r := strings.NewReader(body)
		var got []byte
		allocs := testing.AllocsPerRun(10, func() {
			r.Reset(body)
			var err error
			got, err = readAll(r, int64(n))
			require.NoError(t, err)
		})
		assert.Equal(t, body, string(got), n)
		if n <= firstReadSize {
			assert.Equal(t, 1.0, allocs, n)
		}
		assert.Equal(t, n+1, cap(got), n)
	}
}

// stalledBody is an upload that sent a few bytes of what it declared and
// then stalled until the read deadline: the buffer offered to each read is
// what the handler holds meanwhile.
type stalledBody struct {
	sent    []byte
	largest int // the largest buffer offered to a read
}

func (s *stalledBody) Read(p []byte) (int, error) {
	s.largest = max(s.largest, cap(p))
	if len(s.sent) == 0 {
		return 0, errors.New("i/o timeout")
	}
	n := copy(p, s.sent)
	s.sent = s.sent[n:]
	return n, nil
}

// A declared length is the caller's word, not bytes: an upload that
// declares 64 KiB and stalls after a few bytes holds no more than net/http's
// own read buffer while it stalls (a buffer of the declared size allocated
// up front held 64 KiB per stalled connection for the whole budget).
func TestStalledBodyHoldsNoMoreThanItSent(t *testing.T) {
	for _, sent := range []int{10, firstReadSize, 3 * firstReadSize} {
		body := &stalledBody{sent: []byte(strings.Repeat("x", sent))}
		got, err := readAll(body, sizedReadLimit)
		require.Error(t, err)
		assert.Len(t, got, sent)
		assert.LessOrEqual(t, cap(got), max(firstReadSize+1, 2*sent), "held while the upload stalled after %d bytes", sent)
		assert.LessOrEqual(t, body.largest, max(firstReadSize+1, 2*sent), sent)
	}
}

// Every body is read whole, whatever its length says: none (chunked), more
// than the limit, less or more than arrives; and a failed read fails.
func TestBodyIsReadWhole(t *testing.T) {
	body := strings.Repeat("abc", 30000)
	for _, declared := range []int64{-1, 0, int64(len(body)), 10, sizedReadLimit} {
		got, err := readAll(iotest.HalfReader(strings.NewReader(body)), declared)
		require.NoError(t, err, declared)
		assert.Equal(t, body, string(got), declared)
	}
	broken := errors.New("connection reset")
	_, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(broken)), 100)
	assert.ErrorIs(t, err, broken)
}
