package repocheck

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestArchitectureImportsAreTheCodes: docs/architecture.md's Imports table
// says, for every package that imports one of the module's own packages,
// which ones its non-test files import, read here from the code: a new
// edge, or one gone, fails until the map says so.
func TestArchitectureImportsAreTheCodes(t *testing.T) {
	root := repoRoot(t)
	const module = "github.com/timebox-dev/timebox/"
	code := map[string]map[string]bool{}
	for _, f := range projectFiles(t, root) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains(f, "node_modules/") || strings.Contains(f, "testdata/") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(f)), nil, parser.ImportsOnly)
		require.NoError(t, err, f)
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				pkg := path.Dir(f)
				if code[pkg] == nil {
					code[pkg] = map[string]bool{}
				}
				code[pkg][strings.TrimPrefix(rest, "internal/")] = true
			}
		}
	}

	text := readFile(t, root, "docs/architecture.md")
	_, table, ok := strings.Cut(text, "### Imports\n")
	require.True(t, ok, "docs/architecture.md has an Imports section")
	documented := map[string]map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		documented[pkg] = map[string]bool{}
		for _, name := range strings.Split(cells[2], ",") {
			documented[pkg][strings.Trim(strings.TrimSpace(name), "`")] = true
		}
	}
	for pkg, imports := range code {
		assert.Equal(t, sortedKeys(imports), sortedKeys(documented[pkg]),
			"docs/architecture.md, Imports: the row of %s says what its code imports", pkg)
	}
	for pkg := range documented {
		assert.Contains(t, code, pkg, "docs/architecture.md, Imports: %s imports none of the module's packages, or is not one", pkg)
	}
}
