package quota_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/quota"
)

// These tests need no Azurite: the store's requests go to an in-process
// transport, inside testing/synctest bubbles where time is virtual.

// hang is a store that accepts every request and never answers.
type hang struct{}

func (hang) Do(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// notFound answers every request 404 ResourceNotFound (an empty table) and
// keeps each request's Authorization header.
type notFound struct {
	mu   sync.Mutex
	auth []string
}

func (n *notFound) Do(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	n.auth = append(n.auth, r.Header.Get("Authorization"))
	n.mu.Unlock()
	h := http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {"ResourceNotFound"}}
	body := `{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"The specified resource does not exist."}}}`
	return &http.Response{StatusCode: http.StatusNotFound, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

type token struct{}

func (token) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "identity-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// TestStoreThatHangsIsUnavailableAtItsStepDeadline: a store that never
// answers is an *UnavailableError at the step's own deadline, well within
// the request's budget.
func TestStoreThatHangsIsUnavailableAtItsStepDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := quota.New(quota.Options{Endpoint: mustURL(t, "http://127.0.0.1:10002/devstoreaccount1"), Table: "timeboxusage", UserDailyTokens: 1000, Transport: hang{}, StepTimeout: 2 * time.Second})
		require.NoError(t, err)
		ctx, cancel, _ := budget.Start(t.Context(), 200*time.Second)
		defer cancel()
		start := time.Now()
		_, err = s.Reserve(ctx, quota.Request{ID: "r", Prompt: 10, MaxCompletion: 10, Deadline: time.Now().Add(200 * time.Second)})
		var unavailable *quota.UnavailableError
		require.ErrorAs(t, err, &unavailable)
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, "reserve", unavailable.Op)

		start = time.Now()
		_, err = s.Usage(ctx, "u", "t")
		require.ErrorAs(t, err, &unavailable)
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

// TestRequestDeadlineBeforeTheStoreAnswers: when the request's own time
// runs out first, the error is the request's clock, not the store's.
func TestRequestDeadlineBeforeTheStoreAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := quota.New(quota.Options{Endpoint: mustURL(t, "http://127.0.0.1:10002/devstoreaccount1"), Table: "timeboxusage", UserDailyTokens: 1000, Transport: hang{}})
		require.NoError(t, err)
		ctx, cancel, _ := budget.Start(t.Context(), time.Second)
		defer cancel()
		_, err = s.Reserve(ctx, quota.Request{ID: "r", Prompt: 10, MaxCompletion: 10, Deadline: time.Now().Add(time.Second)})
		var unavailable *quota.UnavailableError
		assert.False(t, errors.As(err, &unavailable), "%v", err)
		st, ok := errors.AsType[*budget.StepTimeout](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, time.Second, st.Request)
	})
}

// TestSharedKeyOnlyForALoopbackEndpoint: Azurite's development key signs
// the calls to a loopback endpoint, and to nothing else: another host is
// reached with the app's identity, and refused without one.
func TestSharedKeyOnlyForALoopbackEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, endpoint := range []string{"http://127.0.0.1:10002/devstoreaccount1", "http://localhost:10002/devstoreaccount1", "http://[::1]:10002/devstoreaccount1"} {
			n := &notFound{}
			s, err := quota.New(quota.Options{Endpoint: mustURL(t, endpoint), Table: "timeboxusage", UserDailyTokens: 1000, Transport: n, Credential: token{}})
			require.NoError(t, err)
			u, err := s.Usage(t.Context(), "u", "t")
			require.NoError(t, err)
			assert.EqualValues(t, 0, u.UserDay.Used)
			require.NotEmpty(t, n.auth)
			assert.True(t, strings.HasPrefix(n.auth[0], "SharedKeyLite "+quota.DevelopmentAccount+":"), endpoint)
		}

		n := &notFound{}
		s, err := quota.New(quota.Options{Endpoint: mustURL(t, "https://timebox.table.core.windows.net"), Table: "timeboxusage", UserDailyTokens: 1000, Transport: n, Credential: token{}})
		require.NoError(t, err)
		_, err = s.Usage(t.Context(), "u", "t")
		require.NoError(t, err)
		require.NotEmpty(t, n.auth)
		assert.Equal(t, "Bearer identity-token", n.auth[0])

		_, err = quota.New(quota.Options{Endpoint: mustURL(t, "https://timebox.table.core.windows.net"), Table: "timeboxusage"})
		assert.Error(t, err, "no key is ever used for a host that is not loopback")
	})
}

func TestExceededMessage(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 48, 0, 0, time.UTC)
	tests := []struct {
		err  quota.ExceededError
		want string
		wait time.Duration
	}{
		{quota.ExceededError{Limit: quota.UserDay, Size: 200_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Now: now},
			"Your daily limit of 200,000 tokens is used up. It resets at 00:00 UTC, in 5 h 12 min.", 5*time.Hour + 12*time.Minute},
		{quota.ExceededError{Limit: quota.TenantMonth, Size: 20_000_000, ResetsAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Now: now},
			"Your organization's monthly limit of 20,000,000 tokens is used up. It resets on 1 January at 00:00 UTC, in 30 d 5 h.", 30*24*time.Hour + 5*time.Hour + 12*time.Minute},
		{quota.ExceededError{Limit: quota.UserDay, Size: 999, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Now: time.Date(2026, 12, 1, 23, 59, 59, 500_000_000, time.UTC)},
			"Your daily limit of 999 tokens is used up. It resets at 00:00 UTC, in 1 min.", time.Second},
		{quota.ExceededError{Limit: quota.UserDay, Size: 1_000_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Now: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)},
			"Your daily limit of 1,000,000 tokens is used up. It resets at 00:00 UTC, in 2 h.", 2 * time.Hour},
		// Held by requests under way: the wait is until enough of them end.
		{quota.ExceededError{Limit: quota.UserDay, Size: 2_000, Used: 501, Held: 1_499, FreesAt: now.Add(3*time.Minute + 50*time.Second), ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Now: now},
			"Your daily limit of 2,000 tokens is held by answers under way (501 used, 1,499 held). Try again when they end, in 4 min at most.", 3*time.Minute + 50*time.Second},
		{quota.ExceededError{Limit: quota.TenantMonth, Size: 20_000_000, Used: 0, Held: 20_000_000, FreesAt: now.Add(30 * time.Minute), ResetsAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Now: now},
			"Your organization's monthly limit of 20,000,000 tokens is held by answers under way (0 used, 20,000,000 held). Try again when they end, in 30 min at most.", 30 * time.Minute},
		// Holds that end only after the reset: the reset is the sooner.
		{quota.ExceededError{Limit: quota.UserDay, Size: 2_000, Used: 0, Held: 2_000, FreesAt: time.Date(2026, 12, 2, 0, 0, 30, 0, time.UTC), ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Now: time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)},
			"Your daily limit of 2,000 tokens is used up. It resets at 00:00 UTC, in 1 min.", time.Minute},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Message())
		assert.Equal(t, tt.wait, tt.err.RetryAfter())
	}
}
