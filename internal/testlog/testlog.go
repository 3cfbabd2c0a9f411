// Package testlog holds what a test needs to read the logs of code that
// writes them from goroutines of its own (a server's handlers, run's
// shutdown).
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that is safe for concurrent use: give it to a
// logger as its writer, and read what was written with String while the
// writers may still run. The zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
