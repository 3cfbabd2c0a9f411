package tokens_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// TestNothingBuiltAtProcessStart keeps tokens' package init small: every
// start of the handler runs it (cold start), and the vocabularies are tables
// read in place, so there is nothing to build. A vocabulary built at package
// init (a map of 100,000-200,000 tokens) would not show in
// TestTheFirstCountBuildsNoVocabulary, which measures after init; here it
// would be megabytes.
func TestNothingBuiltAtProcessStart(t *testing.T) {
	const pkg = "github.com/timebox-dev/timebox/internal/tokens"
	got := inittrace.OfTestBinary(t)[pkg]
	assert.LessOrEqual(t, got.Bytes, 1024, "%s's init allocates %d bytes: does it build at process start what it could build on first use?", pkg, got.Bytes)
	assert.LessOrEqual(t, got.Allocs, 16, "%s's init makes %d allocations: does it build at process start what it could build on first use?", pkg, got.Allocs)
}
