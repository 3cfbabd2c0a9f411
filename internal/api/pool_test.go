package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/testlog"
)

// The hosts of the simulated resources of a pool: two that answer, and
// one where nothing listens (its connections are refused).
const (
	hostA       = "127.0.0.1:9001"
	hostB       = "127.0.0.1:9002"
	hostRefused = "127.0.0.1:9009"
)

// pool is the whole stack over a pool of two simulated Azure OpenAI
// resources, a and b, each a simulator of its own playing that backend
// (its directives with backend=a or backend=b), joined by in-memory
// networks so that it runs inside a synctest bubble.
type pool struct {
	*harness
	a, b *aoaitest.Server
}

// newPool builds the stack with AZURE_OPENAI_BACKENDS set to backends
// (hosts hostA, hostB, hostRefused) and the other settings of env.
func newPool(t *testing.T, backends string, env map[string]string, simOpts ...func(*aoaitest.Options)) *pool {
	t.Helper()
	settings := map[string]string{
		"AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
		"AZURE_OPENAI_BACKENDS":   backends,
		"SIM_KEY":                 simKey,
		"ALLOWED_ORIGINS":         allowedOrigin,
	}
	for k, v := range env {
		settings[k] = v
	}
	cfg, err := config.Load(func(k string) string { return settings[k] })
	require.NoError(t, err)
	sim := func(name string) *aoaitest.Server {
		o := aoaitest.Options{APIKey: simKey, Backend: name, Deployments: []string{"gpt-4o-mini", "chat-a", "chat-b", "o3"}}
		for _, f := range simOpts {
			f(&o)
		}
		return aoaitest.New(o)
	}
	p := &pool{a: sim("a"), b: sim("b")}
	_, clientA := memnet.Serve(t, p.a)
	_, clientB := memnet.Serve(t, p.b)
	logs := &testlog.Buffer{}
	seams := app.Seams{Logs: logs, Version: "test", Upstream: hosts{hostA: clientA, hostB: clientB}}
	a, err := app.New(cfg, seams)
	require.NoError(t, err)
	p.harness = &harness{t: t, sim: p.a, handler: a.Handler, logs: logs, cfg: cfg, seams: seams}
	return p
}

// twoBackends is a pool of a (first) and b (second).
const twoBackends = `[
	{"name": "a", "endpoint": "http://` + hostA + `", "deployment": "chat-a", "model": "gpt-4o-mini", "apiKeySetting": "SIM_KEY"},
	{"name": "b", "endpoint": "http://` + hostB + `", "deployment": "chat-b", "model": "gpt-4o-mini", "priority": 2, "apiKeySetting": "SIM_KEY"}]`

// hosts carries each request to the resource of its host; a host with
// none refuses the connection, as a port where nothing listens does.
type hosts map[string]*http.Client

func (h hosts) Do(r *http.Request) (*http.Response, error) {
	c, ok := h[r.URL.Host]
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return c.Do(r)
}

var _ policy.Transporter = hosts{}

// lastLine is the log line of the last request.
func (p *pool) lastLine() map[string]any {
	p.t.Helper()
	lines := p.logLines()
	require.NotEmpty(p.t, lines)
	return lines[len(lines)-1]
}

// attempts are a log line's attempts, as backend:status pairs.
func attempts(line map[string]any) []string {
	var out []string
	list, _ := line["attempts"].([]any)
	for _, a := range list {
		m := a.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%v", m["backend"], m["status"]))
	}
	return out
}

func (p *pool) health() string {
	return p.do(httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/health", nil)).Body.String()
}

// A fast 429 on the first backend is answered by the second within the
// same request: the caller sees 200 after two upstream calls, and the log
// line names the backend that answered and every attempt.
func TestPoolFastThrottleFailsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		start := time.Now()
		resp := decodeOK(t, p.do(chatRequest(ask("[[sim:throttle s=20 backend=a]] hello"))))
		assert.Equal(t, 2, resp.UpstreamAttempts)
		assert.Less(t, time.Since(start), time.Second, "no wait: the second backend had room")
		line := p.lastLine()
		assert.Equal(t, "b", line["backend"])
		assert.Equal(t, []string{"a:429", "b:200"}, attempts(line))
		assert.EqualValues(t, 2, line["upstreamAttempts"])
		assert.Equal(t, 1, p.a.Stats().Requests)
		assert.Equal(t, 1, p.b.Stats().Requests)
		assert.JSONEq(t, `{"status": "ok", "version": "test", "backends": {"available": 1, "cooling": 1}}`, p.health())
	})
}

// A fast 5xx, and a broken answer before its first text, fail over too.
func TestPoolFastFailureFailsOver(t *testing.T) {
	for _, directive := range []string{"[[sim:status code=500 backend=a]]", "[[sim:status code=503 backend=a]]", "[[sim:reset backend=a]]", "[[sim:malformed backend=a]]"} {
		t.Run(directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, twoBackends, nil)
				resp := decodeOK(t, p.do(chatRequest(ask(directive+" hello"))))
				assert.Equal(t, 2, resp.UpstreamAttempts)
				assert.Equal(t, "b", p.lastLine()["backend"])
			})
		})
	}
}

// The next requests skip the cooling backend until its wait has passed,
// then use it again.
func TestPoolSkipsACoolingBackendUntilItsWaitPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		decodeOK(t, p.do(chatRequest(ask("[[sim:throttle s=20 backend=a times=1 id=t]] hello"))))
		time.Sleep(19 * time.Second)
		resp := decodeOK(t, p.do(chatRequest(ask("hello again"))))
		assert.Equal(t, 1, resp.UpstreamAttempts, "a is skipped, not tried")
		assert.Equal(t, []string{"b:200"}, attempts(p.lastLine()))
		assert.Equal(t, 1, p.a.Stats().Requests)

		time.Sleep(time.Second)
		decodeOK(t, p.do(chatRequest(ask("and again"))))
		assert.Equal(t, []string{"a:200"}, attempts(p.lastLine()), "a's wait has passed")
		assert.JSONEq(t, `{"status": "ok", "version": "test", "backends": {"available": 2, "cooling": 0}}`, p.health())
	})
}

// A wait of a day is capped at BACKEND_COOLDOWN_MAX: a backend out for
// the day comes back to be tried after a minute.
func TestPoolCooldownIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		decodeOK(t, p.do(chatRequest(ask("[[sim:status code=503 retry-ms=86400000 backend=a times=1 id=day]] hello"))))
		assert.Equal(t, []string{"a:503", "b:200"}, attempts(p.lastLine()))
		time.Sleep(59 * time.Second)
		decodeOK(t, p.do(chatRequest(ask("hello"))))
		assert.Equal(t, []string{"b:200"}, attempts(p.lastLine()))
		time.Sleep(time.Second)
		decodeOK(t, p.do(chatRequest(ask("hello"))))
		assert.Equal(t, []string{"a:200"}, attempts(p.lastLine()))
	})
}

// What fails the same everywhere, or failed slowly, is answered without
// calling the second backend: a slow 5xx (a timeout: trying it again
// multiplies the wait and the bill), a hang (the budget runs out), a 400.
func TestPoolAnswersWithoutCallingTheSecond(t *testing.T) {
	tests := []struct {
		name, directive string
		status          int
		code            string
	}{
		{"slow 503", "[[sim:status code=503 after=31000 backend=a]]", 500, "upstream_error"},
		{"slow 429", "[[sim:throttle s=1 after=31000 backend=a]]", 500, "upstream_error"},
		{"hang", "[[sim:hang backend=a]]", 500, "deadline_exceeded"},
		{"content filter", "[[sim:filter backend=a]]", 400, "content_filtered"},
		{"bad request", "[[sim:status code=400 backend=a]]", 500, "internal_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, twoBackends, nil)
				w := p.do(chatRequest(ask(tt.directive + " hello")))
				assert.Equal(t, tt.status, w.Code, w.Body.String())
				assert.Equal(t, tt.code, decodeError(t, w).Error.Code)
				assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				assert.Equal(t, 0, p.b.Stats().Requests, "the second backend is not called")
				assert.Equal(t, 1, p.a.Stats().Requests)
			})
		})
	}
}

// A refused connection fails over at once, and takes its backend out:
// the next request goes to the second without trying the first.
func TestPoolRefusedConnectionFailsOverAndTakesTheBackendOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, strings.Replace(twoBackends, hostA, hostRefused, 1), nil)
		resp := decodeOK(t, p.do(chatRequest(ask("hello"))))
		assert.Equal(t, 2, resp.UpstreamAttempts)
		assert.Equal(t, []string{"a:0", "b:200"}, attempts(p.lastLine()))
		assert.Contains(t, p.logs.String(), `"msg":"backend out of the pool","backend":"a","reason":"connection refused"`)

		decodeOK(t, p.do(chatRequest(ask("hello"))))
		assert.Equal(t, []string{"b:200"}, attempts(p.lastLine()), "a is out")
		assert.JSONEq(t, `{"status": "ok", "version": "test", "backends": {"available": 1, "cooling": 1}}`, p.health())
	})
}

// Both throttled: the answer is 429 with the shorter wait; a request that
// comes while both cool is answered at once with what is left of it, and
// no upstream call, when the wait does not fit its time; one whose time
// it fits waits for it.
func TestPoolBothThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		w := p.do(chatRequest(ask("[[sim:throttle s=20 backend=a times=1 id=ta]] [[sim:throttle s=10 backend=b times=1 id=tb]] hello")))
		require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		assert.Equal(t, "rate_limited", decodeError(t, w).Error.Code)
		assert.Equal(t, "10", w.Header().Get("Retry-After"), "the shorter wait")
		assert.Equal(t, "10000", w.Header().Get("retry-after-ms"))

		time.Sleep(4 * time.Second)
		start := time.Now()
		w = p.do(chatRequest(ask("hello"), "x-client-timeout-ms", "8000"))
		require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		assert.Equal(t, "6000", w.Header().Get("retry-after-ms"), "what is left of the shorter wait")
		assert.Zero(t, time.Since(start), "answered at once")
		assert.Equal(t, 1, p.a.Stats().Requests+p.b.Stats().Requests-1, "no upstream call")
		assert.Nil(t, p.lastLine()["attempts"])

		start = time.Now()
		resp := decodeOK(t, p.do(chatRequest(ask("hello"))))
		assert.Equal(t, 6*time.Second, time.Since(start), "it waited for b")
		assert.Equal(t, 1, resp.UpstreamAttempts)
		assert.Equal(t, []string{"b:200"}, attempts(p.lastLine()))
	})
}

// A stream: a fast 429 before the first token fails over; a cut after the
// first token does not (the text has gone to the caller).
func TestPoolStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		s := p.stream(context.Background(), ask("[[sim:throttle s=20 backend=a]] count to 5"))
		assert.Equal(t, "1, 2, 3, 4, 5.", s.text(t))
		synctest.Wait() // for the log line, written after the answer
		assert.Equal(t, []string{"a:429", "b:200"}, attempts(p.lastLine()))
	})
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		s := p.stream(context.Background(), ask("[[sim:reset tokens=3 backend=a]] count to 50"))
		assert.NotEmpty(t, s.text(t))
		e := decodeStreamError(t, s.last())
		assert.True(t, e.Partial)
		synctest.Wait()
		assert.Equal(t, 0, p.b.Stats().Requests, "nothing is tried again after text went out")
		assert.Equal(t, []string{"a:200"}, attempts(p.lastLine()))
	})
}

// Weights share the calls among the backends of one priority: 3:1 splits
// 400 requests within 10 points of 75/25.
func TestPoolWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, `[
			{"name": "a", "endpoint": "http://`+hostA+`", "deployment": "chat-a", "model": "gpt-4o-mini", "weight": 3, "apiKeySetting": "SIM_KEY"},
			{"name": "b", "endpoint": "http://`+hostB+`", "deployment": "chat-b", "model": "gpt-4o-mini", "weight": 1, "apiKeySetting": "SIM_KEY"}]`, nil)
		for range 400 {
			decodeOK(t, p.do(chatRequest(ask("hello"))))
		}
		a, b := p.a.Stats().Requests, p.b.Stats().Requests
		assert.Equal(t, 400, a+b)
		assert.InDelta(t, 75, float64(a)*100/400, 10, "a took %d of 400", a)
	})
}

// The OpenAI surface fails over the same way.
func TestPoolOpenAISurface(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		body := `{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "[[sim:throttle s=20 backend=a]] count to 3"}]}`
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/openai/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := p.do(r)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var c struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &c))
		assert.Equal(t, "1, 2, 3.", c.Choices[0].Message.Content)
		assert.Equal(t, []string{"a:429", "b:200"}, attempts(p.lastLine()))
	})
}

// An OpenAI-dialect stream that broke after Azure's first chunks, before
// any text, is not tried elsewhere: its chunks were handed on (held for
// the caller, or sent), and a second stream would repeat them.
func TestPoolNoFailoverAfterAChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, twoBackends, nil)
		_, client := memnet.Serve(t, p.handler)
		body := `{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "[[sim:reset tokens=0 backend=a]] count to 3"}]}`
		r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://timebox.test/openai/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(b), `"error"`)
		synctest.Wait() // for the log line, written after the answer
		assert.Equal(t, 0, p.b.Stats().Requests)
		assert.Equal(t, []string{"a:200"}, attempts(p.lastLine()))
	})
}

// A long answer stays home: started on the second backend (the first
// throttled its create), it continues and cancels there from other
// instances, whose pools have never seen the first throttled; a cursor
// whose backend has left the pool is 404, with no upstream call.
func TestPoolLongAnswerStaysOnItsBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, strings.ReplaceAll(twoBackends, `"gpt-4o-mini"`, `"o3"`),
			map[string]string{"AZURE_OPENAI_DEPLOYMENT": "o3", "CURSOR_KEYS": base64.StdEncoding.EncodeToString(cursorKey)},
			func(o *aoaitest.Options) { o.TimeToFirstToken = 2 * time.Second })
		t.Cleanup(p.a.Close)
		t.Cleanup(p.b.Close)
		ans := p.send(context.Background(), "/api/chat", ask("[[sim:throttle s=20 backend=a]] "+long600), true)
		c := continueOf(t, ans.last())
		assert.Equal(t, []string{"a:429", "b:200"}, attempts(p.lastLine()), "the create failed over")
		assert.Equal(t, 1, p.a.Stats().Requests)

		other := p.twin()
		next := other.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		assert.NotEmpty(t, next.text(t), "continued on b from another instance")
		c = continueOf(t, next.last())
		assert.Equal(t, 1, p.a.Stats().Requests, "a, available to that instance, was not asked")
		assert.Equal(t, "b", p.lastLine()["backend"])

		// An instance whose pool no longer has b.
		cfg := p.cfg
		cfg.Backends = cfg.Backends[:1]
		gone, err := app.New(cfg, p.seams)
		require.NoError(t, err)
		without := *p.harness
		without.handler = gone.Handler
		before := p.a.Stats().Requests + p.b.Stats().Requests
		for _, path := range []string{"/api/chat/continue", "/api/chat/cancel"} {
			got := without.send(context.Background(), path, cursorBody(c), false)
			assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, path)
		}
		assert.Equal(t, before, p.a.Stats().Requests+p.b.Stats().Requests, "no upstream call")

		got := p.twin().send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		assert.Equal(t, http.StatusNoContent, got.resp.StatusCode)
		recs := p.b.Requests()
		require.NotEmpty(t, recs)
		info, ok := p.b.Generation(recs[0].ResponseID)
		require.True(t, ok)
		assert.Equal(t, "cancelled", info.Status, "cancelled at b")
		assert.Equal(t, 1, p.a.Stats().Requests)
	})
}

// A pool of one keeps no state: after a throttle the caller could not
// wait for, the next question calls the deployment as before the pool.
func TestPoolOfOneKeepsNoState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		w := h.do(chatRequest(ask("[[sim:throttle s=20 times=1 id=one]] hello"), "x-client-timeout-ms", "10000"))
		require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		assert.Equal(t, "20", w.Header().Get("Retry-After"))
		start := time.Now()
		decodeOK(t, h.do(chatRequest(ask("hello"))))
		assert.Less(t, time.Since(start), time.Second, "no wait for a cooldown")
		assert.Equal(t, 2, h.sim.Stats().Requests)
		assert.JSONEq(t, `{"status": "ok", "version": "test", "backends": {"available": 1, "cooling": 0}}`,
			h.do(httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/health", nil)).Body.String())
	})
}
