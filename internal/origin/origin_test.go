package origin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllows(t *testing.T) {
	set, err := NewSet([]string{"https://*.sharepoint.com", "https://contoso.example", "http://127.0.0.1:5173"})
	require.NoError(t, err)
	tests := []struct {
		origin string
		want   bool
	}{
		{"https://contoso.sharepoint.com", true},
		{"https://a.b.sharepoint.com", true},
		{"https://CONTOSO.SharePoint.com", true},
		{"https://contoso.sharepoint.com:443", true},
		{"https://contoso.example", true},
		{"http://127.0.0.1:5173", true},
		// The string-match escapes.
		{"https://evil.com/.sharepoint.com", false},
		{"https://evil.com#.sharepoint.com", false},
		{"https://evil.com?.sharepoint.com", false},
		{"https://evil.com\\.sharepoint.com", false},
		{"https://user@x.sharepoint.com", false},
		// Whole labels only, and at least one.
		{"https://sharepoint.com", false},
		{"https://.sharepoint.com", false},
		{"https://evilsharepoint.com", false},
		{"https://x..sharepoint.com", false},
		{"https://contoso.sharepoint.com.evil.example", false},
		{"http://contoso.sharepoint.com", false},
		{"https://contoso.sharepoint.com:8443", false},
		{"https://contoso.example.evil", false},
		{"https://x.contoso.example", false},
		{"http://127.0.0.1:5174", false},
		{"http://127.0.0.1", false},
		{"null", false},
		{"", false},
		{"https://contoso.example/", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, set.Allows(tt.origin), tt.origin)
	}
}

func TestParsePatternRefuses(t *testing.T) {
	for _, s := range []string{"contoso.example", "ftp://x.example", "https://x.example/path", "https://x.example#f",
		"https://a.*.example", "https://*example.com", "https://*.*.example", "https://", "https://u@x.example", "https://x.example:"} {
		_, err := ParsePattern(s)
		assert.Error(t, err, s)
	}
	p, err := ParsePattern("https://*.SharePoint.com:443")
	require.NoError(t, err)
	assert.Equal(t, "https://*.sharepoint.com", p.String())
}

// A wildcard over a public suffix admits every site anyone can register
// under it, so it is refused, with the fix in the message; a wildcard over
// a domain with an owner, sharepoint.com's tenants among them, is not.
func TestWildcardOverAPublicSuffixIsRefused(t *testing.T) {
	refused := []struct{ pattern, fix string }{
		{"https://*.com", "https://*.contoso.com"},
		{"https://*.co.uk", "https://*.contoso.co.uk"},
		{"http://*.com:8080", "http://*.contoso.com"},
		{"https://*.com.", "https://*.contoso.com"},
		{"https://*.azurewebsites.net", "https://*.contoso.azurewebsites.net"}, // the list's private section
		{"https://*.github.io", "https://*.contoso.github.io"},
		{"https://*.localhost", "https://*.contoso.localhost"}, // a top-level name not on the list is one too
	}
	for _, tt := range refused {
		_, err := ParsePattern(tt.pattern)
		if assert.Error(t, err, tt.pattern) {
			assert.Contains(t, err.Error(), "public suffix", tt.pattern)
			assert.Contains(t, err.Error(), tt.fix, tt.pattern)
		}
	}
	for _, s := range []string{"https://*.sharepoint.com", "https://*.contoso.co.uk", "https://*.contoso.azurewebsites.net", "https://*.contoso.example"} {
		_, err := ParsePattern(s)
		assert.NoError(t, err, s)
	}
	set, err := NewSet([]string{"https://*.com"})
	assert.Error(t, err, "NewSet refuses it too")
	assert.Nil(t, set)
}
