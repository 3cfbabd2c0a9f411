package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/memnet"
)

// sseEvent is one event or comment of a stream, with the virtual time it
// arrived at since the request was sent.
type sseEvent struct {
	at      time.Duration
	comment string // a comment line's text ("keep-alive")
	typ     string
	data    string
}

// streamed is one streaming request's answer as the caller saw it.
type streamed struct {
	resp   *http.Response
	events []sseEvent
}

// stream sends body as a streaming chat request to the whole handler,
// served over an in-memory connection, and reads the answer to its end.
func (h *harness) stream(ctx context.Context, body string, headers ...string) streamed {
	h.t.Helper()
	_, client := memnet.Serve(h.t, h.handler)
	r := chatRequest(body, headers...).WithContext(ctx)
	r.RequestURI = ""
	r.URL.Scheme, r.URL.Host = "http", "timebox.test"
	r.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := client.Do(r)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	out := streamed{resp: resp}
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		b, _ := io.ReadAll(resp.Body)
		out.events = append(out.events, sseEvent{data: string(b)})
		return out
	}
	sc := bufio.NewScanner(resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
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
		default:
			h.t.Errorf("unexpected line %q", line)
		}
	}
	return out
}

// text is the answer the deltas make up.
func (s streamed) text(t *testing.T) string {
	var b strings.Builder
	for _, ev := range s.events {
		if ev.typ == "delta" {
			var d struct{ Text string }
			require.NoError(t, json.Unmarshal([]byte(ev.data), &d))
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// of returns the events of one type.
func (s streamed) of(typ string) []sseEvent {
	var out []sseEvent
	for _, ev := range s.events {
		if ev.typ == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (s streamed) last() sseEvent { return s.events[len(s.events)-1] }

func decodeStreamError(t *testing.T, ev sseEvent) apiwire.StreamError {
	t.Helper()
	require.Equal(t, "error", ev.typ, ev.data)
	var e apiwire.StreamError
	require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
	return e
}

func assertStreamHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	assert.NotEmpty(t, resp.Header.Get("x-request-id"))
	assertCORS(t, resp.Header)
}

func TestStreamedAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"AZURE_OPENAI_DEPLOYMENT": "gpt-4"},
			aoaitest.Options{Deployments: []string{"gpt-4"}, TimeToFirstToken: 500 * time.Millisecond, PerToken: 20 * time.Millisecond})
		s := h.stream(context.Background(), ask("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."), "x-request-id", "abc-123")
		assertStreamHeaders(t, s.resp)
		assert.Equal(t, "abc-123", s.resp.Header.Get("x-request-id"))
		deltas := s.of("delta")
		require.Len(t, deltas, 29, "a delta per token, as Azure sent them")
		assert.Equal(t, 520*time.Millisecond, deltas[0].at, "the first piece is passed on as it arrives")
		assert.Equal(t, "done", s.last().typ)
		var done api.ChatResponse
		require.NoError(t, json.Unmarshal([]byte(s.last().data), &done))
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", done.Answer)
		assert.Equal(t, done.Answer, s.text(t), "the deltas make up the answer")
		assert.Equal(t, "stop", done.FinishReason)
		assert.Equal(t, 29, done.Usage.CompletionTokens)
		assert.Equal(t, "abc-123", done.RequestID)
		assert.Equal(t, 1, done.UpstreamAttempts)
		assert.Empty(t, s.of("error"))
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 200, lines[0]["status"])
		assert.EqualValues(t, 29, lines[0]["completionTokens"])
	})
}

// The case: a 300 s generation, streamed. The caller reads the
// answer as it is written, and at the budget gets an error event with
// everything generated until then; the upstream call is cut.
func TestStreamedGenerationLongerThanTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, longGeneration)
		s := h.stream(context.Background(), longQuestion)
		assertStreamHeaders(t, s.resp)
		deltas := s.of("delta")
		require.NotEmpty(t, deltas)
		assert.Equal(t, longGeneration.TimeToFirstToken+longGeneration.PerToken, deltas[0].at,
			"the first delta as soon as the simulator sends its first token")
		assert.Len(t, deltas, tokensBy(200*time.Second), "every token generated until the budget ran out")
		assert.Empty(t, s.of("done"))
		last := s.last()
		assert.Equal(t, 200*time.Second, last.at, "the budget still cuts at exactly 200 s")
		e := decodeStreamError(t, last)
		assert.Equal(t, "deadline_exceeded", e.Error.Code)
		assert.True(t, e.Partial)
		assert.Equal(t, s.resp.Header.Get("x-request-id"), e.Error.RequestID)
		assert.True(t, strings.HasPrefix(s.text(t), "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,"))
		for _, ev := range s.events {
			assert.Empty(t, ev.comment, "no keep-alive while tokens flow")
		}

		synctest.Wait()
		st := h.sim.Stats()
		assert.Equal(t, 1, st.Requests)
		assert.Equal(t, 1, st.Cancelled, "the upstream call is cut at the deadline")
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 200, lines[0]["status"])
		assert.Equal(t, "deadline_exceeded", lines[0]["code"])
		assert.EqualValues(t, tokensBy(200*time.Second), lines[0]["completionTokens"], "delivered")
		assert.Equal(t, true, lines[0]["stream"])
		assert.EqualValues(t, 1300, lines[0]["firstTokenMs"], "the time to first token")
		assert.Nil(t, lines[0]["abandonedTokens"])
	})
}

// A first token slower than the keep-alive interval: comments every 15 s
// of silence keep the stream open, and a slow first token is no failure.
func TestKeepAliveDuringASlowFirstToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{PerToken: 100 * time.Millisecond})
		s := h.stream(context.Background(), ask("[[sim:slow ms=50000]] hello"))
		assertStreamHeaders(t, s.resp)
		var comments []time.Duration
		for _, ev := range s.events {
			if ev.comment != "" {
				assert.Equal(t, "keep-alive", ev.comment)
				comments = append(comments, ev.at)
			}
		}
		assert.Equal(t, []time.Duration{15 * time.Second, 30 * time.Second, 45 * time.Second}, comments)
		deltas := s.of("delta")
		require.NotEmpty(t, deltas)
		assert.Equal(t, 50*time.Second+100*time.Millisecond, deltas[0].at)
		assert.Equal(t, "done", s.last().typ, "a first token after 50 s, past the fast-failure threshold's 30 s, is an answer")
		assert.Equal(t, 1, h.sim.Stats().Requests)
	})
}

// Before the first event a failure is the ordinary JSON answer with its
// status, so a fast failure stays retryable by status.
func TestStreamFailureBeforeTheFirstTokenIsJSON(t *testing.T) {
	tests := []struct {
		directive  string
		wantStatus int
		wantCode   string
	}{
		{"[[sim:status code=503]]", 503, "upstream_unavailable"},
		{"[[sim:throttle s=45]]", 429, "rate_limited"}, // 45 s does not fit the caller's 20 s
		{"[[sim:reset]]", 502, "upstream_error"},
		{"[[sim:filter]]", 400, "content_filtered"},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				s := h.stream(context.Background(), ask(tt.directive+" hello"), "x-client-timeout-ms", "20000")
				assert.Equal(t, tt.wantStatus, s.resp.StatusCode)
				assert.Equal(t, "application/json; charset=utf-8", s.resp.Header.Get("Content-Type"))
				assertCORS(t, s.resp.Header)
				var e apiwire.ErrorBody
				require.NoError(t, json.Unmarshal([]byte(s.events[0].data), &e))
				assert.Equal(t, tt.wantCode, e.Error.Code)
				assert.Equal(t, 1, h.sim.Stats().Requests)
			})
		})
	}
}

// Faults after the first token end the stream with an error event after
// the text that got through, and are never retried (the simulator counts
// one request). The same faults without a stream are a 500 (or, for the
// filter, today's 200) carrying that text.
func TestMidStreamFaults(t *testing.T) {
	tests := []struct {
		directive   string
		wantCode    string
		wantAt      time.Duration
		wantText    string
		wantStatus  int // not streamed
		wantPartial bool
	}{
		{"[[sim:reset tokens=9]]", "upstream_error", 9 * time.Second, "1, 2, 3, ", 500, true},
		{"[[sim:filter tokens=9]]", "content_filtered", 9 * time.Second, "1, 2, 3, ", 200, false},
		{"[[sim:hang tokens=9]]", "deadline_exceeded", 200 * time.Second, "1, 2, 3, ", 500, true},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			question := ask(tt.directive + " Count to 20, with a comma between each number.")
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{PerToken: time.Second})
				s := h.stream(context.Background(), question)
				assertStreamHeaders(t, s.resp)
				assert.Equal(t, tt.wantText, s.text(t))
				last := s.last()
				assert.Equal(t, tt.wantAt, last.at)
				e := decodeStreamError(t, last)
				assert.Equal(t, tt.wantCode, e.Error.Code)
				assert.True(t, e.Partial)
				assert.Zero(t, e.Status, "after a delta no status for a retry rule to read")
				assert.Nil(t, e.ShouldRetry)
				synctest.Wait()
				assert.Equal(t, 1, h.sim.Stats().Requests, "no retry after the first token")
			})
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{PerToken: time.Second})
				w := h.do(chatRequest(question))
				assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
				var body apiwire.ErrorBody
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
				if tt.wantPartial {
					require.NotNil(t, body.Partial)
					assert.Equal(t, tt.wantText, body.Partial.Answer)
					assert.Equal(t, 9, body.Partial.CompletionTokens)
					assert.Equal(t, "false", w.Header().Get("x-should-retry"), "an answer that had begun is not asked again")
				}
				assert.Equal(t, 1, h.sim.Stats().Requests)
			})
		})
	}
}

// A caller that goes away mid-answer cuts the upstream call; the log line
// counts what it was sent and what was generated for nobody.
func TestStreamCallerGoingAwayCutsTheUpstream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, longGeneration)
		ctx, cancel := context.WithCancel(context.Background())
		// Not on a token's instant (one is due every 300 ms), so the count is exact.
		const goAway = 100*time.Second + 100*time.Millisecond
		time.AfterFunc(goAway, cancel)
		h.stream(ctx, longQuestion)
		synctest.Wait()
		assert.Equal(t, 1, h.sim.Stats().Cancelled)
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 499, lines[0]["status"])
		sent, _ := lines[0]["completionTokens"].(float64)
		abandoned, _ := lines[0]["abandonedTokens"].(float64)
		assert.Equal(t, tokensBy(goAway), int(sent+abandoned), "every token generated is counted, delivered or abandoned")
	})
}

// A caller that stops reading (but keeps the connection) cannot hold the
// request past its deadline: writes to it give up budget.AnswerGrace after
// it. It is logged as what it is, a caller still there that stopped
// reading (writeTimedOut, with the answer's own status and code), not as
// one that went away (499 client_gone).
func TestStreamCallerThatStopsReadingIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, longGeneration)
		_, client := memnet.Serve(t, h.handler)
		r := chatRequest(longQuestion)
		r.RequestURI = ""
		r.URL.Scheme, r.URL.Host = "http", "timebox.test"
		r.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		<-time.After(time.Hour) // and never read
		synctest.Wait()
		lines := h.logLines()
		require.Len(t, lines, 1, "the request ended")
		assert.EqualValues(t, 205*time.Second/time.Millisecond, lines[0]["elapsedMs"], "the budget, and 5 s for the last event")
		assert.EqualValues(t, 200, lines[0]["status"], "the stream's status, sent")
		assert.Equal(t, true, lines[0]["writeTimedOut"])
		assert.Equal(t, apiwire.CodeDeadlineExceeded, lines[0]["code"])
		sent, _ := lines[0]["completionTokens"].(float64)
		abandoned, _ := lines[0]["abandonedTokens"].(float64)
		assert.Positive(t, abandoned, "what the caller did not take is counted as abandoned")
		assert.Positive(t, sent+abandoned)
		assert.Equal(t, 1, h.sim.Stats().Cancelled)
	})
}

// Only a caller that asks for text/event-stream gets a stream.
func TestStreamIsAskedForWithAccept(t *testing.T) {
	tests := []struct {
		accept     string
		wantStream bool
	}{
		{"", false},
		{"application/json", false},
		{"*/*", false},
		{"text/event-stream", true},
		{"application/json, text/event-stream;q=0.5", true},
		{"text/event-stream;q=0, application/json", false},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, nil, aoaitest.Options{})
			w := h.do(chatRequest(ask("hello"), "Accept", tt.accept))
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tt.wantStream, strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream"), tt.accept)
		})
	}
}

// An upstream that fails before its first token, but after a keep-alive
// has committed the 200, ends the stream with an error event that says
// what the JSON answer would have: its status, its retry-after-ms and its
// x-should-retry, so that the client's rule judges both alike (fast 503:
// retryable; the same at 40 s: a timeout; a throttle: its wait). Each case
// is asked twice of the same handler, streamed and not, and the event is
// compared with the JSON answer's status and headers.
func TestStreamFailureAfterAKeepAliveCarriesTheJSONAnswersStatusAndHints(t *testing.T) {
	tests := []struct {
		directive       string
		at              time.Duration
		wantStatus      int
		wantCode        string
		wantShouldRetry bool
		wantRetryAfter  int64
	}{
		{"[[sim:status code=503 after=20000]]", 20 * time.Second, 503, "upstream_unavailable", true, 0},
		{"[[sim:status code=503 after=20000 retry-ms=2500]]", 20 * time.Second, 503, "upstream_unavailable", true, 2500},
		{"[[sim:status code=503 after=40000]]", 40 * time.Second, 500, "upstream_error", false, 0}, // slow: a timeout
		{"[[sim:throttle s=50 after=20000]]", 20 * time.Second, 429, "rate_limited", true, 50_000}, // 50 s does not fit the caller's 60 s
		{"[[sim:reset after=20000]]", 20 * time.Second, 502, "upstream_error", true, 0},
		{"[[sim:filter after=20000]]", 20 * time.Second, 400, "content_filtered", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				s := h.stream(context.Background(), ask(tt.directive+" hello"), "x-client-timeout-ms", "60000")
				assertStreamHeaders(t, s.resp)
				require.Len(t, s.events, int(tt.at/(15*time.Second))+1, "keep-alives, then the error")
				assert.Equal(t, "keep-alive", s.events[0].comment)
				assert.Equal(t, 15*time.Second, s.events[0].at)
				assert.Equal(t, tt.at, s.last().at)
				e := decodeStreamError(t, s.last())
				assert.False(t, e.Partial, "no delta came before it")
				assert.Equal(t, tt.wantCode, e.Error.Code)
				assert.Equal(t, tt.wantStatus, e.Status)
				require.NotNil(t, e.ShouldRetry)
				assert.Equal(t, tt.wantShouldRetry, *e.ShouldRetry)
				assert.Equal(t, tt.wantRetryAfter, e.RetryAfterMs)

				w := h.do(chatRequest(ask(tt.directive+" hello"), "x-client-timeout-ms", "60000"))
				var body apiwire.ErrorBody
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
				assert.Equal(t, w.Code, e.Status, "the JSON answer's status")
				assert.Equal(t, body.Error.Code, e.Error.Code)
				assert.Equal(t, body.Error.Message, e.Error.Message)
				assert.Equal(t, w.Header().Get("x-should-retry") != "false", *e.ShouldRetry, "the JSON answer's x-should-retry")
				ms := w.Header().Get("retry-after-ms")
				if e.RetryAfterMs == 0 {
					assert.Empty(t, ms)
				} else {
					assert.Equal(t, strconv.FormatInt(e.RetryAfterMs, 10), ms, "the JSON answer's retry-after-ms")
				}
			})
		})
	}
}
