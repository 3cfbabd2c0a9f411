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

// A body of declared length is read into one buffer of its size, allocated
// once: io.ReadAll's 512-byte first buffer was four times a small chat
// request, and a larger body cost its chunks and a final copy.
func TestBodyOfKnownLengthIsReadIntoOneBufferOfItsSize(t *testing.T) {
	for _, n := range []int{1, 100, 4000, sizedReadLimit} {
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
		assert.Equal(t, 1.0, allocs, n)
		assert.Equal(t, n+1, cap(got), n)
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
