package repocheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a newcomer types first: make help, plain make, make start on a
// machine without the Functions host.

var makeTarget = regexp.MustCompile(`(?m)^([a-z0-9-]+):`)

// makeTargets returns the Makefile's targets, in order.
func makeTargets(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, m := range makeTarget.FindAllStringSubmatch(readFile(t, root, "Makefile"), -1) {
		out = append(out, m[1])
	}
	return out
}

// make help lists every target with its comment, and says that plain make
// runs make run (the first target).
func TestMakeHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	root := repoRoot(t)
	targets := makeTargets(t, root)
	require.NotEmpty(t, targets)
	assert.Equal(t, "run", targets[0], "plain make runs the first target, which the README says is make run")
	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	help := string(out)
	assert.Contains(t, help, "make with no target runs make run")
	for _, target := range targets {
		assert.Regexp(t, `(?m)^  make `+regexp.QuoteMeta(target)+` +\S`, help, "make help lists %s with what it does", target)
	}
}

// make start without Azure Functions Core Tools says what it needs and how
// to get it (not "func: No such file or directory"), and what to use
// instead.
func TestMakeStartWithoutFuncSaysWhatToDo(t *testing.T) {
	root := repoRoot(t)
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	cat, err := exec.LookPath("cat")
	require.NoError(t, err)
	// A PATH with cat and nothing else: no func, whatever this machine has.
	bin := t.TempDir()
	require.NoError(t, os.Symlink(cat, filepath.Join(bin, "cat")))
	cmd := exec.Command(bash, "scripts/start.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "make start fails without func")
	msg := stderr.String()
	assert.Contains(t, msg, "Azure Functions Core Tools")
	assert.Contains(t, msg, "npm install -g azure-functions-core-tools@4")
	assert.Contains(t, msg, "make run")
	assert.NotContains(t, strings.ToLower(msg), "no such file")
}
