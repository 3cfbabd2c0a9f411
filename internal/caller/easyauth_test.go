package caller_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/caller"
)

// principalHeader is X-MS-CLIENT-PRINCIPAL as App Service Authentication
// sends it for an Entra ID caller.
func principalHeader(authType string, claims map[string]string) string {
	var cs []map[string]string
	for k, v := range claims {
		cs = append(cs, map[string]string{"typ": k, "val": v})
	}
	b, _ := json.Marshal(map[string]any{"auth_typ": authType, "name_typ": "name", "role_typ": "roles", "claims": cs})
	return base64.StdEncoding.EncodeToString(b)
}

func TestEasyAuthReadsThePlatformsPrincipal(t *testing.T) {
	full := map[string]string{
		"http://schemas.microsoft.com/identity/claims/objectidentifier": "oid-1",
		"http://schemas.microsoft.com/identity/claims/tenantid":         tenant,
		"http://schemas.microsoft.com/identity/claims/scope":            "access_as_user other",
		"roles": "Reader",
		"name":  "Test User",
	}
	tests := []struct {
		name   string
		header string
		policy caller.Policy
		want   caller.Kind
	}{
		{"valid", principalHeader("aad", full), caller.Policy{Tenants: []string{tenant}, Scope: "access_as_user", Role: "Reader"}, 0},
		{"no principal", "", caller.Policy{}, caller.Unauthenticated},
		{"not base64", "!!", caller.Policy{}, caller.Unauthenticated},
		{"another provider", principalHeader("google", full), caller.Policy{}, caller.Unauthenticated},
		{"no tenant", principalHeader("aad", map[string]string{"oid": "oid-1"}), caller.Policy{}, caller.Unauthenticated},
		{"tenant not listed", principalHeader("aad", full), caller.Policy{Tenants: []string{"99999999-2222-4333-8444-555555555555"}}, caller.Forbidden},
		{"missing scope", principalHeader("aad", full), caller.Policy{Scope: "admin"}, caller.Forbidden},
		{"missing role", principalHeader("aad", full), caller.Policy{Role: "Writer"}, caller.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/chat", nil)
			if tt.header != "" {
				r.Header.Set("X-MS-CLIENT-PRINCIPAL", tt.header)
			}
			c, err := caller.EasyAuth{Policy: tt.policy}.Check(context.Background(), r)
			assert.Equal(t, tt.want, kindOf(err), "%v", err)
			if tt.want == 0 {
				assert.Equal(t, caller.Caller{OID: "oid-1", TID: tenant, Scopes: []string{"access_as_user", "other"}, Roles: []string{"Reader"}}, c)
			}
		})
	}
}
