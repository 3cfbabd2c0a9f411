package aoai

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sizeClass is the size the Go allocator gives a byte slice of n bytes (an
// append rounds a new slice's capacity up to its size class).
func sizeClass(n int) int { return cap(append([]byte(nil), make([]byte, n)...)) }

// The read buffer of an upstream connection is of another size class than
// its write buffer, so that read buffers, untouched while a request waits,
// do not share pages with the written ones (see readBufferSize). Both stay
// small: a request held on Azure OpenAI keeps both.
func TestConnectionBuffersDoNotSharePages(t *testing.T) {
	tr := newTransport().t
	assert.Equal(t, writeBufferSize, tr.WriteBufferSize)
	assert.Equal(t, readBufferSize, tr.ReadBufferSize)
	assert.NotEqual(t, sizeClass(tr.WriteBufferSize), sizeClass(tr.ReadBufferSize), "the read and write buffers are allocated from the same pages")
	assert.LessOrEqual(t, tr.WriteBufferSize+tr.ReadBufferSize, 2<<10+256)
}
