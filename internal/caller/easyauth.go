package caller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// Claim types App Service Authentication uses in X-MS-CLIENT-PRINCIPAL for
// Entra ID (the long forms are what it maps oid, tid and scp to; Learn:
// "Work with user identities in Azure App Service authentication").
var (
	oidClaims   = []string{"http://schemas.microsoft.com/identity/claims/objectidentifier", "oid"}
	tidClaims   = []string{"http://schemas.microsoft.com/identity/claims/tenantid", "tid"}
	scopeClaims = []string{"http://schemas.microsoft.com/identity/claims/scope", "scp"}
)

// maxPrincipalBytes caps the principal header that is decoded.
const maxPrincipalBytes = 64 << 10

// EasyAuth trusts the principal that App Service Authentication puts in
// X-MS-CLIENT-PRINCIPAL after it has validated the caller's token. The
// platform sets that header itself on every request it lets through, so it
// can be trusted only where the platform says authentication is on
// (WEBSITE_AUTH_ENABLED=True); config refuses this mode anywhere else,
// because there anyone can send the header.
type EasyAuth struct {
	Policy Policy
}

type principal struct {
	AuthType string `json:"auth_typ"`
	RoleType string `json:"role_typ"`
	Claims   []struct {
		Type  string `json:"typ"`
		Value string `json:"val"`
	} `json:"claims"`
}

func (p principal) values(types ...string) []string {
	var out []string
	for _, c := range p.Claims {
		for _, t := range types {
			if strings.EqualFold(c.Type, t) {
				out = append(out, c.Value)
			}
		}
	}
	return out
}

func (p principal) first(types ...string) string {
	if v := p.values(types...); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Check reads the platform's principal. With none, App Service
// Authentication let an unauthenticated request through (its "allow
// unauthenticated requests" setting): 401.
func (e EasyAuth) Check(_ context.Context, r *http.Request) (Caller, error) {
	h := r.Header.Get("X-MS-CLIENT-PRINCIPAL")
	if h == "" {
		return Caller{}, unauthenticated(challengeBare, "no X-MS-CLIENT-PRINCIPAL: App Service Authentication let an anonymous request through")
	}
	if len(h) > maxPrincipalBytes {
		return Caller{}, unauthenticated(challengeBare, "X-MS-CLIENT-PRINCIPAL is too large")
	}
	b, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return Caller{}, unauthenticated(challengeBare, "X-MS-CLIENT-PRINCIPAL is not base64: %v", err)
	}
	var p principal
	if err := json.Unmarshal(b, &p); err != nil {
		return Caller{}, unauthenticated(challengeBare, "X-MS-CLIENT-PRINCIPAL is not a principal: %v", err)
	}
	if !strings.EqualFold(p.AuthType, "aad") {
		return Caller{}, unauthenticated(challengeBare, "X-MS-CLIENT-PRINCIPAL is of provider %q; only Entra ID (aad) is served", p.AuthType)
	}
	roleType := p.RoleType
	if roleType == "" {
		roleType = "roles"
	}
	c := Caller{
		OID:   p.first(oidClaims...),
		TID:   strings.ToLower(p.first(tidClaims...)),
		Roles: p.values(roleType),
	}
	if id := r.Header.Get("X-MS-CLIENT-PRINCIPAL-ID"); c.OID == "" {
		c.OID = id
	}
	for _, s := range p.values(scopeClaims...) {
		c.Scopes = append(c.Scopes, strings.Fields(s)...)
	}
	if c.OID == "" || !ValidTenantID(c.TID) {
		return Caller{}, unauthenticated(challengeBare, "X-MS-CLIENT-PRINCIPAL names no object id or tenant id")
	}
	if err := e.Policy.authorize(c, ""); err != nil {
		return Caller{}, err
	}
	return c, nil
}
