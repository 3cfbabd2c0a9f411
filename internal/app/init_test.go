package app

import (
	"testing"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// BenchmarkPackageInit reports what the init of the handler's own packages
// and of the libraries that used to build the most there takes at each
// start of a binary that links them as the handler does (this test binary,
// which does not link their tests): every cold start pays it, whether or
// not the instance ever reads a document or asks for a token.
func BenchmarkPackageInit(b *testing.B) {
	inittrace.Report(b,
		"github.com/timebox-dev/timebox/internal/caller",
		"github.com/timebox-dev/timebox/internal/extract",
		"github.com/timebox-dev/timebox/internal/prompt",
		"github.com/timebox-dev/timebox/internal/tokens",
		"codeberg.org/readeck/go-readability/v2",
		"github.com/go-shiori/dom",
		"github.com/ledongthuc/pdf",
		"github.com/AzureAD/microsoft-authentication-library-for-go/apps/internal/oauth/ops/authority",
	)
}
