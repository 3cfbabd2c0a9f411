package aoai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// The Responses API client on the real azcore pipeline against the
// simulator, in virtual time.

const count300 = "Count to 300, with a comma between each number, no newlines and a period at the end."

// wire records the bodies and URLs of the requests a transport sends.
type wire struct {
	next   *http.Client
	mu     sync.Mutex
	bodies []string
	urls   []string
}

func (w *wire) Do(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	w.mu.Lock()
	w.bodies, w.urls = append(w.bodies, string(b)), append(w.urls, req.Method+" "+req.URL.RequestURI())
	w.mu.Unlock()
	return w.next.Do(req)
}

// responsesClient joins a client of an o3 deployment to the simulator
// over memnet, every request recorded.
func responsesClient(t *testing.T, so aoaitest.Options) (*aoai.Client, *aoaitest.Server, *wire) {
	t.Helper()
	so.APIKey, so.Deployments = "k", []string{"o3"}
	sim := aoaitest.New(so)
	_, hc := memnet.Serve(t, sim)
	t.Cleanup(sim.Close)
	w := &wire{next: hc}
	u, _ := url.Parse("http://127.0.0.1:8081")
	c, err := aoai.New(aoai.Options{Endpoint: u, Deployment: "o3", APIKey: "k", Transport: w})
	require.NoError(t, err)
	return c, sim, w
}

func genReq(q string, onDelta func(string)) *aoai.GenerationRequest {
	return &aoai.GenerationRequest{Messages: []aoai.Message{{Role: "user", Content: q}}, MaxTokens: 4000, RequestID: "req-1",
		Metadata: map[string]string{"timebox_oid": "o1"}, OnDelta: onDelta}
}

// A create asks for background, stream, store and max_output_tokens; cut
// by its context, the hop says where it stopped, and a resume from there
// delivers the rest: the whole answer, once, with the generation's usage.
func TestGenerationAcrossHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim, w := responsesClient(t, aoaitest.Options{PerToken: time.Second})
		var got strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
		hop, err := c.Create(ctx, genReq(count300, func(s string) { got.WriteString(s) }))
		cancel()
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindCanceled, e.Kind)
		require.NotNil(t, hop)
		assert.Regexp(t, `^resp_`, hop.ResponseID)
		assert.False(t, hop.Done)
		assert.Equal(t, got.String(), hop.Text)
		assert.Positive(t, hop.Last)
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(w.bodies[0]), &body))
		assert.Equal(t, true, body["background"])
		assert.Equal(t, true, body["stream"])
		assert.Equal(t, true, body["store"])
		assert.Equal(t, float64(4000), body["max_output_tokens"])
		assert.Equal(t, "o3", body["model"])
		assert.Equal(t, map[string]any{"timebox_oid": "o1"}, body["metadata"])
		assert.Equal(t, "POST /openai/v1/responses", w.urls[0])

		second, err := c.Resume(context.Background(), hop.Backend, hop.ResponseID, hop.Last, "req-2", func(s string) { got.WriteString(s) })
		require.NoError(t, err)
		assert.Equal(t, "GET /openai/v1/responses/"+hop.ResponseID+"?stream=true&starting_after="+itoa(hop.Last), w.urls[1])
		assert.True(t, second.Done)
		assert.Equal(t, "stop", second.FinishReason)
		info, _ := sim.Generation(hop.ResponseID)
		assert.Equal(t, info.Text, got.String(), "byte for byte, nothing repeated or lost")
		assert.Equal(t, hop.Text+second.Text, got.String())
		assert.Equal(t, got.String(), second.Answer, "the whole answer comes with the end")
		assert.Positive(t, second.Usage.PromptTokens)
		assert.Equal(t, sim.Stats().CompletionTokens, second.Usage.CompletionTokens, "the whole generation's")
		assert.Equal(t, 1, sim.Stats().Generations, "one generation billed")
	})
}

// Keepalives take sequence numbers: a hop cut while the model is quiet
// stops at the last keepalive, and the resume goes on after it.
func TestKeepalivesTakeSequenceNumbers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim, _ := responsesClient(t, aoaitest.Options{TimeToFirstToken: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 32*time.Second)
		hop, err := c.Create(ctx, genReq("hi [[sim:keepalive every=5000]]", nil))
		cancel()
		require.Error(t, err)
		info, _ := sim.Generation(hop.ResponseID)
		assert.Equal(t, 8, info.Events-1, "created, queued, in_progress and six keepalives")
		assert.Equal(t, info.Events-1, hop.Last)
		assert.Empty(t, hop.Text)
		next, err := c.Resume(context.Background(), hop.Backend, hop.ResponseID, hop.Last, "", nil)
		require.NoError(t, err)
		assert.True(t, next.Done)
		info, _ = sim.Generation(hop.ResponseID)
		assert.Equal(t, info.Text, next.Text)
	})
}

// Failed, incomplete and in-band errors (both shapes) end a hop as Azure
// ends the response: an error with the upstream's code and the text so
// far, or an answer cut at its limit.
func TestGenerationEnds(t *testing.T) {
	tests := []struct {
		directive string
		kind      aoai.Kind
		code      string
		finish    string
	}{
		{"[[sim:error tokens=4]]", aoai.KindBroken, "server_error", ""},
		{"[[sim:error tokens=4 shape=nested]]", aoai.KindBroken, "server_error", ""},
		{"[[sim:error tokens=0 shape=nested]]", aoai.KindTransient, "server_error", ""},
		{"[[sim:failed tokens=4]]", aoai.KindBroken, "server_error", ""},
		{"[[sim:incomplete tokens=4]]", 0, "", "length"},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, _, _ := responsesClient(t, aoaitest.Options{})
				hop, err := c.Create(context.Background(), genReq(count300+" "+tt.directive, nil))
				require.NotNil(t, hop)
				if tt.kind == 0 {
					require.NoError(t, err)
					assert.Equal(t, tt.finish, hop.FinishReason)
					assert.True(t, hop.Done)
					return
				}
				var e *aoai.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.kind, e.Kind)
				assert.Equal(t, tt.code, e.Code)
				assert.Equal(t, hop.Text, e.Partial)
			})
		})
	}
}

// A refused resume is told apart, and Await reads the rest once the
// response completes; an unknown response is told apart too; a cancel
// reaches the simulator.
func TestResumeRefusedAwaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sim, _ := responsesClient(t, aoaitest.Options{PerToken: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		hop, _ := c.Create(ctx, genReq(count300+" [[sim:stale s=60]]", nil))
		cancel()
		time.Sleep(2 * time.Minute)
		_, err := c.Resume(context.Background(), hop.Backend, hop.ResponseID, hop.Last, "", nil)
		assert.True(t, errors.Is(err, aoai.ErrResumeRefused), "%v", err)
		r, err := c.Await(context.Background(), hop.Backend, hop.ResponseID, 2*time.Second)
		require.NoError(t, err)
		assert.Equal(t, "completed", r.Status)
		assert.True(t, strings.HasPrefix(r.Text, hop.Text), "the whole text, from which the rest is cut")
		assert.Equal(t, map[string]string{"timebox_oid": "o1"}, r.Metadata)
		assert.Equal(t, "stop", r.FinishReason)

		_, err = c.Retrieve(context.Background(), hop.Backend, "resp_unknown")
		assert.True(t, errors.Is(err, aoai.ErrUnknownResponse), "%v", err)

		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		hop, _ = c.Create(ctx, genReq(count300, nil))
		cancel()
		r, err = c.Cancel(context.Background(), hop.Backend, hop.ResponseID)
		require.NoError(t, err)
		assert.Equal(t, "cancelled", r.Status)
		info, _ := sim.Generation(hop.ResponseID)
		assert.Equal(t, "cancelled", info.Status)
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
