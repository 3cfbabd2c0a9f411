package aoai_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// client joins a real azcore client to the simulator over memnet, on a
// gpt-4o-mini deployment unless o names another.
func client(t *testing.T, o aoai.Options) (*aoai.Client, *aoaitest.Server) {
	return clientOf(t, o, aoaitest.Options{})
}

// clientOf is client with the simulator's latency model in so.
func clientOf(t *testing.T, o aoai.Options, so aoaitest.Options) (*aoai.Client, *aoaitest.Server) {
	if o.Deployment == "" {
		o.Deployment = "gpt-4o-mini"
	}
	so.APIKey, so.Deployments = "k", []string{o.Deployment}
	sim := aoaitest.New(so)
	_, hc := memnet.Serve(t, sim)
	o.Endpoint, _ = url.Parse("http://127.0.0.1:8081")
	o.APIKey, o.Transport = "k", hc
	c, err := aoai.New(o)
	require.NoError(t, err)
	return c, sim
}

func req(q string) *aoai.Request {
	return &aoai.Request{Messages: []aoai.Message{{Role: "user", Content: q}}, MaxTokens: 50}
}

// Each model gets the token limit it accepts: reasoning models refuse
// max_tokens (400 unsupported_parameter) and take max_completion_tokens.
func TestTokenLimitFieldByModel(t *testing.T) {
	for _, deployment := range []string{"gpt-4o-mini", "gpt-4", "o3-mini", "gpt-5-chat", "gpt-5-mini"} {
		t.Run(deployment, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, _ := client(t, aoai.Options{Deployment: deployment})
				resp, err := c.Complete(context.Background(), req("hi"))
				require.NoError(t, err)
				assert.NotEmpty(t, resp.Content)
			})
		})
	}
}

func TestThrottleRetriesStopAtMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := client(t, aoai.Options{MaxAttempts: 3})
		start := time.Now()
		_, err := c.Complete(context.Background(), req("[[sim:throttle s=2 times=5 id=a]] hi"))
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindThrottled, e.Kind)
		assert.Equal(t, 3, e.Attempts)
		assert.Equal(t, 2*time.Second, e.RetryAfter)
		assert.Equal(t, 4*time.Second, time.Since(start), "two waits of 2 s, none after the last attempt")
		assert.Equal(t, 3, sim.Stats().Requests)
	})
}

func TestThrottleWaitMustFitTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := client(t, aoai.Options{})
		ctx, cancel, _ := budget.Start(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Complete(ctx, req("[[sim:throttle s=12 times=1 id=b]] hi"))
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindThrottled, e.Kind)
		assert.Equal(t, 1, e.Attempts)
		assert.Equal(t, 12*time.Second, e.RetryAfter)
		assert.Equal(t, 1, sim.Stats().Requests)
	})
}

// azcore's own retry policy is off: a 503 is one request, not four.
func TestNoHiddenRetries(t *testing.T) {
	for _, d := range []string{"[[sim:status code=503]]", "[[sim:status code=500]]", "[[sim:reset]]", "[[sim:status code=504]]"} {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, sim := client(t, aoai.Options{})
				_, err := c.Complete(context.Background(), req(d+" hi"))
				require.Error(t, err)
				assert.Equal(t, 1, sim.Stats().Requests)
			})
		})
	}
}

func TestSlowFailureIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := client(t, aoai.Options{FastFailure: 10 * time.Second})
		_, err := c.Complete(context.Background(), req("[[sim:throttle s=1 after=10000]] hi"))
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindSlowFailure, e.Kind, "a throttle that took the threshold is not retried either")
		assert.Equal(t, 10*time.Second, e.Elapsed)
		assert.Equal(t, 1, sim.Stats().Requests)
	})
}

func TestCancelledContextIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := client(t, aoai.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := c.Complete(ctx, req("[[sim:hang]] hi"))
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindCanceled, e.Kind)
		assert.Equal(t, 3*time.Second, e.Elapsed)
		synctest.Wait()
		assert.Equal(t, 1, sim.Stats().Cancelled)
	})
}

func TestNewNeedsCredentials(t *testing.T) {
	u, _ := url.Parse("https://contoso.openai.azure.com")
	_, err := aoai.New(aoai.Options{Endpoint: u, Deployment: "d"})
	assert.Error(t, err)
	_, err = aoai.New(aoai.Options{Deployment: "d", APIKey: "k"})
	assert.Error(t, err)
}

// Every answer is streamed from Azure OpenAI, with usage, and handed on
// piece by piece as it arrives.
func TestAnswerIsStreamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := clientOf(t, aoai.Options{}, aoaitest.Options{TimeToFirstToken: 2 * time.Second, PerToken: 100 * time.Millisecond})
		start := time.Now()
		var at []time.Duration
		var text string
		r := req("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ...")
		r.OnDelta = func(s string) {
			at = append(at, time.Since(start))
			text += s
		}
		resp, err := c.Complete(context.Background(), r)
		require.NoError(t, err)
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", resp.Content)
		assert.Equal(t, resp.Content, text, "the deltas make up the answer")
		assert.Equal(t, "stop", resp.FinishReason)
		assert.Equal(t, resp.Usage.CompletionTokens, len(at), "one delta per token")
		assert.Equal(t, 2100*time.Millisecond, at[0], "the first piece as soon as it arrives (the simulator's time to first token and one token's time)")
		assert.Positive(t, resp.Usage.PromptTokens, "usage from the stream's last chunk")
		assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
		synctest.Wait() // the simulator keeps its record once its handler has returned
		recs := sim.Requests()
		require.Len(t, recs, 1)
		assert.True(t, recs[0].Stream)
	})
}

// A deadline after the first token keeps the text so far.
func TestDeadlineAfterFirstTokenKeepsTheText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim := clientOf(t, aoai.Options{}, aoaitest.Options{TimeToFirstToken: time.Second, PerToken: time.Second})
		ctx, cancel, _ := budget.Start(context.Background(), 10*time.Second+500*time.Millisecond)
		defer cancel()
		var got string
		r := req("Count to 100, with a comma between each number, no newlines and a period at the end.")
		r.OnDelta = func(s string) { got += s }
		_, err := c.Complete(ctx, r)
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindCanceled, e.Kind)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		assert.Equal(t, "1, 2, 3, ", e.Partial, "nine tokens in 10.5 s: the first at 2 s (time to first token, then one token's time), then one a second")
		assert.Equal(t, got, e.Partial)
		assert.Equal(t, 1, e.Attempts)
		synctest.Wait()
		assert.Equal(t, 1, sim.Stats().Cancelled, "the upstream call is cut")
	})
}

// A 404 says which URL path was called (never the host's key): a wrong
// deployment or a path the endpoint should not have had shows in the log
// line's error, where it was a bare 404 before.
func TestNotFoundNamesThePathCalled(t *testing.T) {
	const key = "key-never-in-an-error"
	tests := []struct {
		name, endpoint, deployment, apiVersion, path string
	}{
		{"unknown deployment", "http://127.0.0.1:8081", "gpt-4o", "", "/openai/v1/chat/completions"},
		{"unknown deployment, api-version path", "http://127.0.0.1:8081", "gpt-4o", "2024-10-21", "/openai/deployments/gpt-4o/chat/completions"},
		{"endpoint with a path", "http://127.0.0.1:8081/openai/v1", "gpt-4o-mini", "", "/openai/v1/openai/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sim := aoaitest.New(aoaitest.Options{APIKey: key, Deployments: []string{"gpt-4o-mini"}})
				_, hc := memnet.Serve(t, sim)
				endpoint, _ := url.Parse(tt.endpoint)
				c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: tt.deployment, APIVersion: tt.apiVersion, APIKey: key, Transport: hc})
				require.NoError(t, err)
				_, err = c.Complete(context.Background(), req("hi"))
				var e *aoai.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, 404, e.Status)
				assert.Equal(t, aoai.KindMisconfigured, e.Kind)
				assert.Equal(t, tt.path, e.Path)
				assert.Contains(t, err.Error(), "path "+tt.path)
				assert.NotContains(t, err.Error(), key)
				assert.NotContains(t, err.Error(), "api-version")
			})
		})
	}
}
