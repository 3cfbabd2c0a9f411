package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// TestNothingBuiltAtProcessStart keeps prompt's package init small: every
// start of the handler runs it (cold start). Compiling the delimiter regexp
// there again takes it from 72 bytes in 2 allocations to 5,512 bytes in 48.
func TestNothingBuiltAtProcessStart(t *testing.T) {
	const pkg = "github.com/timebox-dev/timebox/internal/prompt"
	got := inittrace.OfTestBinary(t)[pkg]
	assert.LessOrEqual(t, got.Bytes, 1024, "%s's init allocates %d bytes: does it build at process start what it could build on first use?", pkg, got.Bytes)
	assert.LessOrEqual(t, got.Allocs, 16, "%s's init makes %d allocations: does it build at process start what it could build on first use?", pkg, got.Allocs)
}
