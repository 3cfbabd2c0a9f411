package main

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// long600 is a generation of 600 s: hops of under 200 s take four.
const long600 = "Count to 300, with a comma between each number, no newlines and a period at the end. [[sim:long s=600]]"

// longAsk is what timebox ask did with a long answer: its stdout and
// stderr, the simulator's text of the generation, the paths it sent and
// the media type of each answer.
type longAsk struct {
	out, errOut, text string
	paths, media      []string
	// sentBefore is, for each write to stdout, how many requests the CLI
	// had sent by then: the text printed as the hops arrive.
	sentBefore []int
}

// countingWriter records, with each write, how many requests had been sent.
type countingWriter struct {
	bytes.Buffer
	sent   func() int
	before []int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.before = append(w.before, w.sent())
	return w.Buffer.Write(p)
}

// askLong runs timebox ask (--stream when stream) against the whole stack
// on an o3 deployment (background mode), in virtual time, inside the
// caller's synctest bubble.
func askLong(t *testing.T, question string, stream bool) longAsk {
	t.Helper()
	const key = "sim-key"
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": "o3", "AZURE_OPENAI_API_KEY": key,
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	sim := aoaitest.New(aoaitest.Options{APIKey: key, Deployments: []string{"o3"}})
	_, simClient := memnet.Serve(t, sim)
	t.Cleanup(sim.Close)
	a, err := app.New(cfg, app.Seams{Version: "test", Upstream: simClient})
	require.NoError(t, err)
	var mu sync.Mutex
	var paths, media []string
	started := 0
	_, hc := memnet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		started++
		mu.Unlock()
		a.Handler.ServeHTTP(w, r)
		typ, _, _ := strings.Cut(w.Header().Get("Content-Type"), ";")
		mu.Lock()
		paths, media = append(paths, r.URL.Path), append(media, typ)
		mu.Unlock()
	}))
	args := []string{"ask"}
	if stream {
		args = append(args, "--stream")
	}
	args = append(args, "--url", "http://app.test", question)
	out := &countingWriter{sent: func() int { mu.Lock(); defer mu.Unlock(); return started }}
	var errOut bytes.Buffer
	err = runWith(t.Context(), args, noEnv, out, &errOut, hc)
	require.NoError(t, err, errOut.String())
	synctest.Wait()
	info, _ := sim.Generation(sim.Requests()[0].ResponseID)
	mu.Lock()
	defer mu.Unlock()
	return longAsk{out: out.String(), errOut: errOut.String(), text: info.Text, paths: paths, media: media, sentBefore: out.before}
}

func modes() map[string]bool { return map[string]bool{"streamed": true, "json": false} }

// timebox ask follows a long answer across its hops, streamed (every hop
// an event stream) or not (every hop JSON): the answer on stdout is the
// simulator's, whole, once, printed as the hops arrive; stderr says each
// hop as the part of the answer it is, and only the last as a success.
func TestStackFollowsALongAnswer(t *testing.T) {
	for name, stream := range modes() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got := askLong(t, long600, stream)
				assert.Equal(t, got.text+"\n", got.out, "the whole answer, once")
				status := "202"
				if stream {
					status = "200"
				}
				assert.Regexp(t, `(?m)^attempt 1: status `+status+` in [\dhms.]+ -> part 1 of the answer, still writing$`, got.errOut)
				assert.Regexp(t, `(?m)^attempt 1: status `+status+` in [\dhms.]+ -> part 3 of the answer, still writing$`, got.errOut)
				assert.Regexp(t, `(?m)^attempt 1: status 200 in [\dhms.]+ -> success: part 4, the end of the answer$`, got.errOut)
				assert.Equal(t, 1, strings.Count(got.errOut, "-> success"), got.errOut)
				require.NotEmpty(t, got.sentBefore)
				assert.Less(t, got.sentBefore[0], len(got.paths), "text printed before the last hop was asked for")
				assert.Equal(t, "/api/chat", got.paths[0])
				assert.GreaterOrEqual(t, strings.Count(strings.Join(got.paths, " "), "/api/chat/continue"), 3)
				want := "application/json"
				if stream {
					want = "text/event-stream"
				}
				for i, typ := range got.media {
					assert.Equal(t, want, typ, got.paths[i])
				}
			})
		})
	}
}

// A fast 503 on a continue is tried again with the same cursor: the answer
// is still the simulator's, whole, once, with no text repeated or lost,
// and the hop took one more request than it had parts.
func TestStackFollowsALongAnswerThroughAFast503(t *testing.T) {
	for name, stream := range modes() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got := askLong(t, long600+" [[sim:status code=503 on=resume times=1 id=c503]]", stream)
				assert.Equal(t, got.text+"\n", got.out, "the whole answer, once")
				parts := strings.Count(got.errOut, " of the answer, still writing\n")
				assert.GreaterOrEqual(t, parts, 3, got.errOut)
				assert.Equal(t, parts+1, strings.Count(strings.Join(got.paths, " "), "/api/chat/continue"), "one continue sent twice")
			})
		})
	}
}
