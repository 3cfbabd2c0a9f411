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

// The handler's own packages build nothing at process start that a request
// may never need: every start pays their init, whether or not the instance
// ever reads a document. Measured from this test binary, which links them
// as the handler does but not their tests (an in-package test would count
// its own package-level values). extract's one regexp (the blank-line runs
// PDF text objects leave) is compiled on the first PDF read; compiled at
// init it cost 3,208 bytes in 33 allocations, which the bound leaves no room
// for.
func TestHandlerPackagesDoNoWorkAtProcessStart(t *testing.T) {
	inittrace.AtMost(t, map[string]inittrace.Cost{
		"github.com/timebox-dev/timebox/internal/extract": {Bytes: 512, Allocs: 8},
	})
}
