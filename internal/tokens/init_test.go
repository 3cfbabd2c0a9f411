package tokens_test

import (
	"testing"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// TestNothingBuiltAtProcessStart keeps tokens' package init small: every
// start of the handler runs it (cold start), and the vocabularies are tables
// read in place, so there is nothing to build. A vocabulary built at package
// init (a map of 100,000-200,000 tokens) would not show in
// TestTheFirstCountBuildsNoVocabulary, which measures after init; here it
// would be megabytes.
func TestNothingBuiltAtProcessStart(t *testing.T) {
	inittrace.AtMost(t, map[string]inittrace.Cost{"github.com/timebox-dev/timebox/internal/tokens": {Bytes: 1024, Allocs: 16}})
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
	inittrace.AtMost(t, map[string]inittrace.Cost{"github.com/dlclark/regexp2/v2/syntax": {Bytes: 2560, Allocs: 46}})
}
