package extract

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
var initBudget = map[string]struct{ bytes, allocs int }{
	"codeberg.org/readeck/go-readability/v2": {bytes: 4096, allocs: 90},
	"github.com/ledongthuc/pdf":              {bytes: 1024, allocs: 8},
	"github.com/go-shiori/dom":               {bytes: 1024, allocs: 16},
}

// initLine is one line of GODEBUG=inittrace=1: a package's init and what it
// allocated (deterministic, unlike the clock it also prints).
var initLine = regexp.MustCompile(`(?m)^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// TestReadersDoNoWorkAtProcessStart starts this test binary again, running
// no test, with GODEBUG=inittrace=1: it links the readers as the handler
// does, so the trace shows what their init costs each start of the process.
func TestReadersDoNoWorkAtProcessStart(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := initLine.FindAllStringSubmatch(string(out), -1)
	require.NotEmpty(t, lines, "GODEBUG=inittrace=1 printed no init lines:\n%s", out)
	for _, m := range lines {
		budget, ok := initBudget[m[1]]
		if !ok {
			continue
		}
		t.Log(m[0])
		bytes, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		assert.LessOrEqual(t, bytes, budget.bytes, "%s's init allocates %d bytes: does it build at process start what it could build on first use?", m[1], bytes)
		assert.LessOrEqual(t, allocs, budget.allocs, "%s's init makes %d allocations: does it build at process start what it could build on first use?", m[1], allocs)
	}
}
