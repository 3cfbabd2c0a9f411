package repocheck

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestArchitectureMapsEveryPackage: docs/architecture.md's package tables
// (the package column of the tables under Packages) name every Go package
// of the module, and name nothing that is not there, so that the map a
// newcomer reads first is the tree as it is. A row names its packages in
// backticks; a name ending in a slash is a folder of another kind (client/,
// proxy/) and need only exist.
func TestArchitectureMapsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	mapped := documentedNames(t, root, "docs/architecture.md", "Packages", "package")

	packages := map[string]bool{}
	for _, f := range projectFiles(t, root) {
		if strings.HasSuffix(f, ".go") && !strings.Contains(f, "node_modules/") && !strings.Contains(f, "testdata/") {
			packages[path.Dir(f)] = true
		}
	}
	for p := range packages {
		assert.True(t, mapped[p], "docs/architecture.md does not map package %s: add a row with its one-line purpose", p)
	}
	for m := range mapped {
		if strings.HasSuffix(m, "/") {
			info, err := os.Stat(filepath.Join(root, filepath.FromSlash(m)))
			assert.True(t, err == nil && info.IsDir(), "docs/architecture.md maps %s, which is not a folder", m)
			continue
		}
		assert.True(t, packages[m], "docs/architecture.md maps %s, which is not a package", m)
	}
}
