package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// MaxSkew is the clock skew allowed on exp and nbf.
const MaxSkew = 5 * time.Minute

// maxTokenBytes caps what is parsed at all. Entra access tokens are a few
// KiB (more with many group claims; Entra switches to an overage claim
// before they get large).
const maxTokenBytes = 16 << 10

// maxKidBytes caps the key id a token may name (Entra's are about 30
// characters); it goes into the log line when unknown.
const maxKidBytes = 128

// PublicAuthority is Entra ID's authority host in the public cloud.
const PublicAuthority = "https://login.microsoftonline.com"

// tenantID is the form of a tenant id: a GUID, lower case. It is compiled
// on first use: package init runs at every start of the handler, whatever
// its AUTH_MODE.
var tenantID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// ValidTenantID reports whether s is a tenant id (a GUID, any case).
func ValidTenantID(s string) bool { return tenantID().MatchString(strings.ToLower(s)) }

// EntraOptions configure an Entra checker.
type EntraOptions struct {
	// Authority is the authority host (AZURE_AUTHORITY_HOST); nil means
	// PublicAuthority. https, or http on a loopback host.
	Authority *url.URL
	// Audiences are the accepted aud values: the app ID URI and/or the
	// client id. At least one.
	Audiences []string
	// Policy is what a caller must have. Policy.Tenants is required: the
	// tenant ids whose tokens are accepted.
	Policy Policy
	// Client fetches metadata and keys; nil means a client of its own. Tests
	// pass one that reaches the local issuer.
	Client *http.Client
	// FetchTimeout bounds one fetch of a tenant's metadata and keys; 0 means
	// DefaultFetchTimeout. The request waiting for it is bounded by its own
	// budget as well.
	FetchTimeout time.Duration
}

// Entra verifies Entra ID access tokens sent as Authorization: Bearer, with
// lestrrat-go/jwx for the JOSE work: the signature against the tenant's
// published keys, exp and nbf with MaxSkew, then the issuer (v1 or v2 form
// for the token's own tenant), the audience, the tenant and the policy.
type Entra struct {
	audiences []string
	policy    Policy
	authority string
	keys      *keyCache
}

// NewEntra returns an Entra checker. It fetches nothing until the first
// token arrives.
func NewEntra(o EntraOptions) (*Entra, error) {
	authority := PublicAuthority
	if o.Authority != nil {
		if !SafeURL(o.Authority) {
			return nil, fmt.Errorf("authority %s: want https, or http on a loopback host", o.Authority)
		}
		authority = strings.TrimRight(o.Authority.String(), "/")
	}
	if len(o.Audiences) == 0 {
		return nil, errors.New("no audience: set the app ID URI and/or the client id")
	}
	if len(o.Policy.Tenants) == 0 {
		return nil, errors.New("no tenant: list the tenant ids whose tokens are accepted")
	}
	for _, t := range o.Policy.Tenants {
		if !tenantID().MatchString(t) {
			return nil, fmt.Errorf("tenant %q is not a lower-case tenant id (a GUID)", t)
		}
	}
	client := o.Client
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// Entra's metadata and keys answer directly; a redirect is not followed.
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	timeout := o.FetchTimeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	return &Entra{
		audiences: o.Audiences,
		policy:    o.Policy,
		authority: authority,
		keys:      newKeyCache(authority, &c, timeout, o.Policy.Tenants),
	}, nil
}

// Check verifies the request's bearer token.
func (e *Entra) Check(ctx context.Context, r *http.Request) (Caller, error) {
	raw, sent := bearer(r)
	if !sent {
		return Caller{}, unauthenticated(challengeBare, "no bearer token")
	}
	if raw == "" || len(raw) > maxTokenBytes {
		return Caller{}, unauthenticated(challengeInvalidToken, "the Authorization header holds no bearer token of a sane size")
	}

	// Only the tenant and the key id are read before the signature is
	// checked, to know whose keys to use: a tenant that is not listed is
	// refused without fetching anything.
	msg, err := jws.Parse([]byte(raw), jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 {
		// The parser's message can quote bytes of the token: say only what failed.
		return Caller{}, unauthenticated(challengeInvalidToken, "not a compact JWS with one signature")
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	var claimed struct {
		TID string `json:"tid"`
	}
	if err := json.Unmarshal(msg.Payload(), &claimed); err != nil || !ValidTenantID(claimed.TID) {
		return Caller{}, unauthenticated(challengeInvalidToken, "no tenant id (tid) in the token")
	}
	tid := strings.ToLower(claimed.TID)
	if !e.policy.tenantAllowed(tid) {
		return Caller{}, forbidden("", "tenant %s is not listed in AUTH_TENANTS", tid)
	}
	if kid == "" || len(kid) > maxKidBytes {
		return Caller{}, unauthenticated(challengeInvalidToken, "the token names no signing key (kid) of a sane size")
	}
	key, err := e.keys.lookup(ctx, tid, kid)
	if err != nil {
		return Caller{}, err
	}

	tok, err := jwt.Parse([]byte(raw),
		jwt.WithKey(key.alg, key.key),
		jwt.WithValidate(true),
		jwt.WithAcceptableSkew(MaxSkew),
		jwt.WithRequiredClaim("exp"),
	)
	if err != nil {
		return Caller{}, unauthenticated(challengeInvalidToken, "tenant %s: %w", tid, err)
	}
	iss, _ := tok.Issuer()
	if iss != issuerV1(tid) && iss != issuerV2(e.authority, tid) {
		return Caller{}, unauthenticated(challengeInvalidToken, "tenant %s: issuer %q is neither the v1 nor the v2 issuer of the tenant", tid, iss)
	}
	aud, _ := tok.Audience()
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(e.audiences, a) }) {
		return Caller{}, unauthenticated(challengeInvalidToken, "tenant %s: audience %q is not in AUTH_AUDIENCE", tid, aud)
	}
	c := Caller{TID: tid}
	var (
		scp   string
		roles []any
	)
	_ = tok.Get("oid", &c.OID)
	_ = tok.Get("scp", &scp)
	_ = tok.Get("roles", &roles)
	c.Scopes = strings.Fields(scp)
	for _, r := range roles {
		if s, ok := r.(string); ok {
			c.Roles = append(c.Roles, s)
		}
	}
	if c.OID == "" {
		return Caller{}, unauthenticated(challengeInvalidToken, "tenant %s: no object id (oid) in the token", tid)
	}
	if err := e.policy.authorize(c, challengeInsufficientScope); err != nil {
		return Caller{}, err
	}
	return c, nil
}

// bearer returns the token of an Authorization: Bearer header (the scheme in
// any case, RFC 7235), and whether a bearer token was attempted at all (a
// Bearer header, however malformed, or more than one Authorization).
func bearer(r *http.Request) (token string, sent bool) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return "", false
	}
	if len(h) > 1 {
		return "", true
	}
	scheme, token, _ := strings.Cut(h[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		// Another scheme (Basic, Negotiate, ...) is no bearer token at all:
		// RFC 6750 section 3.1 asks for the bare challenge then, as for no
		// header, so the client learns which scheme to use.
		return "", false
	}
	return strings.TrimSpace(token), true
}
