package aoai

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// signIn is the Entra ID credential as the bearer-token policy uses it: its
// failures are *signInError, so that a credential that gives no token is
// told apart from a request that got no answer (sendFailure).
type signIn struct{ cred azcore.TokenCredential }

func (s signIn) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tk, err := s.cred.GetToken(ctx, o)
	if err != nil {
		return tk, &signInError{err}
	}
	return tk, nil
}

// signInError is a credential's failure to give a token for Azure OpenAI.
type signInError struct{ err error }

func (e *signInError) Error() string { return "sign in to Azure OpenAI: " + e.err.Error() }

func (e *signInError) Unwrap() error { return e.err }

// kind is KindTransient when the token endpoint failed as any server may
// (no answer, a 5xx, a 429 or a 408: azidentity's AuthenticationFailedError
// with that response, or with none), and KindCredential otherwise: the
// credential has nothing to sign in with (no az login, no managed identity:
// azidentity's credential-unavailable error, which is not exported, so it
// is what is left), or the sign-in was refused (a wrong tenant, an identity
// not assigned to the app: an AuthenticationFailedError with a 4xx). Asking
// again changes none of those.
func (e *signInError) kind() Kind {
	var failed *azidentity.AuthenticationFailedError
	if !errors.As(e.err, &failed) {
		return KindCredential
	}
	if failed.RawResponse == nil {
		return KindTransient
	}
	switch s := failed.RawResponse.StatusCode; {
	case s >= 500, s == http.StatusTooManyRequests, s == http.StatusRequestTimeout:
		return KindTransient
	}
	return KindCredential
}

// SignIn gets a token for Azure OpenAI from the client's credential, as a
// request would, so that a credential that cannot give one is found before
// the first question; it returns nil at once when every backend has an
// API key. Its failures
// are *Error, of KindCredential (nothing to sign in with, or the sign-in
// was refused), KindTransient (the token endpoint failed) or KindCanceled.
func (c *Client) SignIn(ctx context.Context) error {
	// Every backend without a key signs in with the same credential.
	for _, b := range c.pool.backends {
		if b.cred == nil {
			continue
		}
		if _, err := b.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{Scope}}); err != nil {
			return sendFailure(ctx, err)
		}
		return nil
	}
	return nil
}
