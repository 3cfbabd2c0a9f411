package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

func assertCORS(t *testing.T, h http.Header) {
	t.Helper()
	assert.Equal(t, allowedOrigin, h.Get("Access-Control-Allow-Origin"))
	exposed := strings.ToLower(h.Get("Access-Control-Expose-Headers"))
	for _, name := range []string{"retry-after", "retry-after-ms", "x-should-retry", "x-request-id"} {
		assert.Contains(t, exposed, name)
	}
}

// The product's promise: an upstream that never answers ends in a 500 the
// browser can read, at exactly the budget, and the upstream call is cut.
func TestHangEndsAtTheBudgetWithAReadable500(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		start := time.Now()
		w := h.do(chatRequest(ask("[[sim:hang]] summarise the handbook")))
		assert.Equal(t, 200*time.Second, time.Since(start), "the answer comes at exactly the budget")
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		assert.Equal(t, "deadline_exceeded", decodeError(t, w).Error.Code)
		assert.Equal(t, "false", w.Header().Get("x-should-retry"))
		assertCORS(t, w.Header())
		assert.Equal(t, "prompt;dur=0.0, upstream;dur=200000.0, total;dur=200000.0", w.Header().Get("Server-Timing"),
			"where the time went, readable in the browser's devtools")
		assert.Equal(t, allowedOrigin, w.Header().Get("Timing-Allow-Origin"))
		synctest.Wait()
		st := h.sim.Stats()
		assert.Equal(t, 1, st.Requests)
		assert.Equal(t, 1, st.Cancelled, "the simulator saw the upstream call cancelled")
		assert.Equal(t, 0, st.InFlight)
	})
}

func TestClientTimeoutShortensTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		start := time.Now()
		w := h.do(chatRequest(ask("[[sim:hang]] hi"), "x-client-timeout-ms", "10000"))
		assert.Equal(t, 8*time.Second, time.Since(start), "10 s minus the 2 s margin")
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		assert.Equal(t, "deadline_exceeded", decodeError(t, w).Error.Code)
		synctest.Wait()
		assert.Equal(t, 1, h.sim.Stats().Cancelled)
	})
}

func TestCallerGoingAwayCancelsTheUpstreamCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		r := chatRequest(ask("[[sim:hang]] hi")).WithContext(ctx)
		done := make(chan struct{})
		go func() {
			h.do(r)
			close(done)
		}()
		<-time.After(5 * time.Second)
		synctest.Wait()
		require.Equal(t, 1, h.sim.Stats().InFlight)
		cancel()
		<-done
		synctest.Wait()
		assert.Equal(t, 1, h.sim.Stats().Cancelled)
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 499, lines[0]["status"])
	})
}

func TestUpstreamFailures(t *testing.T) {
	tests := []struct {
		name         string
		directive    string
		wantStatus   int
		wantCode     string
		wantNoRetry  bool
		wantRequests int
		wantElapsed  time.Duration
	}{
		{"fast 503 is retryable 503", "[[sim:status code=503]]", 503, "upstream_unavailable", false, 1, 0},
		{"fast 500 is retryable 502", "[[sim:status code=500 after=2000]]", 502, "upstream_error", false, 1, 2 * time.Second},
		{"fast 502 is retryable 502", "[[sim:status code=502]]", 502, "upstream_error", false, 1, 0},
		{"connection reset is retryable 502", "[[sim:reset]]", 502, "upstream_error", false, 1, 0},
		{"malformed body is retryable 502", "[[sim:malformed]]", 502, "upstream_error", false, 1, 0},
		{"slow 500 is a timeout: 500, not retried", "[[sim:status code=500 after=31000]]", 500, "upstream_error", true, 1, 31 * time.Second},
		{"slow 503 is a timeout: 500, not retried", "[[sim:status code=503 after=45000]]", 500, "upstream_error", true, 1, 45 * time.Second},
		{"content filter", "[[sim:filter]]", 400, "content_filtered", true, 1, 0},
		{"throttle that no wait clears is a 413", "[[sim:throttle s=86400]]", 413, "prompt_too_large", true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				start := time.Now()
				w := h.do(chatRequest(ask(tt.directive + " hello")))
				assert.Equal(t, tt.wantElapsed, time.Since(start))
				assert.Equal(t, tt.wantStatus, w.Code, w.Body.String())
				assert.Equal(t, tt.wantCode, decodeError(t, w).Error.Code)
				if tt.wantNoRetry {
					assert.Equal(t, "false", w.Header().Get("x-should-retry"))
				} else {
					assert.Empty(t, w.Header().Get("x-should-retry"))
				}
				assertCORS(t, w.Header())
				assert.Equal(t, tt.wantRequests, h.sim.Stats().Requests)
			})
		})
	}
}

func TestThrottleThatFitsIsRetriedByTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		start := time.Now()
		w := h.do(chatRequest(ask("[[sim:throttle s=7 times=1 id=fits]] hello")))
		resp := decodeOK(t, w)
		assert.Equal(t, 2, resp.UpstreamAttempts)
		assert.Equal(t, 7*time.Second, time.Since(start), "the server waited what the 429 asked")
		assert.Contains(t, w.Header().Get("Server-Timing"), "upstream;dur=7000.0")
		assert.Equal(t, 2, h.sim.Stats().Requests)
		lines := h.logLines()
		require.Len(t, lines, 1)
		assert.EqualValues(t, 2, lines[0]["upstreamAttempts"])
	})
}

// The server's own attempts stop at UPSTREAM_MAX_ATTEMPTS (default 2), even
// when every wait fits: a throttle that lasts is the caller's to see, with
// the wait Azure asked for.
func TestThrottleRetriesStopAtTheServersAttempts(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantAttempts int
		wantStatus   int
	}{
		{"default: two attempts", nil, 2, http.StatusTooManyRequests},
		{"three attempts allowed", map[string]string{"UPSTREAM_MAX_ATTEMPTS": "3"}, 3, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.env, aoaitest.Options{})
				w := h.do(chatRequest(ask("[[sim:throttle s=3 times=2 id=lasting]] hello")))
				require.Equal(t, tt.wantStatus, w.Code, w.Body.String())
				assert.Equal(t, tt.wantAttempts, h.sim.Stats().Requests)
				lines := h.logLines()
				require.Len(t, lines, 1)
				assert.EqualValues(t, tt.wantAttempts, lines[0]["upstreamAttempts"])
			})
		})
	}
}

// TestBurstOverTheCallRateIsSmoothedByTheServer: two questions a second
// apart on a deployment allowed one request per 10 s (1000 TPM, 6 RPM).
// The second meets Azure's call-rate 429, whose 9 s wait fits its budget,
// so the server waits it out and answers; the caller never sees the 429.
func TestBurstOverTheCallRateIsSmoothedByTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{TPM: 1000})
		// A small maxTokens keeps both well inside the 1000 tokens.
		question := func(q string) string {
			b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": q}}, "maxTokens": 100})
			return string(b)
		}
		first := decodeOK(t, h.do(chatRequest(question("hello"))))
		assert.Equal(t, 1, first.UpstreamAttempts)
		<-time.After(time.Second) // virtual time: a second between the two questions
		start := time.Now()
		second := decodeOK(t, h.do(chatRequest(question("hello again"))))
		assert.Equal(t, 2, second.UpstreamAttempts)
		assert.Equal(t, 9*time.Second, time.Since(start), "the server waited what the call-rate 429 asked")
		assert.Equal(t, 1, h.sim.Stats().Throttled)
	})
}

// TestTheLogLineNamesAzuresRequestID: the log line carries Azure's
// apim-request-id of the last attempt, what Azure support asks for, on
// success and on failure alike, and Azure got timebox's request id as
// x-ms-client-request-id.
func TestTheLogLineNamesAzuresRequestID(t *testing.T) {
	for _, question := range []string{"hello", "[[sim:status code=503]] hello"} {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, nil, aoaitest.Options{})
			w := h.do(chatRequest(ask(question)))
			recs := h.sim.Requests()
			require.Len(t, recs, 1)
			require.NotEmpty(t, recs[0].RequestID)
			lines := h.logLines()
			require.Len(t, lines, 1)
			assert.Equal(t, recs[0].RequestID, lines[0]["upstreamRequestId"], question)
			assert.Equal(t, w.Header().Get("x-request-id"), recs[0].ClientRequestID, question)
		})
	}
}

func TestThrottleThatDoesNotFitAnswers429AtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, aoaitest.Options{})
		start := time.Now()
		// 45 s fits the 200 s budget on its own, but not a 20 s client timeout.
		w := h.do(chatRequest(ask("[[sim:throttle s=45]] hello"), "x-client-timeout-ms", "20000"))
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, http.StatusTooManyRequests, w.Code)
		e := decodeError(t, w)
		assert.Equal(t, "rate_limited", e.Error.Code)
		assert.Equal(t, "45", w.Header().Get("Retry-After"))
		assert.Equal(t, "45000", w.Header().Get("retry-after-ms"))
		// The clients rely on it: an answer with retry-after-ms says when
		// in its message, so they do not add their own.
		assert.Contains(t, e.Error.Message, "Try again in 45 s.")
		assert.Empty(t, w.Header().Get("x-should-retry"))
		assert.Equal(t, 1, h.sim.Stats().Requests)
	})
}

// A fast upstream 503 passes on the wait Azure OpenAI named (retry-after-ms
// first, as the retry rule reads it), and says it in its message as every
// answer with retry-after-ms does; one that named none names none, so each
// client keeps its own jittered backoff.
func TestUpstream503PassesOnAzuresWait(t *testing.T) {
	tests := []struct {
		directive           string
		wantSeconds, wantMs string
		wantMessage         string
	}{
		{"[[sim:status code=503 retry-ms=2500]]", "3", "2500", "The AI service is briefly unavailable. Try again in 3 s."},
		{"[[sim:status code=503 retry-ms=40000]]", "40", "40000", "The AI service is briefly unavailable. Try again in 40 s."},
		{"[[sim:status code=503]]", "", "", "The AI service is briefly unavailable. Try again in a moment."},
	}
	for _, tt := range tests {
		t.Run(tt.directive, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, aoaitest.Options{})
				w := h.do(chatRequest(ask(tt.directive + " hello")))
				require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
				e := decodeError(t, w)
				assert.Equal(t, "upstream_unavailable", e.Error.Code)
				assert.Equal(t, tt.wantSeconds, w.Header().Get("Retry-After"))
				assert.Equal(t, tt.wantMs, w.Header().Get("retry-after-ms"))
				assert.Equal(t, tt.wantMessage, e.Error.Message)
				assert.Empty(t, w.Header().Get("x-should-retry"))
				assertCORS(t, w.Header())
				assert.Equal(t, 1, h.sim.Stats().Requests, "the server does not retry a 503 itself")
			})
		})
	}
}

func TestSuccessMatchesTheRecordedUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"AZURE_OPENAI_DEPLOYMENT": "gpt-4"}, aoaitest.Options{Deployments: []string{"gpt-4"}})
		w := h.do(chatRequest(ask("Count to 10, with a comma between each number, no newlines and a period at the end. E.g., 1, 2, 3, ..."),
			"x-request-id", "abc-123"))
		resp := decodeOK(t, w)
		assert.Equal(t, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", resp.Answer)
		assert.Equal(t, "stop", resp.FinishReason)
		assert.Equal(t, 1, resp.UpstreamAttempts)
		assert.Equal(t, "abc-123", resp.RequestID)
		assert.Equal(t, "abc-123", w.Header().Get("x-request-id"))
		assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
		assert.False(t, resp.Truncated)
		assertCORS(t, w.Header())
		recs := h.sim.Requests()
		require.Len(t, recs, 1)
		assert.Equal(t, "/openai/v1/chat/completions", recs[0].Path)
		assert.Equal(t, "api-key", recs[0].Auth)
		assert.Equal(t, 1024, recs[0].MaxTokens, "a token limit is always sent")
		assert.Equal(t, "abc-123", recs[0].ClientRequestID)
	})
}

func TestDeploymentsPathWithAPIVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"AZURE_OPENAI_API_VERSION": "2024-10-21"}, aoaitest.Options{})
		decodeOK(t, h.do(chatRequest(ask("hello"))))
		recs := h.sim.Requests()
		require.Len(t, recs, 1)
		assert.Equal(t, "/openai/deployments/gpt-4o-mini/chat/completions", recs[0].Path)
	})
}

// A caller's x-request-id is echoed only when it is 1-128 characters of
// A-Za-z0-9._:-; anything else (it goes into logs and headers) is replaced
// by a fresh id.
func TestRequestIDIsEchoedOnlyWhenSane(t *testing.T) {
	h := newHarness(t, nil, aoaitest.Options{})
	long := strings.Repeat("a", 128)
	for id, echoed := range map[string]bool{
		"abc-123": true, "A.b_c:d-9": true, long: true,
		long + "a": false, "a b": false, "é": false, "a\nb": false, "a/b": false, "<script>": false,
	} {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/health", nil)
		r.Header.Set("x-request-id", id)
		got := h.do(r).Header().Get("x-request-id")
		if echoed {
			assert.Equal(t, id, got)
		} else {
			assert.NotEqual(t, id, got, "%q must not be echoed", id)
			assert.Regexp(t, `^[0-9a-f]{32}$`, got, "a fresh id replaces %q", id)
		}
	}
}
