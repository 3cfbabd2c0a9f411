package app

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/inittrace"
)

// MSAL's authority package, which azidentity links for every credential
// (credential builds one), is a fork (third_party/msal, see
// docs/architecture.md) whose only change is that validRegion, a regexp for
// Azure region names, is compiled on first use: upstream compiled it at
// package init, at each start of the handler, whether or not a token is ever
// asked for in a region: 44,376 bytes in 242 allocations. The fork's init
// allocates at most 504 bytes in 4; the bound leaves no room for that regexp
// (or any other) compiled at init again (43,920 bytes in 238).
func TestCredentialLibrariesDoNoWorkAtProcessStart(t *testing.T) {
	const pkg = "github.com/AzureAD/microsoft-authentication-library-for-go/apps/internal/oauth/ops/authority"
	got := inittrace.OfTestBinary(t)[pkg] // none: the package's init did nothing
	t.Logf("%s: %d bytes, %d allocs", pkg, got.Bytes, got.Allocs)
	assert.LessOrEqual(t, got.Bytes, 1024, "%s's init allocates %d bytes: does it build at process start what it could build on first use?", pkg, got.Bytes)
	assert.LessOrEqual(t, got.Allocs, 16, "%s's init makes %d allocations: does it build at process start what it could build on first use?", pkg, got.Allocs)
}
