package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// Every setting the code reads and every error code the API can answer with
// is documented, and the docs name nothing else. The code side is read from
// the source (not from a list kept beside it), so a new setting or code fails
// here until it is written into docs/operations.md or docs/api.md.

var (
	envName     = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)
	envWord     = regexp.MustCompile(`^[A-Z][A-Z0-9]{2,}$`)
	getter      = regexp.MustCompile(`(?i)env|^get$|^duration$|^integer$|^boolean$|^flag$|^setting$`)
	shellRead   = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*):?[-=]`)
	nodeRead    = regexp.MustCompile(`process\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])`)
	errorCode   = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	backticked  = regexp.MustCompile("`([^`]+)`")
	osVariables = []string{"PATH", "HOME"} // the process's, not ours
)

func TestEverySettingIsDocumented(t *testing.T) {
	root := repoRoot(t)
	read := settingsRead(t, root)
	documented := documentedNames(t, root, "docs/operations.md", "Settings", "name")
	require.NotEmpty(t, read)
	for _, name := range sortedKeys(read) {
		if !documented[name] {
			t.Errorf("%s is read by %s but not in the settings tables of docs/operations.md", name, read[name])
		}
	}
	for _, name := range sortedKeys(documented) {
		if _, ok := read[name]; !ok {
			t.Errorf("docs/operations.md documents %s, which no code reads", name)
		}
	}
}

func TestEveryErrorCodeIsDocumented(t *testing.T) {
	root := repoRoot(t)
	exact, suffixes := handlerErrorCodes(t, root)
	documented := documentedNames(t, root, "docs/api.md", "Errors", "code")
	require.NotEmpty(t, exact)
	for _, code := range sortedKeys(exact) {
		if !documented[code] {
			t.Errorf("the handler answers %s (%s) but the error table of docs/api.md does not list it", code, exact[code])
		}
	}
	for _, suffix := range sortedKeys(suffixes) {
		n := 0
		for code := range documented {
			if strings.HasSuffix(code, suffix) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("the handler builds codes ending in %s (%s); docs/api.md lists none", suffix, suffixes[suffix])
		}
	}
	for _, code := range sortedKeys(documented) {
		_, ok := exact[code]
		for suffix := range suffixes {
			ok = ok || strings.HasSuffix(code, suffix)
		}
		if !ok {
			t.Errorf("docs/api.md lists %s, which the handler never answers", code)
		}
	}
}

// settingsRead maps each environment variable the project reads to a file
// that reads it: upper-case string literals in Go (getenv's argument, or a
// constant naming it), ${NAME:-default} in shell scripts, process.env.NAME
// in JavaScript. Tests are left out: what they set is not a setting. The
// libraries' own variables (MSAL reads MSI_ENDPOINT, REGION_NAME, ...) are
// not ours, and they sit in the module cache, not here; a library variable
// the handler itself reads (IDENTITY_ENDPOINT) is found in the handler's code.
func settingsRead(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range projectFiles(t, root) {
		text, ok := readText(t, root, f)
		if !ok || strings.Contains(f, "/testdata/") {
			continue
		}
		switch {
		case strings.HasSuffix(f, "_test.go"):
		case strings.HasSuffix(f, ".go"):
			for _, name := range goSettings(t, root, f) {
				out[name] = f
			}
		case strings.HasSuffix(f, ".sh") || f == ".ci/run":
			for _, m := range shellRead.FindAllStringSubmatch(text, -1) {
				out[m[1]] = f
			}
		case strings.HasSuffix(f, ".mjs") || strings.HasSuffix(f, ".js") || strings.HasSuffix(f, ".ts"):
			for _, m := range nodeRead.FindAllStringSubmatch(text, -1) {
				out[m[1]+m[2]] = f
			}
		}
	}
	for _, v := range osVariables {
		delete(out, v)
	}
	return out
}

// goSettings returns the names a Go file reads from the environment: every
// upper-case string literal with an underscore (AZURE_OPENAI_ENDPOINT), and
// a one-word one (TOKENIZER) when it is the first argument of a getter
// (getenv, os.Getenv, os.LookupEnv, config's get, duration, integer, ...).
func goSettings(t *testing.T, root, rel string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.SkipObjectResolution)
	require.NoError(t, err, rel)
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, ok := stringValue(n); ok && envName.MatchString(s) {
				out = append(out, s)
			}
		case *ast.CallExpr:
			if len(n.Args) > 0 && getter.MatchString(typeName(n.Fun)) {
				if s, ok := stringValue(n.Args[0]); ok && envWord.MatchString(s) {
					out = append(out, s)
				}
			}
		}
		return true
	})
	return out
}

func stringValue(n ast.Node) (string, bool) {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// handlerErrorCodes reads, from the non-test Go files of the packages linked
// into the handler binary, every error code it can answer with: the value
// given to a field named code (a literal, a constant, or an expression that
// ends in a literal suffix such as step + "_timeout"), and the second element
// of a positional Error{status, code, message} literal. exact maps codes to
// a file; suffixes maps the suffixes of codes built at run time.
func handlerErrorCodes(t *testing.T, root string) (exact, suffixes map[string]string) {
	t.Helper()
	exact, suffixes = map[string]string{}, map[string]string{}
	type pkg struct {
		dir   string
		files []*ast.File
		names []string
	}
	var pkgs []pkg
	for _, dir := range handlerPackageDirs(t, root) {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		p := pkg{dir: dir}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			require.NoError(t, err, e.Name())
			p.files = append(p.files, f)
			p.names = append(p.names, e.Name())
		}
		pkgs = append(pkgs, p)
	}
	// A code may be a constant of another package (apiwire.CodeNotFound):
	// the string constants of every handler package, by name.
	consts := map[string]string{}
	for _, p := range pkgs {
		stringConsts(p.files, consts)
	}
	for _, p := range pkgs {
		rel, _ := filepath.Rel(root, p.dir)
		codesOf(p.files, p.names, filepath.ToSlash(rel), consts, exact, suffixes)
	}
	return exact, suffixes
}

// handlerPackageDirs are the folders of this module's packages that are
// linked into the handler binary.
func handlerPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/handler")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps ./cmd/handler")
	dirs := strings.Fields(string(out))
	require.NotEmpty(t, dirs)
	return dirs
}

// stringConsts adds the string constants declared in files to consts.
func stringConsts(files []*ast.File, consts map[string]string) {
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringValue(vs.Values[i]); ok {
								consts[name.Name] = v
							}
						}
					}
				}
			}
		}
	}
}

func codesOf(files []*ast.File, names []string, dir string, consts, exact, suffixes map[string]string) {
	add := func(e ast.Expr, where string) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if v, ok := stringValue(e); ok && errorCode.MatchString(v) {
				exact[v] = where
			}
		case *ast.Ident:
			if v, ok := consts[e.Name]; ok && errorCode.MatchString(v) {
				exact[v] = where
			}
		case *ast.SelectorExpr:
			if v, ok := consts[e.Sel.Name]; ok && errorCode.MatchString(v) {
				exact[v] = where
			}
		case *ast.BinaryExpr:
			if v, ok := stringValue(e.Y); ok && e.Op == token.ADD {
				suffixes[v] = where
			}
		}
	}
	isCode := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return strings.EqualFold(e.Name, "code")
		case *ast.SelectorExpr:
			return strings.EqualFold(e.Sel.Name, "code")
		}
		return false
	}
	for i, f := range files {
		where := path.Join(dir, names[i])
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if isCode(n.Key) {
					add(n.Value, where)
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if isCode(lhs) && i < len(n.Rhs) {
						add(n.Rhs[i], where)
					}
				}
			case *ast.CompositeLit:
				if typeName(n.Type) == "Error" && len(n.Elts) >= 2 {
					if _, keyed := n.Elts[0].(*ast.KeyValueExpr); !keyed {
						add(n.Elts[1], where)
					}
				}
			}
			return true
		})
	}
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// documentedNames reads the backticked names in the column headed column of
// every table under the heading section (down to the next heading of the
// same or a higher level) of a doc.
func documentedNames(t *testing.T, root, doc, section, column string) map[string]bool {
	t.Helper()
	text, _ := readText(t, root, doc)
	lines := strings.Split(text, "\n")
	start, level := -1, 0
	for i, l := range lines {
		if h := strings.TrimLeft(l, "#"); h != l && strings.TrimSpace(h) == section {
			start, level = i, len(l)-len(h)
			break
		}
	}
	require.NotEqual(t, -1, start, "%s has no heading %q", doc, section)
	out := map[string]bool{}
	col := -1
	for _, l := range lines[start+1:] {
		if h := strings.TrimLeft(l, "#"); h != l && strings.HasPrefix(h, " ") && len(l)-len(h) <= level {
			break
		}
		if !strings.HasPrefix(l, "|") {
			col = -1
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if col == -1 {
			col = slices.Index(cells, column)
			if col == -1 {
				col = -2 // a table without that column
			}
			continue
		}
		if col < 0 || col >= len(cells) || strings.HasPrefix(cells[col], "---") {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[col], -1) {
			out[m[1]] = true
		}
	}
	require.NotEmpty(t, out, "%s: no table with a %q column under %q", doc, column, section)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// namedTest is a Go test, benchmark or fuzz target as the docs name one
// (TestErrorTable, api.BenchmarkChat).
var namedTest = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)`)

// TestNamedTestsExist: the docs name the tests that hold a promise and the
// benchmarks behind a figure, so that a reader can run them; a test renamed
// or removed must take its name out of the docs with it.
func TestNamedTestsExist(t *testing.T) {
	root := repoRoot(t)
	defined := map[string]bool{}
	funcName := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)
	var docs []string
	for _, f := range projectFiles(t, root) {
		switch {
		case strings.Contains(f, "node_modules/"):
		case strings.HasSuffix(f, "_test.go"):
			text, _ := readText(t, root, f)
			for _, m := range funcName.FindAllStringSubmatch(text, -1) {
				defined[m[1]] = true
			}
		case strings.HasSuffix(f, ".md"):
			docs = append(docs, f)
		}
	}
	require.NotEmpty(t, defined)
	for _, f := range docs {
		text, _ := readText(t, root, f)
		for _, m := range namedTest.FindAllStringSubmatch(text, -1) {
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no Go test file defines", f, m[1])
			}
		}
	}
}

// defaultNotInConfig are the documented defaults that package config does
// not hold as a value, each with where the default lives instead.
var defaultNotInConfig = map[string]string{
	"AZURE_AUTHORITY_HOST": "unset, package caller uses Entra ID's public authority",
}

// TestDocumentedDefaultsAreTheDefaults: each literal default in the
// settings table of docs/operations.md is what the handler uses when the
// setting is unset. Setting a variable to its documented default must leave
// the loaded configuration as it was; a default that drifted (perf work
// retuning a limit, say) changes it, and fails here.
func TestDocumentedDefaultsAreTheDefaults(t *testing.T) {
	root := repoRoot(t)
	base := map[string]string{"AZURE_OPENAI_ENDPOINT": "https://contoso.openai.azure.com", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini"}
	load := func(extra map[string]string) (config.Config, error) {
		return config.Load(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		})
	}
	want, err := load(nil)
	require.NoError(t, err)
	defaults := documentedDefaults(t, root)
	require.NotEmpty(t, defaults)
	for _, name := range sortedKeys(defaults) {
		value := defaults[name]
		if _, ok := defaultNotInConfig[name]; ok {
			continue
		}
		got, err := load(map[string]string{name: value})
		if !assert.NoError(t, err, "%s=%s, its documented default, is refused", name, value) {
			continue
		}
		assert.Equal(t, want, got, "%s=%s (docs/operations.md's default) is not what the handler uses when it is unset", name, value)
	}
}

// documentedDefaults reads the settings table of docs/operations.md: each
// name whose default is one backticked value (not "required", "by model" or
// "empty").
func documentedDefaults(t *testing.T, root string) map[string]string {
	t.Helper()
	text, _ := readText(t, root, "docs/operations.md")
	// The first table of "## Settings", before its "###" subsections (whose
	// tables name who reads a variable, not its default).
	start := strings.Index(text, "\n## Settings\n")
	require.NotEqual(t, -1, start, "docs/operations.md has no Settings section")
	text = text[start:]
	if end := strings.Index(text, "\n### "); end >= 0 {
		text = text[:end]
	}
	out := map[string]string{}
	row := regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\| `([^`]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}
