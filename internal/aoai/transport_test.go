package aoai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// A full instance (host.json: 100 requests at a time) reuses its upstream
// connections over HTTP/1.1: after one round of 100 concurrent calls, a
// second round opens none. (azcore's default transport keeps 10 idle per
// host, so the second round opened 90.)
func TestDefaultTransportKeepsConnectionsForAFullInstance(t *testing.T) {
	const n = aoai.MaxIdleConns
	sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	var (
		opened  atomic.Int64
		mu      sync.Mutex
		arrived int
		all     chan struct{}
	)
	// Every request of a round waits until all n have arrived, so the round
	// really holds n connections at once.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		wait := all
		mu.Unlock()
		select {
		case <-wait:
		case <-r.Context().Done():
			return
		}
		sim.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	endpoint, _ := url.Parse(srv.URL)
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	round := func() int64 {
		mu.Lock()
		arrived, all = 0, make(chan struct{})
		mu.Unlock()
		before := opened.Load()
		// The transport puts a connection back in its idle pool on its own
		// goroutine, after the caller has read the body to its end; wait
		// for every put-back (an event, not the clock) so that the next
		// round cannot race it and dial a connection it did not need.
		idle := make(chan struct{}, n)
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			// Called with a nil error when the pool keeps the connection and
			// with the reason when it does not: either way it is done with it.
			PutIdleConn: func(error) { idle <- struct{}{} },
		})
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				_, err := c.Complete(ctx, req("hi"))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		for range n {
			select {
			case <-idle:
			case <-time.After(time.Minute): // a safety net, not a timing: keep-alives off never report
				require.FailNow(t, "the transport did not hand back its connections")
			}
		}
		return opened.Load() - before
	}
	require.Equal(t, int64(n), round(), "the first round opens one connection per call")
	assert.Zero(t, round(), "the second round reuses the first round's connections")
}

// The default transport carries a request body many times its buffers'
// size, the simulator's full set of Azure's answer headers, and a header
// line of 12 KB.
func TestDefaultTransportCarriesLargeBodies(t *testing.T) {
	sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-long", strings.Repeat("x", 12<<10))
		sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	endpoint, _ := url.Parse(srv.URL)
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	resp, err := c.Complete(context.Background(), req(strings.Repeat("word ", 20000)))
	require.NoError(t, err)
	assert.Greater(t, resp.Usage.PromptTokens, 20000)
	assert.NotEmpty(t, resp.Content)
}

// The default transport does not follow redirects: Azure OpenAI does not
// redirect, and a followed 307 would carry the api-key to wherever Location
// points (http.Client keeps that header on a redirect to another host). The
// redirect is answered as the failure it is, and the other host is never
// called.
func TestDefaultTransportDoesNotFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	endpoint, _ := url.Parse(srv.URL)
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), req("hi"))
	var e *aoai.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusTemporaryRedirect, e.Status)
	assert.Equal(t, aoai.KindRejected, e.Kind)
	assert.Zero(t, elsewhere.Load(), "the redirect was followed")
}

// A connection failure reads as it did through http.Client: the method and
// the URL, then the cause.
func TestDefaultTransportErrorsNameTheRequest(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint, _ := url.Parse(srv.URL)
	srv.Close() // nothing listens there now
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), req("hi"))
	var e *aoai.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, aoai.KindTransient, e.Kind)
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "Post", ue.Op)
	assert.Equal(t, srv.URL+"/openai/v1/chat/completions", ue.URL)
}

// headersOfOneCall makes one call through the default transport to the
// simulator and returns the request headers the simulator received.
func headersOfOneCall(t *testing.T) http.Header {
	t.Helper()
	headers := make(chan http.Header, 1)
	sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"gpt-4o-mini"}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	endpoint, _ := url.Parse(srv.URL)
	c, err := aoai.New(aoai.Options{Endpoint: endpoint, Deployment: "gpt-4o-mini", APIKey: "k"})
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), req("hi"))
	require.NoError(t, err)
	return <-headers
}

// Every request says it is timebox's (azcore's telemetry policy), by which
// Azure's logs tell timebox's requests from others'.
func TestRequestsCarryTimeboxUserAgent(t *testing.T) {
	assert.Equal(t, "azsdk-go-timebox/v1 ("+runtime.Version()+"; "+runtime.GOOS+")", headersOfOneCall(t).Get("User-Agent"))
}

// The default transport does not ask for a compressed answer: a stream of
// small events is not worth it, and a compressing server may hold events
// back to fill its blocks.
func TestDefaultTransportAsksForNoCompression(t *testing.T) {
	assert.Empty(t, headersOfOneCall(t).Values("Accept-Encoding"))
}
