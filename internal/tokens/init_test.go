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

// TestRegexpEngineBuildsNothingAtProcessStart bounds the init of regexp2's
// syntax package, which compiles the split patterns (on first use, in
// vocab.go). It is a fork (third_party/regexp2, see docs/architecture.md)
// whose only change is that its Unicode category and property alias maps are
// built on first use: upstream built them at package init, at each start of
// the handler, whether or not it ever counts a token: 37,664 bytes in 74
// allocations. The fork's init allocates 2,328-2,344 bytes in 45 (the
// predefined character classes, which are exported); the bound leaves no
// room for one of those maps built at init again: the smallest (five bare
// property value aliases) takes it to 2,664 bytes in 47.
func TestRegexpEngineBuildsNothingAtProcessStart(t *testing.T) {
	const pkg = "github.com/dlclark/regexp2/v2/syntax"
	got := inittrace.OfTestBinary(t)[pkg]
	t.Logf("%s: %d bytes, %d allocs", pkg, got.Bytes, got.Allocs)
	assert.LessOrEqual(t, got.Bytes, 2560, "%s's init allocates %d bytes: does it build at process start what it could build on first use?", pkg, got.Bytes)
	assert.LessOrEqual(t, got.Allocs, 46, "%s's init makes %d allocations: does it build at process start what it could build on first use?", pkg, got.Allocs)
}
