package extract

import (
	"testing"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// The HTML and PDF readers (and go-readability's DOM helpers) are forks
// (third_party/, see docs/architecture.md) whose only change is that what
// upstream builds at package init (24 and 4 compiled regexps; a map of ~4,300
// glyph names) is built on first use: Go runs every linked package's init at
// each start of the handler, so that work was part of every cold start. These
// are the most their init may allocate; upstream's allocated 261,520 bytes in
// 1,693 allocations (go-readability), 218,496 bytes in 19 (pdf) and 13,344
// bytes in 129 (dom). The bounds leave no room for one regexp compiled at init
// again: the smallest, (?i)\W+, takes go-readability's init to 4,688 bytes in
// 96 allocations; dom's \s*\|\\/\|\s* takes dom's to 2,856 bytes in 35.
var initBudget = map[string]inittrace.Cost{
	"codeberg.org/readeck/go-readability/v2": {Bytes: 4096, Allocs: 90},
	"github.com/ledongthuc/pdf":              {Bytes: 1024, Allocs: 8},
	"github.com/go-shiori/dom":               {Bytes: 1024, Allocs: 16},
}

// TestReadersDoNoWorkAtProcessStart reads the init costs of this test binary,
// which links the readers as the handler does.
func TestReadersDoNoWorkAtProcessStart(t *testing.T) {
	inittrace.AtMost(t, initBudget)
}
