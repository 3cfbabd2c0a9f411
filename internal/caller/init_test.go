package caller

import (
	"testing"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// TestCallerBuildsNothingAtProcessStart: the caller package is linked into every
// start of the handler, whatever its AUTH_MODE, and a start is what a cold
// instance's first user waits for. Its tenant-id regexp is compiled on first
// use; compiled at init it cost 15,592 bytes in 148 allocations.
func TestCallerBuildsNothingAtProcessStart(t *testing.T) {
	inittrace.AtMost(t, map[string]inittrace.Cost{"github.com/timebox-dev/timebox/internal/caller": {Bytes: 1024, Allocs: 16}})
}
