package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// Long answers through the whole stack (app.New, the real azcore client,
// the simulator), in virtual time: an o3 deployment, whose answers run in
// background mode, hop by hop, each hop a request of the default budget.

// long600 is a generation of 600 s: hops of under 200 s take four.
const long600 = "Count to 300, with a comma between each number, no newlines and a period at the end. [[sim:long s=600]]"

// cursorKey is the long-answer harness's CURSOR_KEYS: tests seal cursors
// with it as well, to make what only a holder of the key could.
var cursorKey = bytes.Repeat([]byte{0x5c}, cursor.MinKeyBytes)

func longHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	settings := map[string]string{"AZURE_OPENAI_DEPLOYMENT": "o3", "CURSOR_KEYS": base64.StdEncoding.EncodeToString(cursorKey)}
	for k, v := range env {
		settings[k] = v
	}
	h := newHarness(t, settings, aoaitest.Options{Deployments: []string{"o3"}, TimeToFirstToken: 2 * time.Second})
	t.Cleanup(h.sim.Close)
	return h
}

// send posts body to path over an in-memory connection, streamed or not,
// with headers (name, value, ...), and reads the answer to its end.
func (h *harness) send(ctx context.Context, path, body string, stream bool, headers ...string) streamed {
	h.t.Helper()
	_, client := memnet.Serve(h.t, h.handler)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://timebox.test"+path, strings.NewReader(body))
	r.RequestURI = ""
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", allowedOrigin)
	if stream {
		r.Header.Set("Accept", "text/event-stream")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	start := time.Now()
	resp, err := client.Do(r)
	if err != nil {
		return streamed{}
	}
	defer resp.Body.Close()
	// The simulator keeps a record once its handler has returned, after
	// the answer has reached timebox: wait for it, so that its records are
	// in the order of the hops.
	defer synctest.Wait()
	out := streamed{resp: resp}
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		b, _ := io.ReadAll(resp.Body)
		out.events = append(out.events, sseEvent{data: string(b)})
		return out
	}
	sc := bufio.NewScanner(resp.Body)
	var ev sseEvent
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			ev.at = time.Since(start)
			out.events = append(out.events, ev)
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[len("data: "):]
		}
	}
	return out
}

// responseID is the response of the first request the simulator
// finished (it keeps a record once its handler has returned).
func (h *harness) responseID() string {
	h.t.Helper()
	synctest.Wait()
	recs := h.sim.Requests()
	require.NotEmpty(h.t, recs)
	return recs[0].ResponseID
}

func cursorBody(c string) string {
	b, _ := json.Marshal(apiwire.CursorRequest{Cursor: c})
	return string(b)
}

func continueOf(t *testing.T, ev sseEvent) string {
	t.Helper()
	require.Equal(t, "continue", ev.typ, ev.data)
	var c apiwire.Continue
	require.NoError(t, json.Unmarshal([]byte(ev.data), &c))
	require.NotEmpty(t, c.Cursor)
	return c.Cursor
}

// A 600 s answer, streamed: each hop's stream ends with continue and a
// cursor, the next goes on exactly where it stopped, the last ends with
// done (the whole answer, the generation's usage). The caller sees the
// simulator's text byte for byte; upstream sees one create, then per hop
// the owner's retrieve and one resume after the last event relayed; each
// hop's log line names the response and the hop, and only the last one
// counts the generation's tokens.
func TestLongAnswerStreamedAcrossHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		require.Equal(t, http.StatusOK, ans.resp.StatusCode)
		text := ans.text(t)
		hops := 1
		for ans.last().typ == "continue" {
			c := continueOf(t, ans.last())
			ans = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
			require.Equal(t, http.StatusOK, ans.resp.StatusCode, ans.events)
			text += ans.text(t)
			hops++
		}
		require.Equal(t, "done", ans.last().typ, ans.last().data)
		assert.GreaterOrEqual(t, hops, 4)
		var done api.ChatResponse
		require.NoError(t, json.Unmarshal([]byte(ans.last().data), &done))
		assert.True(t, strings.HasSuffix(text, "299, 300."), text)
		assert.Equal(t, text, done.Answer, "done carries the whole answer")
		assert.Equal(t, "stop", done.FinishReason)
		assert.Equal(t, h.sim.Stats().CompletionTokens, done.Usage.CompletionTokens)

		id := h.responseID()
		recs := h.sim.Requests()
		info, _ := h.sim.Generation(id)
		assert.Equal(t, info.Text, text, "byte for byte")
		assert.Equal(t, "POST /openai/v1/responses", recs[0].Method+" "+recs[0].Path)
		require.Len(t, recs, 1+2*(hops-1))
		for i := 1; i < len(recs); i += 2 {
			assert.Equal(t, "GET", recs[i].Method)
			assert.Empty(t, recs[i].Query, "the owner's check: a retrieve")
			assert.Regexp(t, `^stream=true&starting_after=[0-9]+$`, recs[i+1].Query, "one resume per hop")
		}

		lines := h.logLines()
		require.Len(t, lines, hops)
		for i, l := range lines {
			assert.Equal(t, id, l["responseId"])
			assert.Equal(t, float64(i+1), l["hop"])
			assert.Positive(t, l["hopTokens"])
			if i < hops-1 {
				assert.NotContains(t, l, "completionTokens", "usage is counted once, at the end")
				assert.NotContains(t, l, "promptTokens")
			}
		}
		assert.Equal(t, float64(done.Usage.CompletionTokens), lines[hops-1]["completionTokens"])
		assert.Equal(t, float64(done.Usage.PromptTokens), lines[hops-1]["promptTokens"])
	})
}

// The same answer to a caller that does not stream: 202 with the cursor,
// the answer so far and the poll interval, until a continue answers 200
// with the whole answer.
func TestLongAnswerJSONAcrossHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), false)
		hops := 1
		var partials []string
		for ans.resp.StatusCode == http.StatusAccepted {
			assert.Equal(t, "1", ans.resp.Header.Get("Retry-After"))
			assert.Equal(t, "1000", ans.resp.Header.Get("retry-after-ms"))
			var p apiwire.InProgress
			require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &p))
			assert.Equal(t, "in_progress", p.Status)
			partials = append(partials, p.Partial.Answer)
			ans = h.send(context.Background(), "/api/chat/continue", cursorBody(p.Cursor), false)
			hops++
		}
		require.Equal(t, http.StatusOK, ans.resp.StatusCode, ans.events[0].data)
		assert.GreaterOrEqual(t, hops, 4)
		var done api.ChatResponse
		require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &done))
		info, _ := h.sim.Generation(h.responseID())
		assert.Equal(t, info.Text, done.Answer, "the whole answer, byte for byte")
		for i, p := range partials {
			assert.True(t, strings.HasPrefix(done.Answer, p), "partial %d is the answer so far", i)
			if i > 0 {
				assert.Greater(t, len(p), len(partials[i-1]), "and grows")
			}
		}
	})
}

// A cancel between hops reaches upstream and answers 204; cancelling it
// again (it has ended) is not an error. A cursor timebox did not seal, or
// sealed and someone edited (forged, cut short, any one character
// changed, its fields changed under the seal, another deployment's), is
// 404 not_found on both routes, with no upstream call: nothing relayed,
// nothing cancelled.
func TestLongAnswerCancelAndBadCursors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		c := continueOf(t, ans.last())
		id := h.responseID()

		sealed, err := cursor.NewKeys([][]byte{cursorKey}, "o3")
		require.NoError(t, err)
		real, err := sealed.Open(c)
		require.NoError(t, err)
		otherKey, err := cursor.NewKeys([][]byte{bytes.Repeat([]byte{1}, cursor.MinKeyBytes)}, "o3")
		require.NoError(t, err)
		otherDeployment, err := cursor.NewKeys([][]byte{cursorKey}, "o4-mini")
		require.NoError(t, err)
		lowered := real
		lowered.Hop, lowered.Received = 2, 0
		bad := []string{
			c[:len(c)/2], c[:len(c)-1], "not-a-cursor", strings.ToUpper(c), c + "!", c + "A",
			otherKey.Seal(real),                                                // forged: sealed under a key timebox does not hold
			otherDeployment.Seal(real),                                         // another deployment's
			editFields(t, c, func(f []string) { f[2] = "0" }),                  // After set back, the seal kept
			editFields(t, c, func(f []string) { f[5] = "0" }),                  // Received set back
			editFields(t, c, func(f []string) { f[6] = "b" }),                  // sent to another backend of the pool
			base64.RawURLEncoding.EncodeToString([]byte("1:" + id + ":3:2:0")), // version 1: unsealed
		}
		for i := range len(c) {
			// Every character changed once.
			r := byte('A')
			if c[i] == r {
				r = 'B'
			}
			bad = append(bad, c[:i]+string(r)+c[i+1:])
		}
		for _, bad := range bad {
			before := h.sim.Stats().Requests
			for _, path := range []string{"/api/chat/continue", "/api/chat/cancel"} {
				got := h.send(context.Background(), path, cursorBody(bad), true)
				assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, "%s %q", path, bad)
				require.NotEmpty(t, got.events, "%s %q: %d", path, bad, got.resp.StatusCode)
				assert.Contains(t, got.events[0].data, `"code":"not_found"`)
				assert.NotEmpty(t, got.resp.Header.Get("Access-Control-Allow-Origin"), "CORS headers on the 404")
			}
			assert.Equal(t, before, h.sim.Stats().Requests, "no upstream call for a cursor that does not open")
		}
		info, _ := h.sim.Generation(id)
		assert.Equal(t, "in_progress", info.Status, "nothing cancelled")

		got := h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		assert.Equal(t, http.StatusNoContent, got.resp.StatusCode, got.events)
		info, _ = h.sim.Generation(id)
		assert.Equal(t, "cancelled", info.Status, "the cancel reaches upstream")
		got = h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		assert.Equal(t, http.StatusNoContent, got.resp.StatusCode, "cancelling one that has ended is not an error")
		got = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, "a cancelled answer cannot be continued")
		assert.Empty(t, got.text(t))
	})
}

// editFields is the cursor c with its fields changed by edit and its seal
// kept: what a caller who holds no key can make of a cursor it was given.
func editFields(t *testing.T, c string, edit func(fields []string)) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(c)
	require.NoError(t, err)
	const seal = 32 // HMAC-SHA256
	fields := strings.Split(string(b[:len(b)-seal]), ":")
	edit(fields)
	return base64.RawURLEncoding.EncodeToString(append([]byte(strings.Join(fields, ":")), b[len(b)-seal:]...))
}

// A caller that leaves during a hop has the generation cancelled upstream:
// no generation runs for nobody.
func TestLongAnswerCallerGoneCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		ctx, leave := context.WithCancel(context.Background())
		time.AfterFunc(60*time.Second, leave)
		h.send(ctx, "/api/chat", ask(long600), true)
		id := h.responseID()
		info, _ := h.sim.Generation(id)
		assert.Equal(t, "cancelled", info.Status)
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.Equal(t, "client_gone", lines[0]["code"])
		assert.Equal(t, true, lines[0]["cancelledUpstream"])
	})
}

// LONG_ANSWER_LIMIT ends the hop that reaches it: the generation is
// cancelled upstream and the stream ends with error deadline_exceeded,
// after the text so far.
func TestLongAnswerLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, map[string]string{"LONG_ANSWER_LIMIT": "300s"})
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		text := ans.text(t)
		ans = h.send(context.Background(), "/api/chat/continue", cursorBody(continueOf(t, ans.last())), true)
		text += ans.text(t)
		e := decodeStreamError(t, ans.last())
		assert.Equal(t, apiwire.CodeDeadlineExceeded, e.Error.Code)
		assert.True(t, e.Partial)
		id := h.responseID()
		info, _ := h.sim.Generation(id)
		assert.Equal(t, "cancelled", info.Status)
		assert.Equal(t, info.Text, text, "everything written was delivered")
	})
}

// A fast 503 on a continue is the JSON 503 before any event (retryable by
// its status); the same cursor continued again yields the same range: no
// text repeated, none lost.
func TestLongAnswerFast503OnContinue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := longHarness(t, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600+" [[sim:status code=503 on=resume times=1 id=c503]]"), true)
		text := ans.text(t)
		c := continueOf(t, ans.last())
		failed := h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		assert.Equal(t, http.StatusServiceUnavailable, failed.resp.StatusCode)
		assert.Contains(t, failed.events[0].data, apiwire.CodeUpstreamUnavailable)
		for {
			ans = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
			text += ans.text(t)
			if ans.last().typ != "continue" {
				break
			}
			c = continueOf(t, ans.last())
		}
		require.Equal(t, "done", ans.last().typ)
		info, _ := h.sim.Generation(h.responseID())
		assert.Equal(t, info.Text, text)
	})
}

// A chat deployment keeps Chat Completions: no hop, no cursor.
func TestChatModelKeepsChatCompletions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		resp := decodeOK(t, h.do(chatRequest(ask("hi"))))
		assert.NotEmpty(t, resp.Answer)
		synctest.Wait()
		assert.Equal(t, "/openai/v1/chat/completions", h.sim.Requests()[0].Path)
		got := h.send(context.Background(), "/api/chat/continue", cursorBody("x"), false)
		assert.Equal(t, http.StatusNotFound, got.resp.StatusCode)
	})
}
