package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/apiwire"
)

// A small REQUEST_BUDGET still carries a long answer across its hops: the
// margin a hop keeps to hand out its cursor scales with the request's time
// (a quarter of it, at most 2 s), where a fixed 2 s margin left a 2 s hop
// no time at all and every long answer failed at once. The real run on
// real sockets, against the simulator's o4-mini (background mode), with a
// generation of 4 s: hops of under 2 s take three or more.
func TestSmallBudgetCarriesALongAnswerAcrossHops(t *testing.T) {
	sim := httptest.NewServer(aoaitest.New(aoaitest.Options{APIKey: "k", Deployments: []string{"o4-mini"}}))
	t.Cleanup(sim.Close)
	r := startHandler(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT":   sim.URL,
		"AZURE_OPENAI_DEPLOYMENT": "o4-mini",
		"AZURE_OPENAI_API_KEY":    "k",
		"ALLOWED_ORIGINS":         "https://contoso.sharepoint.com",
		"REQUEST_BUDGET":          "2s",
		"FAST_FAILURE_THRESHOLD":  "1s",
		"CLIENT_TIMEOUT_MARGIN":   "500ms",
	}, func(line map[string]any) bool { return line["msg"] == "request" })

	post := func(path string, body any) (int, []byte) {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		resp, err := http.Post("http://"+r.addr+path, "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, out
	}
	status, body := post("/api/chat", map[string]any{"messages": []map[string]string{{"role": "user",
		"content": "Count to 40, with a comma between each number, no newlines and a period at the end. [[sim:long s=4]]"}}})
	hops := 1
	for status == http.StatusAccepted {
		var p apiwire.InProgress
		require.NoError(t, json.Unmarshal(body, &p), string(body))
		require.NotEmpty(t, p.Cursor)
		require.Less(t, hops, 20, "the answer ends")
		status, body = post("/api/chat/continue", apiwire.CursorRequest{Cursor: p.Cursor})
		hops++
	}
	require.Equal(t, http.StatusOK, status, string(body))
	var answer struct {
		Answer string `json:"answer"`
	}
	require.NoError(t, json.Unmarshal(body, &answer), string(body))
	assert.True(t, strings.HasPrefix(answer.Answer, "1, 2, 3"), answer.Answer)
	assert.True(t, strings.HasSuffix(answer.Answer, "40."), answer.Answer)
	assert.GreaterOrEqual(t, hops, 3, "a 4 s generation in hops of under 2 s")
}
