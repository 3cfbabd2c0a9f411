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

// timebox ask follows a long answer across its hops, streamed or not,
// against the whole stack on an o3 deployment (background mode), in virtual
// time: the answer on stdout is the simulator's, whole, once; stderr says
// each later part.
func TestStackFollowsALongAnswer(t *testing.T) {
	const question = "Count to 300, with a comma between each number, no newlines and a period at the end. [[sim:long s=600]]"
	for _, stream := range []bool{true, false} {
		name := "streamed"
		if !stream {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
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
				var paths []string
				_, hc := memnet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					paths = append(paths, r.URL.Path)
					mu.Unlock()
					a.Handler.ServeHTTP(w, r)
				}))
				args := []string{"ask", "--url", "http://app.test", question}
				if stream {
					args = append(args[:1], append([]string{"--stream"}, args[1:]...)...)
				}
				var out, errOut bytes.Buffer
				err = runWith(t.Context(), args, noEnv, &out, &errOut, hc)
				require.NoError(t, err, errOut.String())
				synctest.Wait()
				id := sim.Requests()[0].ResponseID
				info, _ := sim.Generation(id)
				assert.Equal(t, info.Text+"\n", out.String(), "the whole answer, once")
				assert.Contains(t, errOut.String(), "still writing, part 2\n")
				assert.Contains(t, errOut.String(), "still writing, part 4\n")
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, "/api/chat", paths[0])
				assert.GreaterOrEqual(t, strings.Count(strings.Join(paths, " "), "/api/chat/continue"), 3)
			})
		})
	}
}
