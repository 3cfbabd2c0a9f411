package repocheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModuleInstallsAsPublished: `go install <module>/cmd/timebox@<version>`
// builds the module as its go.mod requires it, from the published modules:
// the go command refuses a module whose go.mod has a replace directive, and
// a replaced module is hidden from govulncheck. So go.mod has none, and every
// command builds from the module cache alone (GOPROXY=off: nothing but the
// requirements go.mod and go.sum pin), as that install does.
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
}
