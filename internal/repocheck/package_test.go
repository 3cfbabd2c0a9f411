package repocheck

import (
	"archive/zip"
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackage runs `make package` (into a temporary folder, so it cannot
// disturb a checkout's own dist/ and timebox.zip) and checks what the host
// needs: host.json, the function folder, and the handler that host.json
// names, a linux/amd64 executable with its execute bit. Nothing else goes in:
// no local.settings.json, no sources.
func TestPackage(t *testing.T) {
	root := repoRoot(t)
	tmp := t.TempDir()
	dist, pkg := filepath.Join(tmp, "dist"), filepath.Join(tmp, "timebox.zip")
	cmd := exec.Command("make", "--no-print-directory", "package", "DIST="+dist, "PACKAGE="+pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make package:\n%s", out)

	var host struct {
		CustomHandler struct {
			Description struct {
				DefaultExecutablePath string `json:"defaultExecutablePath"`
			} `json:"description"`
		} `json:"customHandler"`
	}
	hostJSON, err := os.ReadFile(filepath.Join(root, "host.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(hostJSON, &host))
	handler := host.CustomHandler.Description.DefaultExecutablePath
	require.NotEmpty(t, handler)

	z, err := zip.OpenReader(pkg)
	require.NoError(t, err)
	defer z.Close()
	files := map[string]*zip.File{}
	for _, f := range z.File {
		if !f.FileInfo().IsDir() {
			files[f.Name] = f
		}
	}
	assert.ElementsMatch(t, []string{"host.json", "proxy/function.json", handler}, sortedKeys(files), "the zip holds the host's files and nothing else")

	read := func(name string) []byte {
		f, ok := files[name]
		require.True(t, ok, "%s is in the zip", name)
		r, err := f.Open()
		require.NoError(t, err)
		defer r.Close()
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		return b
	}
	assert.Equal(t, hostJSON, read("host.json"))
	function, err := os.ReadFile(filepath.Join(root, "proxy", "function.json"))
	require.NoError(t, err)
	assert.Equal(t, function, read("proxy/function.json"))

	exe := files[handler]
	require.NotNil(t, exe, "the zip holds %s, the file host.json names", handler)
	assert.Equal(t, os.FileMode(0o111), exe.Mode().Perm()&0o111, "%s keeps its execute bits in the zip", handler)
	bin, err := elf.NewFile(bytes.NewReader(read(handler)))
	require.NoError(t, err, "%s is an ELF executable", handler)
	assert.Equal(t, elf.EM_X86_64, bin.Machine, "built for linux/amd64, the Functions workers")
	assert.Equal(t, elf.ET_EXEC, bin.Type, "a static executable (CGO_ENABLED=0)")

	// The staged folder azure.yaml deploys holds the same files.
	for name := range files {
		_, err := os.Stat(filepath.Join(dist, filepath.FromSlash(name)))
		assert.NoError(t, err, "dist holds %s", name)
	}
	info, err := os.Stat(filepath.Join(dist, handler))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o111), info.Mode().Perm()&0o111)
}

// TestBuildOutputIsIgnored keeps what make build and make package write out
// of commits.
func TestBuildOutputIsIgnored(t *testing.T) {
	root := repoRoot(t)
	for _, p := range []string{"timebox.zip", "dist/host.json", "handler"} {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		cmd.Dir = root
		assert.NoError(t, cmd.Run(), "%s is git-ignored", p)
	}
}
