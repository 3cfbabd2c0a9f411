package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTestSleepsOnTheWallClock: a test waits on events, never on the wall
// clock (docs/testing.md). A time.Sleep in a test is allowed
// only inside a testing/synctest bubble, the function literal passed to
// synctest.Test, where it advances virtual time and costs nothing. A helper
// outside that literal that only bubbles call says so in a comment naming
// the bubble, on the line of the sleep or the line above: the check reads
// the code as written, not as it runs.
func TestNoTestSleepsOnTheWallClock(t *testing.T) {
	root := repoRoot(t)
	for _, f := range projectFiles(t, root) {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f)), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		var bubbles [][2]token.Pos
		var sleeps []*ast.CallExpr
		ast.Inspect(file, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch {
			case isCall(call, "synctest", "Test"):
				for _, arg := range call.Args {
					if lit, ok := arg.(*ast.FuncLit); ok {
						bubbles = append(bubbles, [2]token.Pos{lit.Pos(), lit.End()})
					}
				}
			case isCall(call, "time", "Sleep"):
				sleeps = append(sleeps, call)
			}
			return true
		})
		for _, s := range sleeps {
			inside := false
			for _, b := range bubbles {
				inside = inside || (b[0] <= s.Pos() && s.End() <= b[1])
			}
			line := fset.Position(s.Pos()).Line
			for _, c := range file.Comments {
				at := fset.Position(c.End()).Line
				inside = inside || ((at == line || at == line-1) && strings.Contains(c.Text(), "bubble"))
			}
			if !inside {
				t.Errorf("%s: time.Sleep outside a synctest bubble: a test waits on the event, not the clock", fset.Position(s.Pos()))
			}
		}
	}
}

// isCall reports whether call is pkg.name(...).
func isCall(call *ast.CallExpr, pkg, name string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}
