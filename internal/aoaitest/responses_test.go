package aoaitest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// The Responses API's generations in virtual time: what runs on after a
// call ends, and what the directives script.

const count100 = "Count to 100, with a comma between each number, no newlines and a period at the end."

// rcall sends one request to the simulator over memnet; ctx may cut it.
func rcall(ctx context.Context, t *testing.T, hc *http.Client, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://sim"+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func create(t *testing.T, q string) string {
	b, err := json.Marshal(map[string]any{"model": "o3", "input": q, "background": true, "stream": true, "store": true, "max_output_tokens": 4000})
	require.NoError(t, err)
	return string(b)
}

func firstID(t *testing.T, stream string) string {
	t.Helper()
	evs := readEvents(t, strings.NewReader(stream))
	require.NotEmpty(t, evs, stream)
	var e struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(evs[0].Data), &e))
	return e.Response.ID
}

func simOf(t *testing.T, o aoaitest.Options) (*aoaitest.Server, *http.Client) {
	o.Deployments = []string{"o3"}
	sim := aoaitest.New(o)
	_, hc := memnet.Serve(t, sim)
	t.Cleanup(sim.Close)
	return sim, hc
}

// A background generation goes on when the call that started it ends,
// and a resume after the last event seen delivers the rest: together, the
// whole answer once.
func TestBackgroundGenerationOutlivesItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, hc := simOf(t, aoaitest.Options{PerToken: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, first := rcall(ctx, t, hc, http.MethodPost, "/openai/v1/responses", create(t, count100))
		cancel()
		id := firstID(t, first)
		evs := readEvents(t, strings.NewReader(first))
		last := seqOf(t, evs[len(evs)-1])
		synctest.Wait()
		info, ok := sim.Generation(id)
		require.True(t, ok)
		assert.Equal(t, "in_progress", info.Status, "the generation runs on")

		status, rest := rcall(context.Background(), t, hc, http.MethodGet, "/openai/v1/responses/"+id+"?stream=true&starting_after="+itoa(last), "")
		require.Equal(t, http.StatusOK, status)
		text := deltas(t, first) + deltas(t, rest)
		assert.True(t, strings.HasPrefix(text, "1, 2, 3,") && strings.HasSuffix(text, "99, 100."), text)
		info, _ = sim.Generation(id)
		assert.Equal(t, "completed", info.Status)
		assert.Equal(t, info.Text, text, "no text repeated or lost")
	})
}

// A long directive stretches the whole generation over its span, and
// keepalives fill each quiet interval, taking sequence numbers.
func TestLongGenerationWithKeepalives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := simOf(t, aoaitest.Options{TimeToFirstToken: 10 * time.Second})
		start := time.Now()
		status, body := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses", create(t, "Count to 10 [[sim:long s=600]] [[sim:keepalive every=4000]]"))
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, 610*time.Second, time.Since(start), "time to first token, then 600 s of answer")
		types := typesOf(t, readEvents(t, strings.NewReader(body)))
		assert.Contains(t, types, "keepalive")
		evs := readEvents(t, strings.NewReader(body))
		for i, ev := range evs {
			assert.Equal(t, i, seqOf(t, ev))
		}
	})
}

// A stale directive refuses a resume later than its span with OpenAI's
// 400; a retrieve still answers, and the text is there once completed.
func TestStaleResumeIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := simOf(t, aoaitest.Options{PerToken: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, first := rcall(ctx, t, hc, http.MethodPost, "/openai/v1/responses", create(t, count100+" [[sim:stale s=60]]"))
		cancel()
		id := firstID(t, first)
		time.Sleep(61 * time.Second)
		status, body := rcall(context.Background(), t, hc, http.MethodGet, "/openai/v1/responses/"+id+"?stream=true&starting_after=3", "")
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, body, "This response can no longer be streamed because it is more than 5 minutes old.")
		time.Sleep(time.Hour)
		status, body = rcall(context.Background(), t, hc, http.MethodGet, "/openai/v1/responses/"+id, "")
		assert.Equal(t, http.StatusOK, status)
		assert.Contains(t, body, `"status":"completed"`)
		assert.Contains(t, body, "99, 100.")
	})
}

// With race, a cancel loses to the completion: it answers the response
// completed, whole.
func TestCancelRacesCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, hc := simOf(t, aoaitest.Options{PerToken: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, first := rcall(ctx, t, hc, http.MethodPost, "/openai/v1/responses", create(t, count100+" [[sim:race]]"))
		cancel()
		id := firstID(t, first)
		status, body := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses/"+id+"/cancel", "")
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, body, `"status":"completed"`)
		info, _ := sim.Generation(id)
		assert.True(t, strings.HasSuffix(info.Text, "100."), info.Text)
	})
}

// failed and incomplete end the stream with their own events; a status
// directive on=resume fails the resume, once, not the create.
func TestScriptedEnds(t *testing.T) {
	tests := []struct {
		directive, last string
	}{
		{"[[sim:failed tokens=3]]", "response.failed"},
		{"[[sim:incomplete tokens=3]]", "response.incomplete"},
		{"[[sim:error tokens=3]]", "response.failed"},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, hc := simOf(t, aoaitest.Options{})
				status, body := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses", create(t, count100+" "+tt.directive))
				require.Equal(t, http.StatusOK, status)
				types := typesOf(t, readEvents(t, strings.NewReader(body)))
				assert.Equal(t, tt.last, types[len(types)-1])
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		_, hc := simOf(t, aoaitest.Options{})
		_, body := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses", create(t, "hi [[sim:status code=503 on=resume times=1 id=r]]"))
		id := firstID(t, body)
		path := "/openai/v1/responses/" + id + "?stream=true&starting_after=2"
		status, _ := rcall(context.Background(), t, hc, http.MethodGet, path, "")
		assert.Equal(t, http.StatusServiceUnavailable, status)
		status, _ = rcall(context.Background(), t, hc, http.MethodGet, path, "")
		assert.Equal(t, http.StatusOK, status, "once")
	})
}

// deltas joins a stream's text deltas.
func deltas(t *testing.T, stream string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range readEvents(t, strings.NewReader(stream)) {
		var e struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &e))
		if e.Type == "response.output_text.delta" {
			b.WriteString(e.Delta)
		}
	}
	return b.String()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// A response whose prompt and output limit overrun the model's window is
// refused before it starts, as Chat Completions refuses one, but with the
// error naming the Responses API's own field, input.
func TestResponsesRefuseWhatOverrunsTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := simOf(t, aoaitest.Options{})
		body, err := json.Marshal(map[string]any{"model": "o3", "input": "hi", "max_output_tokens": 10_000_000})
		require.NoError(t, err)
		status, answer := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses", string(body))
		assert.Equal(t, http.StatusBadRequest, status, answer)
		var e struct {
			Error struct{ Code, Param string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(answer), &e), answer)
		assert.Equal(t, "context_length_exceeded", e.Error.Code)
		assert.Equal(t, "input", e.Error.Param)
	})
}

// A reset with tokens=N drops a streamed create after N pieces of text,
// without its end; the generation, in background mode, runs on to the end.
func TestResponsesResetCutsTheStreamNotTheGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, hc := simOf(t, aoaitest.Options{})
		status, body := rcall(context.Background(), t, hc, http.MethodPost, "/openai/v1/responses", create(t, count100+" [[sim:reset tokens=3]]"))
		require.Equal(t, http.StatusOK, status)
		evs := readEvents(t, strings.NewReader(body))
		texts := 0
		for _, ev := range evs {
			if ev.Name == "response.output_text.delta" {
				texts++
			}
		}
		assert.Equal(t, 3, texts, "the stream's pieces of text before the drop")
		assert.NotContains(t, typesOf(t, evs), "response.completed")
		synctest.Wait()
		info, ok := sim.Generation(firstID(t, body))
		require.True(t, ok)
		assert.Equal(t, "completed", info.Status)
	})
}
