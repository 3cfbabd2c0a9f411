// Package caller decides who is calling: it turns a request into a verified
// Caller (object id, tenant id, scopes, roles) or a classified *Error. It is
// the one place that reads Authorization and App Service Authentication's
// principal headers; the handler sees only the outcome.
//
// Three checkers, one per AUTH_MODE: Anonymous (none), Entra (bearer tokens
// validated here, against the tenant's published keys) and EasyAuth (the
// principal App Service Authentication passes on, trusted only where the
// platform says it is on; config refuses the mode elsewhere).
package caller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Caller is a verified caller. The zero value is the anonymous caller of
// AUTH_MODE=none.
type Caller struct {
	// OID is the caller's object id in its tenant (a user or a service
	// principal); empty for the anonymous caller.
	OID string
	// TID is the caller's tenant id, lower case; empty for the anonymous caller.
	TID string
	// Scopes are the delegated permissions (scp) the token carries.
	Scopes []string
	// Roles are the app roles (roles) the token carries.
	Roles []string
}

// Checker verifies the caller of a request. Its error is always an *Error.
type Checker interface {
	Check(ctx context.Context, r *http.Request) (Caller, error)
}

// Kind classifies a refusal.
type Kind int

// The kinds of refusal, each one answer.
const (
	// Unauthenticated: no credential, or one that does not verify (401).
	Unauthenticated Kind = iota + 1
	// Forbidden: a verified caller this app does not serve: a tenant not
	// listed, a missing scope or role (403).
	Forbidden
	// Unavailable: the caller could not be checked because the tenant's keys
	// could not be had (503, retryable).
	Unavailable
)

func (k Kind) String() string {
	switch k {
	case Unauthenticated:
		return "unauthenticated"
	case Forbidden:
		return "forbidden"
	case Unavailable:
		return "auth unavailable"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a refusal. Err is the detail for the log line; it never holds the
// token or a claim beyond tenant and object ids.
type Error struct {
	Kind Kind
	// Challenge is the WWW-Authenticate value to send with the answer
	// (RFC 6750 section 3), empty for none.
	Challenge string
	// RetryAfter, on an Unavailable refusal, is how long until the tenant's
	// keys may be fetched again (the backoff left, or the fetch under way's
	// time left): asking before then is refused the same way, at once. 0
	// when unknown.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "caller: " + e.Kind.String()
	}
	return "caller: " + e.Kind.String() + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// RFC 6750 challenges: a bare one when no token was sent (section 3.1: no
// error code then), invalid_token when one was, insufficient_scope for a
// token without the permission asked for.
const (
	challengeBare              = `Bearer`
	challengeInvalidToken      = `Bearer error="invalid_token"`
	challengeInsufficientScope = `Bearer error="insufficient_scope"`
)

func unauthenticated(challenge string, format string, args ...any) *Error {
	return &Error{Kind: Unauthenticated, Challenge: challenge, Err: fmt.Errorf(format, args...)}
}

func forbidden(challenge string, format string, args ...any) *Error {
	return &Error{Kind: Forbidden, Challenge: challenge, Err: fmt.Errorf(format, args...)}
}

// Policy is what a verified caller must have, whatever the mode.
type Policy struct {
	// Tenants are the tenant ids served, lower case. Empty: every tenant
	// (allowed only in easyauth mode, where App Service Authentication's own
	// settings decide).
	Tenants []string
	// Scope, when set, must be one of the token's delegated scopes (scp).
	Scope string
	// Role, when set, must be one of the token's app roles (roles).
	Role string
}

// tenantAllowed reports whether tid (any case) is served.
func (p Policy) tenantAllowed(tid string) bool {
	return len(p.Tenants) == 0 || slices.Contains(p.Tenants, strings.ToLower(tid))
}

// authorize checks a verified caller against the policy.
func (p Policy) authorize(c Caller, challenge string) error {
	if !p.tenantAllowed(c.TID) {
		return forbidden("", "tenant %s is not listed in AUTH_TENANTS", c.TID)
	}
	if p.Scope != "" && !slices.Contains(c.Scopes, p.Scope) {
		return forbidden(challenge, "the token lacks the scope %q (AUTH_REQUIRED_SCOPE)", p.Scope)
	}
	if p.Role != "" && !slices.Contains(c.Roles, p.Role) {
		return forbidden(challenge, "the token lacks the app role %q (AUTH_REQUIRED_ROLE)", p.Role)
	}
	return nil
}

// ErrAPIKey is the detail of a request refused for carrying an api-key
// header (RefuseAPIKey).
var ErrAPIKey = errors.New("the request carries an api-key header: no key is taken from a caller")

// RefuseAPIKey refuses, in every mode, a request that carries an api-key
// header (any value, empty too): an Unauthenticated *Error with the bare
// Bearer challenge, nil without one. timebox holds the only key to Azure
// OpenAI and takes none from a caller; a caller that sends one (an
// AzureOpenAI client given its apiKey) meant to be checked by it, and is
// told at once rather than served as anonymous or by its principal.
func RefuseAPIKey(r *http.Request) error {
	if _, ok := r.Header["Api-Key"]; !ok {
		return nil
	}
	return &Error{Kind: Unauthenticated, Challenge: challengeBare, Err: ErrAPIKey}
}

// Anonymous is the checker of AUTH_MODE=none: everyone is the anonymous
// caller. Config refuses it inside Azure unless ALLOW_ANONYMOUS=true.
type Anonymous struct{}

// Check returns the anonymous caller.
func (Anonymous) Check(context.Context, *http.Request) (Caller, error) { return Caller{}, nil }

type contextKey struct{}

// NewContext returns ctx carrying c, the request's verified caller.
func NewContext(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, contextKey{}, c)
}

// FromContext is the verified caller ctx carries, and whether it carries
// one: a request not checked has none (the zero Caller is the anonymous
// caller of AUTH_MODE=none, which a check does put there).
func FromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(contextKey{}).(Caller)
	return c, ok
}
