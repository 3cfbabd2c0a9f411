package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
	args := []string{"ask"}
	if stream {
		args = append(args, "--stream")
	}
	return runLong(t, "o3", aoaitest.Options{}, append(args, "--url", "http://app.test", question))
}

// runLong runs timebox with args against the whole stack on deployment (a
// model in background mode), its simulator shaped by opts, in virtual time
// inside the caller's synctest bubble.
func runLong(t *testing.T, deployment string, opts aoaitest.Options, args []string) longAsk {
	t.Helper()
	const key = "sim-key"
	settings := map[string]string{
		"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:8081", "AZURE_OPENAI_DEPLOYMENT": deployment, "AZURE_OPENAI_API_KEY": key,
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	opts.APIKey, opts.Deployments = key, []string{deployment}
	sim := aoaitest.New(opts)
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

// The long-answer recipe make run prints (scripts/examples.sh, under
// AZURE_OPENAI_DEPLOYMENT=o4-mini) shows its hops within a minute: run as
// printed, against the simulator paced as make run paces it, it takes
// under a minute, in three parts or more, the first said within 15 s.
func TestMakeRunsLongAnswerRecipeShowsHopsWithinAMinute(t *testing.T) {
	_, err := os.ReadFile("../../scripts/examples.sh") // go test's cache then knows the script
	require.NoError(t, err)
	cmd := exec.Command("bash", "../../scripts/examples.sh", "http://127.0.0.1:7071/api", "7071", "simulator")
	cmd.Env = append(os.Environ(), "AZURE_OPENAI_DEPLOYMENT=o4-mini")
	printed, err := cmd.Output()
	require.NoError(t, err)
	var recipe string
	for line := range strings.Lines(string(printed)) {
		if strings.Contains(line, "go run ./cmd/timebox ask") && strings.Contains(line, "[[sim:long") {
			recipe, _, _ = strings.Cut(line, "   #")
		}
	}
	require.NotEmpty(t, recipe, "make run prints a long-answer recipe for the CLI")
	words := shellWords(t, strings.TrimSpace(recipe))
	require.Equal(t, []string{"go", "run", "./cmd/timebox", "ask"}, words[:4])
	args := words[3:]
	for i := range args {
		if args[i] == "--url" {
			args[i+1] = "http://app.test"
		}
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		got := runLong(t, "o4-mini", aoaitest.Options{TimeToFirstToken: 400 * time.Millisecond, PerToken: 15 * time.Millisecond}, args)
		took := time.Since(start)
		assert.Less(t, took, time.Minute, "the whole answer within a minute")
		parts := strings.Count(got.errOut, " of the answer, still writing\n")
		assert.GreaterOrEqual(t, parts, 2, got.errOut)
		assert.Equal(t, got.text+"\n", got.out, "the whole answer, once")
		m := regexp.MustCompile(`attempt 1: status 202 in ([\dhms.]+) -> part 1 of the answer`).FindStringSubmatch(got.errOut)
		require.NotNil(t, m, got.errOut)
		first, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		assert.Less(t, first, 15*time.Second, "the first part said within 15 s")
	})
}

// shellWords splits a command line as bash would for plain words and
// single- or double-quoted ones (no expansions: the line was printed
// with them done).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "quotes closed: %s", line)
	if inWord {
		words = append(words, word.String())
	}
	return words
}
