package aoaitest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// The Responses API against its recordings (testdata/responses): the same
// events in the same order, each in the shape Azure sends it.

// sseEvent is one server-sent event: its name and data.
type sseEvent struct {
	Name string
	Data string
}

// readEvents splits an event stream into its events.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// recordedLines reads a file of one JSON payload per line.
func recordedLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "responses", name))
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// dotnetSession is an openai-dotnet session record.
type dotnetSession struct {
	Entries []struct {
		RequestMethod string          `json:"RequestMethod"`
		RequestURI    string          `json:"RequestUri"`
		RequestBody   json.RawMessage `json:"RequestBody"`
		StatusCode    int             `json:"StatusCode"`
		ResponseBody  json.RawMessage `json:"ResponseBody"`
	} `json:"Entries"`
}

func loadSession(t *testing.T, name string) dotnetSession {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "responses", name))
	require.NoError(t, err)
	var s dotnetSession
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// sessionEvents are the events of an entry's SSE body (an array of lines).
func sessionEvents(t *testing.T, body json.RawMessage) []sseEvent {
	t.Helper()
	var lines []string
	require.NoError(t, json.Unmarshal(body, &lines))
	return readEvents(t, strings.NewReader(strings.Join(lines, "")))
}

// typesOf lists the events' types, a run of deltas as one.
func typesOf(t *testing.T, evs []sseEvent) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		var e struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &e), ev.Data)
		assert.Equal(t, e.Type, ev.Name, "the event's name is its type")
		if n := len(out); n > 0 && out[n-1] == e.Type && e.Type == "response.output_text.delta" {
			continue
		}
		out = append(out, e.Type)
	}
	return out
}

func seqOf(t *testing.T, ev sseEvent) int {
	t.Helper()
	var e struct {
		Seq *int `json:"sequence_number"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &e))
	require.NotNil(t, e.Seq, ev.Data)
	return *e.Seq
}

// simServer serves a simulator with the recordings' deployments.
func simServer(t *testing.T) (*aoaitest.Server, *httptest.Server) {
	t.Helper()
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4.1-mini", "gpt-5.1"}})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("api-key", "k")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// A background, streamed create sends the recorded events in the recorded
// order (created with status queued, queued, in_progress, the message, its
// deltas, ..., completed), numbered from 0 without a gap; a resume after
// sequence number 2 starts at 3, as the recorded one does.
func TestResponsesFixtureBackgroundStream(t *testing.T) {
	session := loadSession(t, "openai-dotnet.CanUseStreamingBackgroundResponses.2025-08-01.json")
	require.Len(t, session.Entries, 3)
	create, resume := session.Entries[0], session.Entries[2]
	recorded := sessionEvents(t, create.ResponseBody)

	_, srv := simServer(t)
	resp, body := do(t, srv, http.MethodPost, "/openai/v1/responses", string(create.RequestBody))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	got := readEvents(t, strings.NewReader(string(body)))
	assert.Equal(t, typesOf(t, recorded), typesOf(t, got))
	for i, ev := range got {
		assert.Equal(t, i, seqOf(t, ev), "sequence numbers count every event")
	}
	var first struct {
		Response struct {
			ID         string `json:"id"`
			Status     string `json:"status"`
			Background bool   `json:"background"`
			Store      bool   `json:"store"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(got[0].Data), &first))
	assert.Equal(t, "queued", first.Response.Status)
	assert.True(t, first.Response.Background)
	assert.True(t, first.Response.Store, "store defaults to true")
	assert.Regexp(t, `^resp_[0-9a-f]{50}$`, first.Response.ID)

	assert.Contains(t, resume.RequestURI, "starting_after=2")
	recordedResume := sessionEvents(t, resume.ResponseBody)
	resp, body = do(t, srv, http.MethodGet, "/openai/v1/responses/"+first.Response.ID+"?stream=true&starting_after=2", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	again := readEvents(t, strings.NewReader(string(body)))
	require.NotEmpty(t, again)
	assert.Equal(t, seqOf(t, recordedResume[0]), seqOf(t, again[0]), "starting_after is exclusive")
	assert.Equal(t, typesOf(t, recordedResume), typesOf(t, again))
	assert.Equal(t, got[3:], again, "a resume replays the same events")
}

// Each event and the finished response are in the shape of Azure's
// recorded stream, key for key.
func TestResponsesFixtureAzureShapes(t *testing.T) {
	recorded := map[string]string{}
	var completed string
	for _, line := range recordedLines(t, "vercel-ai.azure-text.1.chunks.jsonl") {
		var e struct {
			Type     string          `json:"type"`
			Response json.RawMessage `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if _, ok := recorded[e.Type]; !ok {
			recorded[e.Type] = line
		}
		if e.Type == "response.completed" {
			completed = string(e.Response)
		}
	}
	_, srv := simServer(t)
	resp, body := do(t, srv, http.MethodPost, "/openai/v1/responses", `{"model":"gpt-5.1","input":"Hello","stream":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	got := readEvents(t, strings.NewReader(string(body)))
	seen := map[string]bool{}
	var id string
	for _, ev := range got {
		var e struct {
			Type     string `json:"type"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &e))
		if id == "" {
			id = e.Response.ID
		}
		want, ok := recorded[e.Type]
		require.True(t, ok, "%s is not in Azure's recorded stream", e.Type)
		if !seen[e.Type] {
			assertSameShape(t, []byte(want), []byte(ev.Data))
			seen[e.Type] = true
		}
	}
	assert.Len(t, seen, len(recorded), "every recorded event type is sent")

	resp, body = do(t, srv, http.MethodGet, "/openai/v1/responses/"+id, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assertSameShape(t, []byte(completed), body)
}

// A background create that does not stream answers at once with the
// response queued; its cancel answers it cancelled, with no output and no
// usage, as recorded. Cancelling again answers the same (Azure's how-to:
// cancelling is idempotent).
func TestResponsesFixtureCancel(t *testing.T) {
	session := loadSession(t, "openai-dotnet.CanCancelBackgroundResponses.2025-09-16.json")
	require.Len(t, session.Entries, 2)
	var want [2]map[string]any
	for i, e := range session.Entries {
		require.NoError(t, json.Unmarshal(e.ResponseBody, &want[i]))
	}
	sim, srv := simServer(t)
	// A generation that takes its time, so that the cancel finds it running.
	createBody := strings.Replace(string(session.Entries[0].RequestBody), "Hello, model!", "Hello, model! [[sim:slow ms=60000]]", 1)
	resp, body := do(t, srv, http.MethodPost, "/openai/v1/responses", createBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var created map[string]any
	require.NoError(t, json.Unmarshal(body, &created))
	assert.Equal(t, want[0]["status"], created["status"])
	assertRecordedKeys(t, want[0], created)
	id, _ := created["id"].(string)

	for range 2 {
		resp, body = do(t, srv, http.MethodPost, "/openai/v1/responses/"+id+"/cancel", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		var cancelled map[string]any
		require.NoError(t, json.Unmarshal(body, &cancelled))
		assert.Equal(t, "cancelled", cancelled["status"])
		assert.Equal(t, want[1]["output"], cancelled["output"])
		assert.Nil(t, cancelled["usage"])
		assertRecordedKeys(t, want[1], cancelled)
	}
	info, ok := sim.Generation(id)
	require.True(t, ok)
	assert.Equal(t, "cancelled", info.Status)
}

// assertRecordedKeys checks that got has every key of OpenAI's recorded
// response object, each with a value of the same JSON type (Azure's adds
// keys of its own: completed_at, content_filters).
func assertRecordedKeys(t *testing.T, want, got map[string]any) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !assert.True(t, ok, "key %s", k) {
			continue
		}
		if k == "reasoning" || k == "text" {
			continue // by model: gpt-4.1-mini's effort is null, verbosity is Azure's
		}
		assert.Equal(t, shape(v), shape(g), "key %s", k)
	}
}

// A mid-stream error comes in both recorded shapes: nested (the captured
// streams') and flat (OpenAI's reference), then response.failed, in the
// recorded order; the nested event is the recorded one's shape.
func TestResponsesFixtureErrorEvents(t *testing.T) {
	nested := recordedLines(t, "vercel-ai.openai-error-null-code.chunks.jsonl")[0]
	failedFlow := recordedLines(t, "vercel-ai.openai-error.1.chunks.jsonl")
	var recordedFailed map[string]any
	require.NoError(t, json.Unmarshal([]byte(failedFlow[len(failedFlow)-1]), &recordedFailed))
	_, srv := simServer(t)
	for _, shapeName := range []string{"nested", "flat"} {
		t.Run(shapeName, func(t *testing.T) {
			body := `{"model":"gpt-5.1","input":"Count to 20 [[sim:error tokens=5 shape=` + shapeName + `]]","stream":true,"background":true}`
			resp, b := do(t, srv, http.MethodPost, "/openai/v1/responses", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
			evs := readEvents(t, strings.NewReader(string(b)))
			types := typesOf(t, evs)
			require.GreaterOrEqual(t, len(types), 2)
			assert.Equal(t, []string{"error", "response.failed"}, types[len(types)-2:])
			errEv := evs[len(evs)-2]
			if shapeName == "nested" {
				assertSameShape(t, []byte(nested), []byte(errEv.Data))
			} else {
				var flat map[string]any
				require.NoError(t, json.Unmarshal([]byte(errEv.Data), &flat))
				assert.Equal(t, "server_error", flat["code"])
				assert.NotEmpty(t, flat["message"])
				assert.Contains(t, flat, "sequence_number")
			}
			var failed map[string]any
			require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].Data), &failed))
			resp0 := failed["response"].(map[string]any)
			assert.Equal(t, "failed", resp0["status"])
			assertRecordedKeys(t, recordedFailed["response"].(map[string]any), resp0)
			assert.Equal(t, shape(recordedFailed["response"].(map[string]any)["error"]), shape(resp0["error"]))
		})
	}
}
