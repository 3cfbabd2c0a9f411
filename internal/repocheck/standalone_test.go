package repocheck

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The repository must stand alone: a clone in an empty folder has
// nothing beside it. These tests fail on any file that reaches outside the
// checkout, so a red build on day one cannot come back.

// upRun is a run of "../" segments; goUpJoin is a run of ".." arguments to
// filepath.Join / path.Join.
var (
	upRun    = regexp.MustCompile(`(?:\.\./)+`)
	goUpJoin = regexp.MustCompile(`\bJoin\(\s*((?:"\.\."\s*,\s*)+)`)
	// a project document named the upper-case way (README.md, a design or
	// contract page): it must be one of ours
	mdName = regexp.MustCompile(`\b[A-Z][A-Z0-9_-]*\.md\b`)
	// absolute paths of the machine the project was first built on
	machinePath = regexp.MustCompile(`(^|[\s"'(=:])/work/`)
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// TestNothingReachesOutsideTheRepository fails on a relative path that
// climbs out of the checkout (from the file's own folder), on an absolute
// path of the build machine, and on a Markdown file named anywhere that no
// file of the repository carries.
func TestNothingReachesOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	files := projectFiles(t, root)
	names := map[string]bool{}
	for _, f := range files {
		names[path.Base(f)] = true
	}
	for _, f := range files {
		text, ok := readText(t, root, f)
		if !ok {
			continue
		}
		for _, p := range outsideReferences(f, text, names) {
			t.Errorf("%s refers outside the repository: %s", f, p)
		}
	}
}

// outsideReferences returns every reference in text (the content of file
// rel) that leaves the repository.
func outsideReferences(rel, text string, names map[string]bool) []string {
	var found []string
	depth := runDepth(rel)
	for _, m := range upRun.FindAllString(text, -1) {
		if n := strings.Count(m, "../"); n > depth {
			found = append(found, fmt.Sprintf("%q climbs %d folders from a file %d deep", m, n, depth))
		}
	}
	if strings.HasSuffix(rel, ".go") {
		for _, m := range goUpJoin.FindAllStringSubmatch(text, -1) {
			if n := strings.Count(m[1], `".."`); n > depth {
				found = append(found, fmt.Sprintf("Join with %d \"..\" from a file %d deep", n, depth))
			}
		}
	}
	for _, m := range machinePath.FindAllString(text, -1) {
		found = append(found, fmt.Sprintf("absolute path %q", strings.TrimSpace(m)))
	}
	for _, m := range mdName.FindAllString(text, -1) {
		if !names[m] {
			found = append(found, fmt.Sprintf("%s, which no file of the repository is", m))
		}
	}
	return found
}

// runDepth is how many folders below the root a file is when its relative
// paths are resolved: its own folder's depth, except for the TypeScript
// tests, which run compiled into client/.test-build/test (tsconfig.test.json),
// one folder deeper than their source.
func runDepth(rel string) int {
	depth := 0
	if d := path.Dir(rel); d != "." {
		depth = strings.Count(d, "/") + 1
	}
	if strings.HasPrefix(rel, "client/test/") && strings.HasSuffix(rel, ".ts") {
		depth++
	}
	return depth
}

// TestMarkdownLinksResolve fails on a relative link in a Markdown file whose
// target is not in the repository, or whose #anchor names no heading of it.
func TestMarkdownLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := projectFiles(t, root)
	exists := map[string]bool{}
	for _, f := range files {
		exists[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			exists[d] = true
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		text, _ := readText(t, root, f)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if u, err := url.Parse(target); err != nil || u.Scheme != "" {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := f
			if file != "" {
				resolved = path.Clean(path.Join(path.Dir(f), file))
			}
			if strings.HasPrefix(resolved, "../") || !exists[resolved] {
				t.Errorf("%s links to %s, which is not in the repository", f, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") {
				body, _ := readText(t, root, resolved)
				assert.Contains(t, headingAnchors(body), anchor, "%s links to %s: no such heading", f, target)
			}
		}
	}
}

var (
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	notInSlugs = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// headingAnchors are the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces turned into hyphens.
func headingAnchors(md string) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := notInSlugs.ReplaceAllString(strings.ToLower(m[1]), "")
			out = append(out, strings.ReplaceAll(s, " ", "-"))
		}
	}
	return out
}

// TestReadmeStaysShort keeps the README to the first ten minutes; the
// reference goes into docs/.
func TestReadmeStaysShort(t *testing.T) {
	root := repoRoot(t)
	readme, _ := readText(t, root, "README.md")
	lines := strings.Count(readme, "\n")
	assert.LessOrEqual(t, lines, 200, "README.md has %d lines: move reference material into docs/ and link it", lines)
	for _, doc := range []string{"api", "operations", "deploy", "simulator", "architecture", "platform", "auth"} {
		assert.Contains(t, readme, "(docs/"+doc+".md)", "README.md links docs/%s.md", doc)
	}
}
