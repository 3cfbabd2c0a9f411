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
