package api

import (
	"testing"
	"unsafe"
)

// A request's record is kept from its first line to its log line, through
// the whole wait on Azure OpenAI: it is one allocation of the 256-byte size
// class, and a field more would move every request to the 288-byte one.
func TestRecordFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(record{}); size > 256 {
		t.Errorf("record is %d bytes, over the 256-byte size class", size)
	}
}
