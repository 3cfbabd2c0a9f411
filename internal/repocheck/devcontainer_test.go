package repocheck

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGoAndNodeVersionsAreStatedOnceAndKeptInStep: the README states the
// Go release (go.mod's toolchain line) and the Node major; the dev
// container installs exactly those; docs/deploy.md points at the README
// rather than stating a Go release of its own.
func TestGoAndNodeVersionsAreStatedOnceAndKeptInStep(t *testing.T) {
	root := repoRoot(t)
	toolchain := regexp.MustCompile(`(?m)^toolchain go(\d+\.\d+\.\d+)$`).FindStringSubmatch(readFile(t, root, "go.mod"))
	require.NotNil(t, toolchain, "go.mod has a toolchain line")
	readme := readFile(t, root, "README.md")
	stated := regexp.MustCompile(`Requirements: \*\*Go (\d+\.\d+\.\d+)\*\* \(go\.mod's ` + "`" + `toolchain go(\d+\.\d+\.\d+)` + "`").FindStringSubmatch(readme)
	require.NotNil(t, stated, "the README's Requirements state the Go release and go.mod's toolchain line")
	assert.Equal(t, toolchain[1], stated[1], "README's Go is go.mod's toolchain")
	assert.Equal(t, toolchain[1], stated[2])
	node := regexp.MustCompile(`\), Node (\d+)\s+with npm`).FindStringSubmatch(readme)
	require.NotNil(t, node, "the README states the Node major")

	dc := readFile(t, root, ".devcontainer/devcontainer.json")
	goFeature := regexp.MustCompile(`"ghcr\.io/devcontainers/features/go:1": \{ "version": "([^"]+)" \}`).FindStringSubmatch(dc)
	require.NotNil(t, goFeature, "the dev container installs Go with a pinned version")
	assert.Equal(t, toolchain[1], goFeature[1], "the dev container's Go is go.mod's toolchain")
	nodeFeature := regexp.MustCompile(`"ghcr\.io/devcontainers/features/node:1": \{ "version": "([^"]+)" \}`).FindStringSubmatch(dc)
	require.NotNil(t, nodeFeature, "the dev container installs Node with a pinned version")
	assert.Equal(t, node[1], nodeFeature[1], "the dev container's Node is the README's")
	for _, tool := range []string{"azure-cli", "azure-dev/azd", "azure-functions-core-tools", "scripts/azurite.sh install"} {
		assert.Contains(t, dc, tool, "the dev container has what make run, make test and azd up need")
	}
	assert.Contains(t, dc, "Not built here", "the dev container says it was not tried")

	deploy := readFile(t, root, "docs/deploy.md")
	for _, m := range regexp.MustCompile(`Go \d+\.\d+\.\d+ or later`).FindAllString(deploy, -1) {
		t.Errorf("docs/deploy.md states a Go release of its own (%q): point at the README's", m)
	}
	assert.True(t, strings.Contains(deploy, "README.md#the-two-commands"), "docs/deploy.md points at the README's statement")
}
