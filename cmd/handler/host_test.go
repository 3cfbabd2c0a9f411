package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

// The Functions host reads host.json and <folder>/function.json; these are
// the invariants timebox relies on (docs/deploy.md, "How a deployment is laid out").
func TestHostContract(t *testing.T) {
	root := filepath.Join("..", "..")
	var host struct {
		Version         string
		FunctionTimeout string
		ExtensionBundle *json.RawMessage
		Extensions      struct {
			HTTP struct {
				RoutePrefix            *string
				MaxConcurrentRequests  int
				MaxOutstandingRequests int
			}
		}
		CustomHandler struct {
			Description struct {
				DefaultExecutablePath string
			}
			EnableProxyingHttpRequest   bool
			EnableForwardingHttpRequest bool
		}
	}
	readJSON(t, filepath.Join(root, "host.json"), &host)
	assert.Equal(t, "2.0", host.Version)
	assert.Nil(t, host.ExtensionBundle, "an HTTP-only custom handler needs no extension bundle")
	assert.True(t, host.CustomHandler.EnableProxyingHttpRequest, "raw HTTP passing")
	assert.False(t, host.CustomHandler.EnableForwardingHttpRequest, "the older buffering mode is not mixed in")

	// The executable is the binary make build writes.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^BINARY := (\S+)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "Makefile names BINARY")
	assert.Equal(t, string(m[1]), host.CustomHandler.Description.DefaultExecutablePath)
	assert.Contains(t, string(makefile), "-o $(BINARY) ./cmd/handler")

	// functionTimeout restarts the whole handler process when it fires: it
	// must stay well above the budget's ceiling (230 s).
	ft := parseTimeSpan(t, host.FunctionTimeout)
	assert.GreaterOrEqual(t, ft, 2*config.PlatformLimit)

	// Routes reach chi's as the caller wrote them: no prefix ("api" is the
	// default when absent), so that /api/chat and the OpenAI SDKs' /openai/...
	// are both forwarded.
	prefix := "api"
	if host.Extensions.HTTP.RoutePrefix != nil {
		prefix = *host.Extensions.HTTP.RoutePrefix
	}
	assert.Equal(t, "", prefix)

	// No queue in the host: a request it holds back waits where the budget
	// cannot see it (the budget starts in the handler), eating into the
	// platform's 230 s. Outstanding (queued + running) no higher than
	// concurrent means the host answers 429 at once instead of queueing,
	// and clients retry a fast 429. Both are set, since the plans' defaults
	// differ (Consumption/Premium: 100 running, 200 outstanding).
	httpExt := host.Extensions.HTTP
	assert.Positive(t, httpExt.MaxConcurrentRequests, "maxConcurrentRequests is set")
	assert.Positive(t, httpExt.MaxOutstandingRequests, "maxOutstandingRequests is set")
	assert.LessOrEqual(t, httpExt.MaxOutstandingRequests, httpExt.MaxConcurrentRequests, "no request waits in the host's queue")

	files, err := filepath.Glob(filepath.Join(root, "*", "function.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "with no function folder the host never starts the handler")
	_, err = os.Stat(filepath.Join(root, "function.json"))
	assert.True(t, os.IsNotExist(err), "a function.json at the app root is ignored by the host; keep it in a folder")
	for _, f := range files {
		var fn struct {
			Bindings []struct {
				Type, Direction, Route, AuthLevel string
				Methods                           []string
			}
		}
		readJSON(t, f, &fn)
		require.Len(t, fn.Bindings, 2, "%s: one httpTrigger in, one http out (any other binding switches the host to JSON payloads)", f)
		var in, out int
		for _, b := range fn.Bindings {
			switch {
			case b.Type == "httpTrigger" && b.Direction == "in":
				in++
				assert.Equal(t, "{*path}", b.Route, "%s: a catch-all route, so every path reaches chi (404s included)", f)
				assert.Empty(t, b.Methods, "%s: no method list, so CORS preflights (OPTIONS) reach the handler", f)
				assert.Equal(t, "anonymous", b.AuthLevel, "%s: browsers cannot hold function keys; App Service Authentication guards the app", f)
			case b.Type == "http" && b.Direction == "out":
				out++
			}
		}
		assert.Equal(t, 1, in, f)
		assert.Equal(t, 1, out, f)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}

// parseTimeSpan reads host.json's hh:mm:ss.
func parseTimeSpan(t *testing.T, s string) time.Duration {
	t.Helper()
	var h, m, sec int
	_, err := fmt.Sscanf(s, "%d:%d:%d", &h, &m, &sec)
	require.NoError(t, err, "functionTimeout %q", s)
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
}
