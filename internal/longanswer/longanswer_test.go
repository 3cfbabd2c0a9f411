package longanswer_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/longanswer"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// Hops against the simulator on the real azcore pipeline, in virtual time:
// each hop is given the default budget (200 s).

const (
	budget = 200 * time.Second
	// long is a generation of 600 s: three hops and a bit.
	long = "Count to 300, with a comma between each number, no newlines and a period at the end. [[sim:long s=600]]"
)

var (
	alice = cursor.Owner{OID: "oid-alice", TID: "tid-1"}
	bob   = cursor.Owner{OID: "oid-bob", TID: "tid-1"}
)

func setup(t *testing.T, limit time.Duration) (*longanswer.Hops, *aoaitest.Server) {
	t.Helper()
	sim := aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"o3"}, TimeToFirstToken: 2 * time.Second})
	_, hc := memnet.Serve(t, sim)
	t.Cleanup(sim.Close)
	u, _ := url.Parse("http://127.0.0.1:8081")
	c, err := aoai.New(aoai.Options{Endpoint: u, Deployment: "o3", APIKey: "k", Transport: hc})
	require.NoError(t, err)
	return &longanswer.Hops{Upstream: c, Limit: limit, Margin: 2 * time.Second, Poll: 2 * time.Second}, sim
}

func question(q string, onDelta func(string)) *aoai.GenerationRequest {
	return &aoai.GenerationRequest{Messages: []aoai.Message{{Role: "user", Content: q}}, MaxTokens: 4000, OnDelta: onDelta}
}

// hop runs fn as one request with the budget; it returns once the
// simulator has recorded the hop's calls (it keeps a record when its
// handler has returned, after the client has the answer).
func hop[T any](fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	defer synctest.Wait()
	return fn(ctx)
}

// follow runs a long answer to its end, streamed (or whole), each hop in a
// budget of its own; it returns what the caller saw and every hop.
func follow(t *testing.T, h *longanswer.Hops, q string, owner cursor.Owner, whole bool) (string, []*longanswer.Result) {
	t.Helper()
	var seen strings.Builder
	onDelta := func(s string) { seen.WriteString(s) }
	if whole {
		onDelta = nil
	}
	res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
		return h.Start(ctx, question(q, onDelta), owner)
	})
	require.NoError(t, err)
	all := []*longanswer.Result{res}
	if res.Next != nil {
		all = append(all, followFrom(t, h, *res.Next, owner, whole, onDelta)...)
	}
	if whole {
		return all[len(all)-1].Text, all
	}
	return seen.String(), all
}

// followFrom continues a long answer from c to its end, each hop in a
// budget of its own, relaying to onDelta (nil for whole answers); it
// returns every hop it made.
func followFrom(t *testing.T, h *longanswer.Hops, c cursor.Cursor, owner cursor.Owner, whole bool, onDelta func(string)) []*longanswer.Result {
	t.Helper()
	var all []*longanswer.Result
	for {
		res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, c, owner, whole, "", onDelta)
		})
		require.NoError(t, err)
		all = append(all, res)
		if res.Next == nil {
			return all
		}
		c = *res.Next
	}
}

// A 600 s generation is delivered over at least three hops, byte for byte
// the simulator's, streamed or whole: one create, then one resume per
// later hop, each after the last event the hop before relayed; the usage
// comes once, with the end.
func TestLongAnswerAcrossHops(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run("whole="+strconv.FormatBool(whole), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, sim := setup(t, 30*time.Minute)
				text, hops := follow(t, h, long, alice, whole)
				require.GreaterOrEqual(t, len(hops), 4, "600 s in hops of under 200 s")
				info, ok := sim.Generation(hops[0].ResponseID)
				require.True(t, ok)
				assert.Equal(t, info.Text, text)
				assert.True(t, strings.HasSuffix(text, "299, 300."))
				last := hops[len(hops)-1]
				assert.True(t, last.Done)
				assert.Equal(t, info.Text, last.Answer, "the whole answer with the end")
				assert.Equal(t, sim.Stats().CompletionTokens, last.Usage.CompletionTokens)
				assert.Equal(t, 1, sim.Stats().Generations, "one generation")

				var calls []string
				for _, r := range sim.Requests() {
					calls = append(calls, r.Method+" "+r.Path+"?"+r.Query)
				}
				id := hops[0].ResponseID
				want := []string{"POST /openai/v1/responses?"}
				for i, r := range hops[1:] {
					after := 0
					if !whole {
						after = hops[i].Next.After
					}
					assert.Equal(t, i+2, r.Hop)
					want = append(want, "GET /openai/v1/responses/"+id+"?", "GET /openai/v1/responses/"+id+"?stream=true&starting_after="+strconv.Itoa(after))
				}
				assert.Equal(t, want, calls, "a create, then a retrieve (the owner's check) and a resume per hop")
				if !whole {
					var joined string
					for _, r := range hops {
						joined += r.Text
					}
					assert.Equal(t, text, joined, "each hop relays its own part")
				}
			})
		})
	}
}

// A resume Azure refuses falls back to polling within the hop: the rest
// is delivered when the response completes, late, never lost.
func TestRefusedResumeFallsBackToPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 30*time.Minute)
		text, hops := follow(t, h, long+" [[sim:stale s=100]]", alice, false)
		info, _ := sim.Generation(hops[0].ResponseID)
		assert.Equal(t, info.Text, text)
		polled := false
		for _, r := range hops {
			polled = polled || r.Polled
		}
		assert.True(t, polled)
	})
}

// Another caller's cursor, an edited one and one naming a response that
// does not exist are not found, and nothing is relayed; an expired one is
// not found either, and its generation is cancelled.
func TestCursorsThatMayNotContinue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 300*time.Second)
		first, err := hop(func(ctx context.Context) (*longanswer.Result, error) { return h.Start(ctx, question(long, nil), alice) })
		require.NoError(t, err)
		require.NotNil(t, first.Next)
		relayed := false
		onDelta := func(string) { relayed = true }
		for name, tt := range map[string]struct {
			c      cursor.Cursor
			caller cursor.Owner
		}{
			"another caller's": {*first.Next, bob},
			"another tenant's": {*first.Next, cursor.Owner{OID: alice.OID, TID: "tid-2"}},
			"anonymous":        {*first.Next, cursor.Owner{}},
			"unknown":          {cursor.Cursor{ResponseID: "resp_0000", After: 3, Hop: 2}, alice},
		} {
			res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
				return h.Continue(ctx, tt.c, tt.caller, false, "", onDelta)
			})
			assert.ErrorIs(t, err, cursor.ErrNotFound, name)
			assert.Nil(t, res, "nothing of another's response is told: %s", name)
			res, err = h.Cancel(context.Background(), tt.c, tt.caller)
			assert.ErrorIs(t, err, cursor.ErrNotFound, name)
			assert.Nil(t, res, name)
		}
		assert.False(t, relayed)
		info, _ := sim.Generation(first.ResponseID)
		assert.Equal(t, "in_progress", info.Status, "another caller's cancel cancels nothing")

		time.Sleep(400 * time.Second)
		res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, *first.Next, alice, false, "", onDelta)
		})
		assert.ErrorIs(t, err, cursor.ErrNotFound, "past its limit")
		require.NotNil(t, res, "the caller's own: how it ended is told, for its quota")
		assert.Equal(t, longanswer.EndLimit, res.End)
		assert.True(t, res.Cancelled)
		assert.Equal(t, "1", res.Metadata["timebox"])
		assert.False(t, relayed)
		info, _ = sim.Generation(first.ResponseID)
		assert.Equal(t, "cancelled", info.Status, "an expired generation is cancelled")
	})
}

// LONG_ANSWER_LIMIT ends the hop that reaches it: the generation is
// cancelled upstream and the hop fails with ErrLimit, its text delivered.
func TestLimitCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 300*time.Second)
		var seen strings.Builder
		first, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Start(ctx, question(long, func(s string) { seen.WriteString(s) }), alice)
		})
		require.NoError(t, err)
		start := time.Now()
		res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, *first.Next, alice, false, "", func(s string) { seen.WriteString(s) })
		})
		assert.ErrorIs(t, err, longanswer.ErrLimit)
		assert.True(t, res.Cancelled)
		assert.Equal(t, longanswer.EndLimit, res.End)
		assert.Less(t, time.Since(start), budget-2*time.Second, "the limit came before the hop's budget")
		info, _ := sim.Generation(first.ResponseID)
		assert.Equal(t, "cancelled", info.Status)
		assert.Equal(t, info.Text, seen.String(), "the text so far, all of it delivered")
	})
}

// A caller that leaves during a hop has the generation cancelled; a
// cancel between hops cancels it too; cancelling one that has finished is
// not an error.
func TestCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 30*time.Minute)
		ctx, leave := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Second, leave) // the caller leaves at 50 s
		res, err := h.Start(ctx, question(long, nil), alice)
		require.Error(t, err)
		assert.True(t, res.Cancelled)
		assert.Equal(t, longanswer.EndCallerGone, res.End)
		info, _ := sim.Generation(res.ResponseID)
		assert.Equal(t, "cancelled", info.Status, "client gone: cancelled upstream")

		first, err := hop(func(ctx context.Context) (*longanswer.Result, error) { return h.Start(ctx, question(long, nil), alice) })
		require.NoError(t, err)
		cancelled, err := h.Cancel(context.Background(), *first.Next, alice)
		require.NoError(t, err)
		assert.True(t, cancelled.Cancelled)
		assert.Equal(t, longanswer.EndCancelled, cancelled.End)
		assert.Zero(t, cancelled.Usage, "a cancelled response reports no usage")
		assert.Equal(t, alice.Metadata(), cancelled.Metadata)
		info, _ = sim.Generation(first.ResponseID)
		assert.Equal(t, "cancelled", info.Status, "between hops: cancelled upstream")
		_, err = hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, *first.Next, alice, false, "", nil)
		})
		assert.ErrorIs(t, err, cursor.ErrNotFound, "a cancelled answer is gone")

		_, hops := follow(t, h, "Count to 3", alice, false)
		require.Len(t, hops, 1)
		fin := cursor.Cursor{ResponseID: hops[0].ResponseID, After: 1, Hop: 2}
		done, err := h.Cancel(context.Background(), fin, alice)
		assert.NoError(t, err, "cancelling a finished one is not an error")
		assert.False(t, done.Cancelled)
		assert.Equal(t, longanswer.EndCompleted, done.End)
		assert.Positive(t, done.Usage.TotalTokens, "its usage, for whoever settles it")
	})
}

// A fast 503 on a continue fails the hop before it relays anything;
// continued again with the same cursor, the hop yields the same range:
// no text repeated, none lost.
func TestFast503OnContinueIsRetriedWithTheSameCursor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 30*time.Minute)
		var seen strings.Builder
		onDelta := func(s string) { seen.WriteString(s) }
		first, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Start(ctx, question(long+" [[sim:status code=503 on=resume times=1 id=c1]]", onDelta), alice)
		})
		require.NoError(t, err)
		c := *first.Next
		_, err = hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, c, alice, false, "", onDelta)
		})
		var e *aoai.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, aoai.KindUnavailable, e.Kind)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, first.Text, seen.String(), "nothing relayed")
		followFrom(t, h, c, alice, false, onDelta)
		info, _ := sim.Generation(first.ResponseID)
		assert.Equal(t, info.Text, seen.String())
	})
}

// A resume that has not answered when the hop's time runs out ends the hop
// with the same place to go on from: nothing was relayed, nothing is lost.
func TestResumeThatDoesNotAnswerInTimeContinues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, sim := setup(t, 30*time.Minute)
		var seen strings.Builder
		onDelta := func(s string) { seen.WriteString(s) }
		first, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Start(ctx, question(long+" [[sim:hang on=resume times=1 id=h1]]", onDelta), alice)
		})
		require.NoError(t, err)
		res, err := hop(func(ctx context.Context) (*longanswer.Result, error) {
			return h.Continue(ctx, *first.Next, alice, false, "", onDelta)
		})
		require.NoError(t, err)
		require.NotNil(t, res.Next)
		assert.Equal(t, first.Next.After, res.Next.After, "the same place")
		assert.Equal(t, first.Next.Offset, res.Next.Offset)
		assert.Equal(t, 3, res.Next.Hop)
		followFrom(t, h, *res.Next, alice, false, onDelta)
		info, _ := sim.Generation(first.ResponseID)
		assert.Equal(t, info.Text, seen.String())
	})
}

// A caller that took whole answers and then streams the rest gets exactly
// what follows the text it already has, also when Azure refuses the
// resume from the third hop (stale s=300) or the second (s=100) and the
// rest is cut from the polled whole text: a cursor's offset is of the
// whole text, whichever way its hops were read.
func TestStreamAfterWholeHopsGoesOnWhereTheTextStopped(t *testing.T) {
	for _, q := range []string{long, long + " [[sim:stale s=300]]", long + " [[sim:stale s=100]]"} {
		t.Run(strings.TrimPrefix(q, long), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, sim := setup(t, 30*time.Minute)
				res, err := hop(func(ctx context.Context) (*longanswer.Result, error) { return h.Start(ctx, question(q, nil), alice) })
				require.NoError(t, err)
				had, c := res.Text, *res.Next
				res, err = hop(func(ctx context.Context) (*longanswer.Result, error) { return h.Continue(ctx, c, alice, true, "", nil) })
				require.NoError(t, err)
				require.NotNil(t, res.Next, "still writing after two hops")
				if len(res.Text) > len(had) {
					had = res.Text // a polled hop has no text to show until the end
				}
				var rest strings.Builder
				followFrom(t, h, *res.Next, alice, false, func(s string) { rest.WriteString(s) })
				info, _ := sim.Generation(res.ResponseID)
				assert.Equal(t, info.Text, had+rest.String())
			})
		})
	}
}
