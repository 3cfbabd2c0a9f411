package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Key-cache timing. Entra publishes a new signing key well before it signs
// with it and asks relying parties to refresh at least daily and whenever a
// token names a key they do not know (Learn: "Signing key rollover in the
// Microsoft identity platform").
const (
	// RefreshInterval is the least time between two fetches of one tenant's
	// keys while some are cached: an unknown kid (a rotation, or a forged
	// token) costs at most one fetch a minute per tenant.
	RefreshInterval = time.Minute
	// ColdRetryInterval is the least time between two failed fetches of a
	// tenant whose keys were never had: meanwhile requests are answered 503
	// at once instead of each waiting on a dead endpoint.
	ColdRetryInterval = 10 * time.Second
	// MaxKeyAge is how long fetched keys are used before a refresh is tried;
	// when that refresh fails, the old keys keep working.
	MaxKeyAge = 24 * time.Hour
	// DefaultFetchTimeout bounds one fetch of metadata and keys together.
	DefaultFetchTimeout = 5 * time.Second

	maxMetadataBytes = 64 << 10
	maxKeysBytes     = 1 << 20
)

// ErrUnknownKey is the detail of a token signed with a key the tenant does
// not publish (after the one refresh allowed).
var ErrUnknownKey = errors.New("the token names a signing key the tenant does not publish")

// signingKey is a published key and the one algorithm it verifies.
type signingKey struct {
	alg jwa.SignatureAlgorithm
	key jwk.Key
}

// tenantKeys is one tenant's cached keys and the state of its fetches.
type tenantKeys struct {
	mu      sync.Mutex
	keys    map[string]signingKey // by kid; nil until the first good fetch
	fetched time.Time             // of the keys held
	tried   time.Time             // start of the last fetch, good or bad
	lastErr error                 // of the last fetch; nil after a good one
	flight  chan struct{}         // closed when the fetch under way ends; nil when none
}

// keyCache holds the signing keys of the listed tenants only: a token cannot
// make timebox fetch anything for a tenant it does not serve.
type keyCache struct {
	authority string // scheme://host[/path], no trailing slash
	client    *http.Client
	timeout   time.Duration
	tenants   map[string]*tenantKeys
}

func newKeyCache(authority string, client *http.Client, timeout time.Duration, tenants []string) *keyCache {
	c := &keyCache{authority: authority, client: client, timeout: timeout, tenants: map[string]*tenantKeys{}}
	for _, t := range tenants {
		c.tenants[t] = &tenantKeys{}
	}
	return c
}

// lookup returns the key kid of tenant tid. It fetches when nothing is
// cached, when the keys are older than MaxKeyAge, or once per
// RefreshInterval when kid is unknown. Waiting for a fetch ends with ctx
// (the request's budget); the fetch itself is shared by every request
// waiting on it and bounded by its own timeout, so one caller going away
// does not fail the others. Errors: *Error of kind Unavailable (no keys to
// be had) or Unauthenticated (ErrUnknownKey).
func (c *keyCache) lookup(ctx context.Context, tid, kid string) (signingKey, error) {
	t := c.tenants[tid]
	if t == nil {
		// Check refuses unlisted tenants before asking; still refuse.
		return signingKey{}, &Error{Kind: Unavailable, Err: fmt.Errorf("no keys are kept for tenant %s", tid)}
	}
	for refreshed := false; ; refreshed = true {
		t.mu.Lock()
		k, known := t.keys[kid]
		now := time.Now()
		var want bool
		switch {
		case refreshed: // one fetch per request at most
		case known:
			want = t.flight == nil && now.Sub(t.fetched) >= MaxKeyAge && now.Sub(t.tried) >= RefreshInterval
		case t.flight != nil:
			want = true // join the fetch under way
		case t.keys == nil:
			want = t.lastErr == nil || now.Sub(t.tried) >= ColdRetryInterval
		default:
			want = now.Sub(t.tried) >= RefreshInterval
		}
		if !want {
			defer t.mu.Unlock()
			switch {
			case known:
				return k, nil
			case t.keys == nil:
				return signingKey{}, &Error{Kind: Unavailable, RetryAfter: t.tried.Add(ColdRetryInterval).Sub(now),
					Err: fmt.Errorf("keys of tenant %s: %w", tid, t.lastErr)}
			case t.lastErr != nil:
				// The last refresh, which might have brought a rotated key,
				// failed: whether the token is good cannot be told.
				return signingKey{}, &Error{Kind: Unavailable, RetryAfter: t.tried.Add(RefreshInterval).Sub(now),
					Err: fmt.Errorf("refresh keys of tenant %s: %w", tid, t.lastErr)}
			}
			return signingKey{}, unauthenticated(challengeInvalidToken, "kid %q of tenant %s: %w", kid, tid, ErrUnknownKey)
		}
		if t.flight == nil {
			t.flight = make(chan struct{})
			t.tried = now
			go c.refresh(context.WithoutCancel(ctx), tid, t, t.flight)
		}
		flight, flightEnds := t.flight, t.tried.Add(c.timeout)
		t.mu.Unlock()
		select {
		case <-flight:
		case <-ctx.Done():
			return signingKey{}, &Error{Kind: Unavailable, RetryAfter: time.Until(flightEnds),
				Err: fmt.Errorf("waiting for the keys of tenant %s: %w", tid, context.Cause(ctx))}
		}
	}
}

// refresh fetches the tenant's keys and ends flight.
func (c *keyCache) refresh(ctx context.Context, tid string, t *tenantKeys, flight chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	keys, err := c.fetch(ctx, tid)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = err
	if err == nil {
		t.keys, t.fetched = keys, time.Now()
	}
	close(flight)
	if t.flight == flight {
		t.flight = nil
	}
}

// fetch reads the tenant's v2.0 OpenID metadata, checks its issuer, then
// reads the keys at its jwks_uri.
func (c *keyCache) fetch(ctx context.Context, tid string) (map[string]signingKey, error) {
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	metaURL := c.authority + "/" + tid + "/v2.0/.well-known/openid-configuration"
	body, err := c.get(ctx, metaURL, maxMetadataBytes)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, fmt.Errorf("metadata %s: %w", metaURL, err)
	}
	if want := issuerV2(c.authority, tid); meta.Issuer != want {
		return nil, fmt.Errorf("metadata %s names issuer %q, want %q", metaURL, meta.Issuer, want)
	}
	u, err := url.Parse(meta.JWKSURI)
	if err != nil || !SafeURL(u) {
		return nil, fmt.Errorf("metadata %s: jwks_uri %q is not an https URL", metaURL, meta.JWKSURI)
	}
	body, err = c.get(ctx, u.String(), maxKeysBytes)
	if err != nil {
		return nil, err
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("keys %s: %w", u, err)
	}
	keys := map[string]signingKey{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid, ok := k.KeyID()
		if !ok || kid == "" {
			continue
		}
		if use, ok := k.KeyUsage(); ok && use != "sig" {
			continue
		}
		if alg, ok := verifyAlg(k); ok {
			keys[kid] = signingKey{alg: alg, key: k}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("keys %s: no usable signing key", u)
	}
	return keys, nil
}

// verifyAlg is the one algorithm a published key verifies: its own alg when
// it names an asymmetric one, else RS256 for RSA keys (Entra's keys name no
// alg and Entra signs with RS256) or the ECDSA algorithm of its curve. The
// token's header never chooses: a token cannot pick HMAC or none.
func verifyAlg(k jwk.Key) (jwa.SignatureAlgorithm, bool) {
	var alg jwa.SignatureAlgorithm
	if a, ok := k.Algorithm(); ok {
		sa, ok := jwa.LookupSignatureAlgorithm(a.String())
		if !ok {
			return alg, false
		}
		alg = sa
	}
	switch k.KeyType() {
	case jwa.RSA():
		if alg == (jwa.SignatureAlgorithm{}) {
			return jwa.RS256(), true
		}
		switch alg {
		case jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.PS384(), jwa.PS512():
			return alg, true
		}
	case jwa.EC():
		ek, ok := k.(jwk.ECDSAPublicKey)
		if !ok {
			return alg, false
		}
		crv, _ := ek.Crv()
		var byCurve jwa.SignatureAlgorithm
		switch crv {
		case jwa.P256():
			byCurve = jwa.ES256()
		case jwa.P384():
			byCurve = jwa.ES384()
		case jwa.P521():
			byCurve = jwa.ES512()
		default:
			return alg, false
		}
		if alg == (jwa.SignatureAlgorithm{}) || alg == byCurve {
			return byCurve, true
		}
	}
	return alg, false
}

// get reads url with a size cap; anything but a 200 is an error.
func (c *keyCache) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("get %s: larger than %d bytes", u, limit)
	}
	return body, nil
}

// issuerV2 is the iss of the tenant's v2.0 tokens, as its metadata names it.
func issuerV2(authority, tid string) string { return authority + "/" + tid + "/v2.0" }

// issuerV1 is the iss of the tenant's v1.0 tokens (accessTokenAcceptedVersion
// null or 1, what SPFx's AadHttpClient gets by default). Entra names the
// same host whatever the authority's (Learn: "Access tokens", Claims).
func issuerV1(tid string) string { return "https://sts.windows.net/" + tid + "/" }

// SafeURL reports whether u is an https URL, or http on a loopback host
// (the local issuer of tests and `make run`).
func SafeURL(u *url.URL) bool {
	if u == nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if strings.EqualFold(h, "localhost") {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
