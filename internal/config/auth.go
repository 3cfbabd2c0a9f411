package config

import (
	"net/url"
	"strings"

	"github.com/timebox-dev/timebox/internal/caller"
)

// AuthMode is who may call POST /api/chat (AUTH_MODE).
type AuthMode string

// The modes.
const (
	// AuthNone serves every caller anonymously: the default for `make run`
	// and tests, refused inside Azure unless ALLOW_ANONYMOUS=true.
	AuthNone AuthMode = "none"
	// AuthEntra validates Entra ID bearer tokens in the handler.
	AuthEntra AuthMode = "entra"
	// AuthEasyAuth trusts App Service Authentication's principal headers,
	// only where the platform says authentication is on.
	AuthEasyAuth AuthMode = "easyauth"
)

// Auth is who may call, and how that is checked.
type Auth struct {
	// Mode is AUTH_MODE: none (default), entra or easyauth.
	Mode AuthMode
	// Audiences are the accepted token audiences (AUTH_AUDIENCE,
	// comma-separated: the app ID URI, api://<client-id>, and/or the client
	// id). Required in entra mode.
	Audiences []string
	// Tenants are the tenant ids served (AUTH_TENANTS, comma-separated,
	// stored lower case). Required in entra mode; in easyauth mode, empty
	// leaves the choice to App Service Authentication's own settings.
	Tenants []string
	// RequiredScope must be in the token's scp when set (AUTH_REQUIRED_SCOPE).
	RequiredScope string
	// RequiredRole must be in the token's roles when set (AUTH_REQUIRED_ROLE).
	RequiredRole string
	// AuthorityHost is Entra ID's authority (AZURE_AUTHORITY_HOST, the
	// azidentity convention; default https://login.microsoftonline.com):
	// https, or http on a loopback host (the local issuer).
	AuthorityHost *url.URL
	// AllowAnonymous lets AUTH_MODE=none start inside Azure (ALLOW_ANONYMOUS=true).
	AllowAnonymous bool
}

// loadAuth reads the AUTH_* settings and applies the fail-closed rules:
// none is refused inside Azure without ALLOW_ANONYMOUS=true, easyauth is
// refused wherever the platform does not say authentication is on.
func loadAuth(get func(string) string, bad func(name, format string, args ...any)) Auth {
	a := Auth{
		RequiredScope: get("AUTH_REQUIRED_SCOPE"),
		RequiredRole:  get("AUTH_REQUIRED_ROLE"),
	}
	a.Audiences = list(get("AUTH_AUDIENCE"))
	for _, t := range list(get("AUTH_TENANTS")) {
		if !caller.ValidTenantID(t) {
			bad("AUTH_TENANTS", "%q is not a tenant id (a GUID; the Directory (tenant) ID of the app registration's overview)", t)
			continue
		}
		a.Tenants = append(a.Tenants, strings.ToLower(t))
	}
	switch v := strings.ToLower(get("ALLOW_ANONYMOUS")); v {
	case "", "false":
	case "true":
		a.AllowAnonymous = true
	default:
		bad("ALLOW_ANONYMOUS", "%q must be true or false", v)
	}
	a.AuthorityHost, _ = url.Parse(caller.PublicAuthority)
	if v := get("AZURE_AUTHORITY_HOST"); v != "" {
		u, err := url.Parse(v)
		switch {
		case err != nil || !caller.SafeURL(u) || u.RawQuery != "" || u.Fragment != "":
			bad("AZURE_AUTHORITY_HOST", "%q must be an https URL (http only for a loopback host), e.g. https://login.microsoftonline.us", v)
		default:
			u.Path = strings.TrimRight(u.Path, "/")
			a.AuthorityHost = u
		}
	}

	inAzure := inAzure(get)
	switch mode := AuthMode(strings.ToLower(get("AUTH_MODE"))); mode {
	case "", AuthNone:
		a.Mode = AuthNone
		if inAzure && !a.AllowAnonymous {
			bad("AUTH_MODE", "none is refused inside Azure (WEBSITE_SITE_NAME or WEBSITE_INSTANCE_ID is set): anyone on the internet "+
				"could spend the Azure OpenAI deployment. Set AUTH_MODE=entra with AUTH_AUDIENCE and AUTH_TENANTS, or ALLOW_ANONYMOUS=true "+
				"to run open on purpose")
		}
		for name, v := range map[string]string{"AUTH_AUDIENCE": get("AUTH_AUDIENCE"), "AUTH_TENANTS": get("AUTH_TENANTS"),
			"AUTH_REQUIRED_SCOPE": a.RequiredScope, "AUTH_REQUIRED_ROLE": a.RequiredRole} {
			if v != "" {
				bad(name, "is set but AUTH_MODE is none, so nothing would check it; set AUTH_MODE=entra or easyauth")
			}
		}
	case AuthEntra:
		a.Mode = mode
		if len(a.Audiences) == 0 {
			bad("AUTH_AUDIENCE", "required with AUTH_MODE=entra: the app ID URI (api://<client-id>) and/or the client id of the app registration")
		}
		if len(a.Tenants) == 0 && get("AUTH_TENANTS") == "" {
			bad("AUTH_TENANTS", "required with AUTH_MODE=entra: the tenant ids whose users may call")
		}
	case AuthEasyAuth:
		a.Mode = mode
		if !strings.EqualFold(get("WEBSITE_AUTH_ENABLED"), "true") {
			bad("AUTH_MODE", "easyauth trusts the X-MS-CLIENT-PRINCIPAL header, which only App Service Authentication can vouch for, "+
				"and WEBSITE_AUTH_ENABLED is not True here (outside Azure, or authentication is off): anyone could forge the header. "+
				"Turn App Service Authentication on, or use AUTH_MODE=entra")
		}
		if len(a.Audiences) > 0 {
			bad("AUTH_AUDIENCE", "is not used with AUTH_MODE=easyauth (App Service Authentication checks the audience); remove it")
		}
	default:
		bad("AUTH_MODE", "%q must be none, entra or easyauth", mode)
	}
	if a.Mode != AuthNone && a.AllowAnonymous {
		bad("ALLOW_ANONYMOUS", "applies only to AUTH_MODE=none; remove it")
	}
	return a
}

// list splits a comma-separated setting, dropping empty items.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
