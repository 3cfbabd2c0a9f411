package api_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/memnet"
	"github.com/timebox-dev/timebox/internal/quota"
)

// The quota in the chat pipeline, against a real Azurite (the tests fail
// where it is not installed, unless TIMEBOX_SKIP_AZURITE=1). Outside a
// synctest bubble: Azurite is a real socket.

func quotaHarness(t *testing.T, userDaily int, extra map[string]string) *harness {
	t.Helper()
	az := azuritetest.Start(t)
	env := map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": strconv.Itoa(userDaily)}
	for k, v := range extra {
		env[k] = v
	}
	return newHarness(t, env, aoaitest.Options{})
}

func usageOf(t *testing.T, h *harness) api.UsageResponse {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/api/usage", nil)
	r.Header.Set("Origin", allowedOrigin)
	w := h.do(r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
	var u api.UsageResponse
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &u))
	return u
}

// TestQuotaExceededIsFinalReadableAndSendsNothing: a question that does not
// fit what is left of the day is answered 429 quota_exceeded with the
// limit's message, x-should-retry: false, the wait until midnight UTC and
// CORS headers, and Azure OpenAI is never asked.
func TestQuotaExceededIsFinalReadableAndSendsNothing(t *testing.T) {
	h := quotaHarness(t, 400, nil) // after one answer (about 105 tokens) the prompt and 256 no longer fit
	resp := decodeOK(t, h.do(chatRequest(ask("hi"))))
	used := usageOf(t, h).User.Day.Used
	assert.EqualValues(t, resp.Usage.TotalTokens, used, "settled to what was billed")
	assert.Len(t, h.sim.Requests(), 1)

	w := h.do(chatRequest(ask("hi")))
	assert.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	e := decodeError(t, w)
	assert.Equal(t, apiwire.CodeQuotaExceeded, e.Error.Code)
	assert.Regexp(t, `^Your daily limit of 400 tokens is used up\. It resets at 00:00 UTC, in (\d+ h )?\d+ min\.$|^Your daily limit of 400 tokens is used up\. It resets at 00:00 UTC, in \d+ h\.$`, e.Error.Message)
	assert.Equal(t, "false", w.Header().Get("x-should-retry"))
	wait, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err)
	toMidnight := time.Until(time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour))
	assert.InDelta(t, toMidnight.Seconds(), wait, 5)
	assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"), "CORS headers on the refusal")
	assert.Len(t, h.sim.Requests(), 1, "no upstream call")
	lines := h.logLines()
	assert.Equal(t, "settled", lines[0]["quota"])
	assert.Equal(t, "exceeded", lines[len(lines)-1]["quota"])
}

// TestLowerCompletionLimitWhenTheQuotaIsShort: with less left than the
// prompt and MAX_TOKENS, but room for a useful answer, the question is
// asked with the completion limit that fits.
func TestLowerCompletionLimitWhenTheQuotaIsShort(t *testing.T) {
	h := quotaHarness(t, 700, nil) // MAX_TOKENS 1024 does not fit; the prompt and 256 do
	decodeOK(t, h.do(chatRequest(ask("hi"))))
	reqs := h.sim.Requests()
	require.Len(t, reqs, 1)
	prompt := h.logLines()[0]["promptTokens"].(float64)
	assert.Equal(t, 700-int(prompt), reqs[0].MaxTokens, "the completion limit is what is left of the day")
	assert.EqualValues(t, 700, h.logLines()[0]["quotaReserved"])
}

// TestUsageRoute: GET /api/usage is the caller's windows, each only when
// its limit is set, and empty ones without quotas.
func TestUsageRoute(t *testing.T) {
	h := quotaHarness(t, 50_000, nil)
	u := usageOf(t, h)
	require.NotNil(t, u.User.Day)
	assert.Nil(t, u.Tenant.Month, "no tenant limit set")
	assert.EqualValues(t, 50_000, u.User.Day.Limit)
	assert.Equal(t, time.Now().UTC().Truncate(24*time.Hour).Add(24*time.Hour), u.User.Day.ResetsAt)

	noQuota := newHarness(t, nil, aoaitest.Options{})
	r := httptest.NewRequest(http.MethodGet, "/api/usage", nil)
	w := noQuota.do(r)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"user":{},"tenant":{}}`, w.Body.String())
}

// TestQuotaStoreUnreachable: 503 quota_unavailable, retryable, with its
// wait, and nothing sent upstream; with QUOTA_FAIL_OPEN=true the question
// is served and its log line says the quota was skipped. GET /api/usage
// is 503 quota_unavailable either way, at once: fail-open serves
// questions, but has no true number to show.
func TestQuotaStoreUnreachable(t *testing.T) {
	unavailable := func(t *testing.T, w *httptest.ResponseRecorder) {
		t.Helper()
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		e := decodeError(t, w)
		assert.Equal(t, apiwire.CodeQuotaUnavailable, e.Error.Code)
		assert.True(t, strings.HasSuffix(e.Error.Message, "Try again in 5 s."), e.Error.Message)
		assert.Equal(t, "5", w.Header().Get("Retry-After"))
		assert.Equal(t, "5000", w.Header().Get("retry-after-ms"))
		assert.Empty(t, w.Header().Get("x-should-retry"), "retryable")
		assert.Equal(t, allowedOrigin, w.Header().Get("Access-Control-Allow-Origin"))
	}
	for _, failOpen := range []bool{false, true} {
		t.Run("fail open "+strconv.FormatBool(failOpen), func(t *testing.T) {
			h := newHarness(t, map[string]string{
				"QUOTA_TABLE_ENDPOINT": "http://127.0.0.1:1/devstoreaccount1", "QUOTA_USER_DAILY_TOKENS": "1000", "QUOTA_FAIL_OPEN": strconv.FormatBool(failOpen),
			}, aoaitest.Options{})
			w := h.do(chatRequest(ask("hi")))
			line := h.logLines()[0]
			if failOpen {
				decodeOK(t, w)
				assert.Equal(t, "skipped", line["quota"])
				assert.Contains(t, line["error"], "store unavailable")
			} else {
				unavailable(t, w)
				assert.Empty(t, h.sim.Requests(), "nothing sent upstream")
				assert.Equal(t, "unavailable", line["quota"])
			}

			r := httptest.NewRequest(http.MethodGet, "/api/usage", nil)
			r.Header.Set("Origin", allowedOrigin)
			start := time.Now()
			w = h.do(r)
			assert.Less(t, time.Since(start), 2*time.Second, "at once (an upper bound: a real socket)")
			unavailable(t, w)
			assert.Equal(t, "unavailable", h.logLines()[1]["quota"])
		})
	}
}

// slowWrites makes each of the store's batches (a reservation's, a
// settlement's) take a second of the bubble's virtual time.
type slowWrites struct{ next policy.Transporter }

func (s slowWrites) Do(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "$batch") {
		time.Sleep(time.Second) // only in a synctest bubble: virtual time
	}
	return s.next.Do(r)
}

// TestAnswerIsCountedWhenItArrives: a whole answer is settled before it is
// written, so a page that reads GET /api/usage the moment the answer's
// body (JSON) or its done event (a stream; a long answer's last hop)
// arrives finds it counted. The store's writes take a second of virtual
// time, and the usage read none: a settlement after the answer would not
// be seen.
func TestAnswerIsCountedWhenItArrives(t *testing.T) {
	az := azuritetest.Start(t)
	for _, tt := range []struct {
		name, deployment string
		stream           bool
	}{
		{"json", "gpt-4o-mini", false},
		{"stream", "gpt-4o-mini", true},
		{"long answer", "o3", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, map[string]string{
					"AZURE_OPENAI_DEPLOYMENT": tt.deployment, "QUOTA_TABLE_ENDPOINT": az.Endpoint,
					"QUOTA_USER_DAILY_TOKENS": "100000", "QUOTA_TABLE": strings.ReplaceAll(tt.name, " ", ""),
				}, aoaitest.Options{Deployments: []string{tt.deployment}}, withQuotaStore(func(next policy.Transporter) policy.Transporter { return slowWrites{next} }))
				t.Cleanup(h.sim.Close)
				_, client := memnet.Serve(t, h.handler)
				r := chatRequest(ask("hi"))
				r.URL, r.RequestURI = &url.URL{Scheme: "http", Host: "timebox.test", Path: "/api/chat"}, ""
				if tt.stream {
					r.Header.Set("Accept", "text/event-stream")
				}
				resp, err := client.Do(r)
				require.NoError(t, err)
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)

				var answer api.ChatResponse
				if tt.stream {
					sc := bufio.NewScanner(resp.Body)
					done := false
					for !done && sc.Scan() {
						done = sc.Text() == "event: done"
					}
					require.True(t, sc.Scan(), "the done event's data")
					require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &answer))
				} else {
					require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
				}
				require.Positive(t, answer.Usage.TotalTokens)
				assert.EqualValues(t, answer.Usage.TotalTokens, usageOf(t, h).User.Day.Used, "counted when it arrives")
			})
		})
	}
}

// failSettlements refuses the store's batches after the first (a
// reservation's): the settlement fails, as when the store goes away
// during the request.
type failSettlements struct {
	next    policy.Transporter
	batches *atomic.Int32
}

func (f failSettlements) Do(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "$batch") && f.batches.Add(1) > 1 {
		return nil, errors.New("the store went away")
	}
	return f.next.Do(r)
}

// TestUnsettledHoldIsChargedWhenItLapses: a question that reached Azure
// OpenAI and whose settlement failed (its log line says unsettled) holds
// its tokens until the hold lapses, its budget and the grace after its
// start; then the whole hold is charged, not released: Azure billed the
// request, and the hold is the documented bound of what it cost. A
// question that failed before anything reached Azure (a fast 503) is
// settled to nothing by its instance at once, and nothing is charged when
// its hold would have lapsed.
func TestUnsettledHoldIsChargedWhenItLapses(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		var batches atomic.Int32
		h := newHarness(t, map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "100000"}, aoaitest.Options{},
			withQuotaStore(func(next policy.Transporter) policy.Transporter { return failSettlements{next, &batches} }))
		t.Cleanup(h.sim.Close)
		decodeOK(t, h.do(chatRequest(ask("hi"))))
		assert.Equal(t, "unsettled", h.logLines()[0]["quota"])
		held := usageOf(t, h).User.Day.Reserved
		require.Positive(t, held)
		assert.EqualValues(t, held, h.logLines()[0]["quotaReserved"], "the hold is the request's reservation")

		time.Sleep(h.cfg.Budget + quota.Grace + 10*time.Second)
		day := usageOf(t, h).User.Day
		assert.EqualValues(t, 0, day.Reserved, "lapsed")
		assert.Equal(t, held, day.Used, "charged the whole hold, not released")
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "100000", "QUOTA_TABLE": "neverupstream"}, aoaitest.Options{})
		t.Cleanup(h.sim.Close)
		w := h.do(chatRequest(ask("[[sim:status code=503 times=5]] hi")))
		require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		assert.Equal(t, "settled", h.logLines()[0]["quota"])
		assert.Equal(t, api.UsageWindow{Limit: 100_000, ResetsAt: usageOf(t, h).User.Day.ResetsAt}, *usageOf(t, h).User.Day, "released at once")
		time.Sleep(h.cfg.Budget + quota.Grace + 10*time.Second)
		assert.EqualValues(t, 0, usageOf(t, h).User.Day.Used, "nothing charged at the lapse")
	})
}

// batches counts the store's batches: a reservation writes one, its
// settlement one (on the ETags the reservation's got back, unread).
type batches struct {
	next policy.Transporter
	n    *atomic.Int32
}

func (b batches) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "$batch") {
		b.n.Add(1)
	}
	return b.next.Do(r)
}

// TestHoldIsSettledOnce: a request's quota hold is settled once, whichever
// way the request ends: a whole answer just before it is written (and not
// again when the request ends), a stream at its done event, a failure
// once the request ends.
func TestHoldIsSettledOnce(t *testing.T) {
	az := azuritetest.Start(t)
	for _, tt := range []struct {
		name, question string
		stream         bool
		status         int
	}{
		{"json", "hi", false, http.StatusOK},
		{"stream", "hi", true, http.StatusOK},
		{"failure", "[[sim:status code=503]] hi", false, http.StatusServiceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				id := "settle-once-" + tt.name
				h := newHarness(t, map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": "100000"}, aoaitest.Options{},
					withQuotaStore(func(next policy.Transporter) policy.Transporter { return batches{next, &n} }))
				t.Cleanup(h.sim.Close)
				r := chatRequest(ask(tt.question), "x-request-id", id)
				if tt.stream {
					r.Header.Set("Accept", "text/event-stream")
				}
				w := h.do(r)
				require.Equal(t, tt.status, w.Code, w.Body.String())
				assert.Equal(t, "settled", h.logLines()[0]["quota"])
				assert.EqualValues(t, 2, n.Load(), "one reservation, one settlement")
			})
		})
	}
}
