package repocheck

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module is this repository's module path.
const module = "github.com/timebox-dev/timebox"

// TestModuleInstallsAsPublished: `go install <module>/cmd/timebox@<version>`
// works, as a user outside any checkout runs it. The go command refuses a
// module whose go.mod has a replace directive (and a replaced module is
// hidden from govulncheck), so go.mod has none; every command builds from
// the requirements go.mod and go.sum pin alone (GOPROXY=off); and the
// repository's files, served as a version of the module by a local module
// proxy, install the CLI by module path and version.
func TestModuleInstallsAsPublished(t *testing.T) {
	root := repoRoot(t)
	edit := exec.Command("go", "mod", "edit", "-json")
	edit.Dir = root
	out, err := edit.Output()
	require.NoError(t, err, "go mod edit -json")
	var mod struct {
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	require.NoError(t, json.Unmarshal(out, &mod))
	assert.Empty(t, mod.Replace, "go.mod's replace directives: go install module@version refuses them")

	bin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/...")
	install.Dir = root
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err = install.CombinedOutput()
	require.NoError(t, err, "go install ./cmd/... from the module cache alone:\n%s", out)
	for _, name := range []string{"handler", "timebox", "aoaisim"} {
		assert.FileExists(t, filepath.Join(bin, name))
	}

	// The proxy serves this one version; every other module comes from the
	// module cache's own download folder, which is laid out as a proxy, into
	// a module cache of the test's own (so that the shared one never holds
	// this made-up version). sum.golang.org is not consulted: the
	// requirements in the module cache were checked against go.sum when they
	// were downloaded.
	const version = "v0.0.0-20260101000000-000000000000"
	proxy := t.TempDir()
	serveModule(t, root, proxy, version)
	cache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	install = exec.Command("go", "install", module+"/cmd/timebox@"+version)
	install.Dir = t.TempDir() // outside any module, as a user runs it
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOMODCACHE="+t.TempDir(), "GOFLAGS=-modcacherw", "GOWORK=off",
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(cache, "cache", "download"), "GOSUMDB=off")
	out, err = install.CombinedOutput()
	require.NoError(t, err, "go install %s/cmd/timebox@%s:\n%s", module, version, out)
	assert.FileExists(t, filepath.Join(bin, "timebox"))
}

// serveModule writes to dir, laid out as a Go module proxy, the files of
// the repository at root as the module's version.
func serveModule(t *testing.T, root, dir, version string) {
	t.Helper()
	at := filepath.Join(dir, filepath.FromSlash(module), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(`{"Version":"`+version+`"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	f, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	defer f.Close()
	z := zip.NewWriter(f)
	for _, name := range projectFiles(t, root) {
		w, err := z.Create(module + "@" + version + "/" + name)
		require.NoError(t, err)
		src, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
		require.NoError(t, err)
		_, err = io.Copy(w, src)
		src.Close()
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
}

// goEnv is `go env name`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err, "go env %s", name)
	return string(out)
}
