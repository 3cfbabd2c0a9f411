package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// gatedLogs is a stdout that takes no line until it is opened: the Functions
// host reading the handler's output late.
type gatedLogs struct {
	open    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	waiting int // writes blocked so far
	lines   []string
}

func (g *gatedLogs) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.waiting++
	g.mu.Unlock()
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, string(p))
	return len(p), nil
}

func (g *gatedLogs) release() { g.once.Do(func() { close(g.open) }) }

// An answer of known length reaches the caller before the request's log line
// is written (sendWhole): writing the line is one more system call,
// and a caller waiting for it is time a plain Go handler does not cost
// (make perf's p50 row). The line is still written, after.
func TestTheAnswerLeavesBeforeTheLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			name, body string
			status     int
		}{
			{"an answer", ask("What does the travel policy say about trains?"), http.StatusOK},
			{"a refusal", `{"messages": []}`, http.StatusBadRequest},
		} {
			sim := aoaitest.New(aoaitest.Options{APIKey: simKey, Deployments: []string{"gpt-4o-mini"}})
			_, upstream := memnet.Serve(t, sim)
			logs := &gatedLogs{open: make(chan struct{})}
			a := stack(t, "http://127.0.0.1:8081", app.Seams{Logs: logs, Upstream: upstream})
			_, client := memnet.Serve(t, a.Handler)

			answered := make(chan int, 1)
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://timebox/api/chat", strings.NewReader(tt.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", allowedOrigin)
				resp, err := client.Do(req)
				if err != nil {
					answered <- 0
					return
				}
				var body map[string]any
				if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body) != nil {
					answered <- -1
					return
				}
				_ = resp.Body.Close()
				answered <- resp.StatusCode
			}()
			synctest.Wait() // every goroutine blocked: the caller's, or the server's on the log line
			var status int
			select {
			case status = <-answered:
			default:
			}
			logs.mu.Lock()
			waiting := logs.waiting
			logs.mu.Unlock()
			logs.release() // then the line is written, and the server's goroutine ends
			if status == 0 {
				<-answered
				t.Fatalf("%s: no answer while the log line waited to be written", tt.name)
			}
			assert.Equal(t, tt.status, status, tt.name)
			assert.Equal(t, 1, waiting, "%s: the log line was being written", tt.name)
			synctest.Wait()
			logs.mu.Lock()
			assert.Len(t, logs.lines, 1, "%s: one line per request, written after its answer", tt.name)
			logs.mu.Unlock()
		}
	})
}
