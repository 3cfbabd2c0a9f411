// Package issuertest is a local OpenID provider in Entra ID's shape, for
// tests, the simulator and `make run`: it publishes per-tenant OpenID
// metadata (v1.0 and v2.0 documents, as Entra does) and a key set of real
// RSA keys, mints v1.0 and v2.0 access tokens for a test user, rotates its
// signing key, and can be taken down. It is the fake of internal/caller's
// Entra checker grown up: the checker runs unchanged against it, over HTTP.
//
// Routes (tenant is a tenant id):
//
//	GET  /{tenant}/v2.0/.well-known/openid-configuration   v2.0 metadata
//	GET  /{tenant}/.well-known/openid-configuration        v1.0 metadata
//	GET  /{tenant}/discovery/v2.0/keys, /{tenant}/discovery/keys
//	POST /{tenant}/oauth2/v2.0/token   form scope=<app ID URI>/<scope> ...: a v2.0 token
//	POST /{tenant}/oauth2/token        form resource=<app ID URI>[&scope=...]: a v1.0 token
//
// The token endpoints take no client credentials: every token is the test
// user's. Never expose this outside a loopback address.
package issuertest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// The test user every token is minted for, unless a Token says otherwise.
const (
	TestUserOID   = "00000000-0000-4000-8000-00000000ad01"
	TestUserName  = "Test User"
	TestUserEmail = "test.user@contoso.example"
)

// DefaultTenant is the tenant `make run` uses.
const DefaultTenant = "11111111-2222-4333-8444-555555555555"

// Issuer is a local OpenID provider. Create it with New; it is an
// http.Handler and safe for concurrent use.
type Issuer struct {
	mu      sync.Mutex
	keys    []jwk.Key // published, oldest first; the last one signs
	down    bool
	fetches int // key-set requests answered with keys
	asked   int // metadata requests, answered or not
}

// New returns an Issuer with one RSA-2048 signing key.
func New() (*Issuer, error) {
	i := &Issuer{}
	if _, err := i.Rotate(); err != nil {
		return nil, err
	}
	return i, nil
}

// Rotate makes a new signing key, publishes it next to the old ones and
// signs with it from now on; it returns the new key id.
func (i *Issuer) Rotate() (string, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	k, err := jwk.Import(priv)
	if err != nil {
		return "", fmt.Errorf("import key: %w", err)
	}
	if err := jwk.AssignKeyID(k); err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	kid, _ := k.KeyID()
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = append(i.keys, k)
	return kid, nil
}

// SigningKey returns the private key tokens are signed with now.
func (i *Issuer) SigningKey() jwk.Key {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keys[len(i.keys)-1]
}

// SetDown makes the metadata and key endpoints answer 503 (true) or serve
// again (false).
func (i *Issuer) SetDown(down bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.down = down
}

// KeyFetches is how many times the key set was served.
func (i *Issuer) KeyFetches() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fetches
}

// MetadataRequests is how many times metadata was asked for, served or
// refused while down.
func (i *Issuer) MetadataRequests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.asked
}

// Token describes an access token to mint. Zero fields take the test
// user's, valid-now values.
type Token struct {
	// Authority is the authority host the verifier is configured with
	// (http://127.0.0.1:port); it makes the v2.0 issuer. Required for v2.0.
	Authority string
	// Tenant is the tenant id (tid), and the tenant of the issuer.
	Tenant string
	// Version is 1 (iss https://sts.windows.net/<tenant>/) or 2 (iss
	// <authority>/<tenant>/v2.0); 0 means 2.
	Version int
	// Audience is aud: the app ID URI or the client id.
	Audience string
	// OID is the caller's object id; empty means TestUserOID.
	OID string
	// Scopes go to scp, space-separated; Roles to roles.
	Scopes, Roles []string
	// NotBefore and Expiry default to now and now + 1 h.
	NotBefore, Expiry time.Time
	// Issuer overrides iss.
	Issuer string
	// Forgery, when set, makes a token an attacker could make: see Forgery.
	Forgery Forgery
}

// Forgery is a way to make a token without the issuer's private key.
type Forgery int

// The forgeries a verifier must refuse.
const (
	// NoForgery: signed with the signing key, RS256.
	NoForgery Forgery = iota
	// AlgNone: "alg": "none" and no signature (RFC 7519 section 6).
	AlgNone
	// HMACWithPublicKey: "alg": "HS256" keyed with the issuer's public key
	// (PEM), which a verifier that lets the token pick the algorithm accepts.
	HMACWithPublicKey
	// BadSignature: a real signature with one byte changed.
	BadSignature
)

// Mint signs an access token with the current signing key, with the claims
// Entra ID puts in one (name and e-mail included, so tests can check they
// are never logged).
func (i *Issuer) Mint(t Token) (string, error) {
	now := time.Now()
	if t.NotBefore.IsZero() {
		t.NotBefore = now
	}
	if t.Expiry.IsZero() {
		t.Expiry = now.Add(time.Hour)
	}
	if t.OID == "" {
		t.OID = TestUserOID
	}
	iss, ver := t.Issuer, "2.0"
	if t.Version == 1 {
		ver = "1.0"
		if iss == "" {
			iss = "https://sts.windows.net/" + t.Tenant + "/"
		}
	} else if iss == "" {
		iss = strings.TrimRight(t.Authority, "/") + "/" + t.Tenant + "/v2.0"
	}
	b := jwt.NewBuilder().
		Issuer(iss).
		Audience([]string{t.Audience}).
		Subject("sub-"+t.OID).
		IssuedAt(now).
		NotBefore(t.NotBefore).
		Expiration(t.Expiry).
		Claim("tid", t.Tenant).
		Claim("oid", t.OID).
		Claim("ver", ver).
		Claim("name", TestUserName)
	if ver == "1.0" {
		b = b.Claim("upn", TestUserEmail).Claim("unique_name", TestUserEmail)
	} else {
		b = b.Claim("preferred_username", TestUserEmail)
	}
	if len(t.Scopes) > 0 {
		b = b.Claim("scp", strings.Join(t.Scopes, " "))
	}
	if len(t.Roles) > 0 {
		b = b.Claim("roles", t.Roles)
	}
	tok, err := b.Build()
	if err != nil {
		return "", fmt.Errorf("build token: %w", err)
	}
	key := i.SigningKey()
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), key))
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	if t.Forgery != NoForgery {
		return forge(string(signed), key, t.Forgery)
	}
	return string(signed), nil
}

// forge remakes a signed token's header and signature as f says, keeping
// its claims and kid.
func forge(signed string, key jwk.Key, f Forgery) (string, error) {
	parts := strings.Split(signed, ".")
	kid, _ := key.KeyID()
	enc := base64.RawURLEncoding
	switch f {
	case AlgNone:
		h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
		return enc.EncodeToString(h) + "." + parts[1] + ".", nil
	case HMACWithPublicKey:
		var pub rsa.PublicKey
		pk, err := key.PublicKey()
		if err != nil {
			return "", err
		}
		if err := jwk.Export(pk, &pub); err != nil {
			return "", err
		}
		der, err := x509.MarshalPKIXPublicKey(&pub)
		if err != nil {
			return "", err
		}
		secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		h, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT", "kid": kid})
		input := enc.EncodeToString(h) + "." + parts[1]
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(input))
		return input + "." + enc.EncodeToString(mac.Sum(nil)), nil
	case BadSignature:
		sig, err := enc.DecodeString(parts[2])
		if err != nil {
			return "", err
		}
		sig[len(sig)/2] ^= 0x01
		return parts[0] + "." + parts[1] + "." + enc.EncodeToString(sig), nil
	}
	return "", fmt.Errorf("unknown forgery %d", f)
}

// ServeHTTP serves the routes in the package comment.
func (i *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i.mux().ServeHTTP(w, r)
}

func (i *Issuer) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{tenant}/v2.0/.well-known/openid-configuration", i.metadata(2))
	m.HandleFunc("GET /{tenant}/.well-known/openid-configuration", i.metadata(1))
	m.HandleFunc("GET /{tenant}/discovery/v2.0/keys", i.keySet)
	m.HandleFunc("GET /{tenant}/discovery/keys", i.keySet)
	m.HandleFunc("POST /{tenant}/oauth2/v2.0/token", i.token(2))
	m.HandleFunc("POST /{tenant}/oauth2/token", i.token(1))
	m.HandleFunc("OPTIONS /{tenant}/oauth2/", i.preflight)
	return m
}

func (i *Issuer) isDown(w http.ResponseWriter) bool {
	i.mu.Lock()
	down := i.down
	i.mu.Unlock()
	if down {
		http.Error(w, "issuer is down", http.StatusServiceUnavailable)
	}
	return down
}

// authority is how this request reached the issuer.
func authority(r *http.Request) string { return "http://" + r.Host }

func (i *Issuer) metadata(version int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		i.mu.Lock()
		i.asked++
		i.mu.Unlock()
		if i.isDown(w) {
			return
		}
		tenant, base := r.PathValue("tenant"), authority(r)
		doc := map[string]any{
			"token_endpoint":                        base + "/" + tenant + "/oauth2/v2.0/token",
			"jwks_uri":                              base + "/" + tenant + "/discovery/v2.0/keys",
			"issuer":                                base + "/" + tenant + "/v2.0",
			"response_types_supported":              []string{"code", "id_token", "code id_token", "token id_token", "token"},
			"subject_types_supported":               []string{"pairwise"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"tenant_region_scope":                   "EU",
		}
		if version == 1 {
			doc["token_endpoint"] = base + "/" + tenant + "/oauth2/token"
			doc["jwks_uri"] = base + "/" + tenant + "/discovery/keys"
			doc["issuer"] = "https://sts.windows.net/" + tenant + "/"
		}
		writeJSON(w, doc)
	}
}

func (i *Issuer) keySet(w http.ResponseWriter, r *http.Request) {
	if i.isDown(w) {
		return
	}
	i.mu.Lock()
	i.fetches++
	var keys []any
	for _, k := range i.keys {
		pub, err := k.PublicKey()
		if err != nil {
			i.mu.Unlock()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		// Entra's keys carry no alg, and an issuer claim template.
		m := map[string]any{}
		b, _ := json.Marshal(pub)
		_ = json.Unmarshal(b, &m)
		m["use"] = "sig"
		m["x5t"] = m["kid"]
		m["issuer"] = authority(r) + "/{tenantid}/v2.0"
		keys = append(keys, m)
	}
	i.mu.Unlock()
	writeJSON(w, map[string]any{"keys": keys})
}

// token mints for the test user. v2.0: scope is "<app ID URI>/<name> ...";
// the audience is the app ID URI, the names go to scp (".default" adds
// none). v1.0: resource is the audience, scope (optional) the names.
func (i *Issuer) token(version int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		t := Token{Authority: authority(r), Tenant: r.PathValue("tenant"), Version: version, Audience: r.PostForm.Get("resource")}
		for _, s := range strings.Fields(r.PostForm.Get("scope")) {
			if version == 2 {
				if cut := strings.LastIndex(s, "/"); cut > 0 {
					t.Audience, s = s[:cut], s[cut+1:]
				}
			}
			if s != "" && s != ".default" {
				t.Scopes = append(t.Scopes, s)
			}
		}
		t.Roles = strings.Fields(r.PostForm.Get("roles"))
		if t.Audience == "" {
			http.Error(w, "name the audience: scope=<app ID URI>/<scope> (v2.0) or resource=<app ID URI> (v1.0)", http.StatusBadRequest)
			return
		}
		tok, err := i.Mint(t)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]any{"token_type": "Bearer", "expires_in": 3599, "access_token": tok})
	}
}

// preflight lets a page on another origin (the demo page) ask for a token.
func (i *Issuer) preflight(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Methods", "POST")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// Mount serves iss for every path whose first segment is a tenant id (a
// GUID, as Entra's are) and next for the rest, so one address can be both
// the Azure OpenAI simulator and Entra ID for `make run`.
func Mount(next http.Handler, iss *Issuer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if tenantSegment.MatchString(first) {
			iss.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var tenantSegment = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
