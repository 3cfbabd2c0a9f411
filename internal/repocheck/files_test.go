package repocheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the directory holding go.mod, found from the test's own
// directory, so the tests read the checkout they run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above %s", dir)
		dir = parent
	}
}

// projectFiles lists the project's files, relative to the root with
// forward slashes: everything git tracks plus new files it does not ignore,
// so a file is checked before its first commit and build output never is.
func projectFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "git ls-files (the checks read the files git knows)")
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
			continue // deleted in the work tree, not yet committed
		}
		files = append(files, f)
	}
	require.NotEmpty(t, files)
	return files
}

// readText returns a file's content, or false when it is binary.
func readText(t *testing.T, root, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	if bytes.IndexByte(b, 0) >= 0 {
		return "", false
	}
	return string(b), true
}
