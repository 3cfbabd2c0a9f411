package prompt_test

import (
	"testing"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// TestNothingBuiltAtProcessStart keeps prompt's package init small: every
// start of the handler runs it (cold start). Compiling the delimiter regexp
// there again takes it from 72 bytes in 2 allocations to 5,512 bytes in 48.
func TestNothingBuiltAtProcessStart(t *testing.T) {
	inittrace.AtMost(t, map[string]inittrace.Cost{"github.com/timebox-dev/timebox/internal/prompt": {Bytes: 1024, Allocs: 16}})
}
