package app

import (
	"testing"

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
	inittrace.AtMost(t, map[string]inittrace.Cost{
		"github.com/AzureAD/microsoft-authentication-library-for-go/apps/internal/oauth/ops/authority": {Bytes: 1024, Allocs: 16},
	})
}
