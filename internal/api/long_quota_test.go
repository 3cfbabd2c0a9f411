package api_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/cursor"
	"github.com/timebox-dev/timebox/internal/issuertest"
	"github.com/timebox-dev/timebox/internal/quota"
)

// Long answers draw on the same quotas, against a real Azurite, in virtual
// time: a generation reserves when it is created and is settled once, by
// whichever hop (on whichever instance) sees it end. Azurite is a real
// process, started outside the bubble; its calls take no virtual time.

func longQuotaHarness(t *testing.T, az *azuritetest.Server, userDaily int, env map[string]string) *harness {
	t.Helper()
	settings := map[string]string{"QUOTA_TABLE_ENDPOINT": az.Endpoint, "QUOTA_USER_DAILY_TOKENS": strconv.Itoa(userDaily)}
	for k, v := range env {
		settings[k] = v
	}
	return longHarness(t, settings)
}

// followHops continues a streamed long answer from ans on h until it
// ends: its last answer, the cursor that answer was asked with, and how
// many hops it took in all.
func followHops(t *testing.T, h *harness, ans streamed) (last streamed, cursor string, hops int) {
	t.Helper()
	hops = 1
	for ans.last().typ == "continue" {
		cursor = continueOf(t, ans.last())
		ans = h.send(context.Background(), "/api/chat/continue", cursorBody(cursor), true)
		require.Equal(t, http.StatusOK, ans.resp.StatusCode, ans.events)
		hops++
	}
	return ans, cursor, hops
}

// hopLines are the log lines of the hops, cancels included (not of the
// usage reads).
func hopLines(h *harness) []map[string]any {
	var out []map[string]any
	for _, l := range h.logLines() {
		if l["route"] != "/api/usage" {
			out = append(out, l)
		}
	}
	return out
}

func doneOf(t *testing.T, ans streamed) api.ChatResponse {
	t.Helper()
	require.Equal(t, "done", ans.last().typ, ans.last().data)
	var done api.ChatResponse
	require.NoError(t, json.Unmarshal([]byte(ans.last().data), &done))
	return done
}

// ledgerOf is the ledger row of the request id, as an admin reads it
// (the anonymous tenant's month of the bubble's clock, 2000-01).
func ledgerOf(t *testing.T, az *azuritetest.Server, table string, requestID any) map[string]any {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(quota.DevelopmentAccount, quota.DevelopmentKey)
	require.NoError(t, err)
	opts := &aztables.ClientOptions{}
	opts.Transport = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	svc, err := aztables.NewServiceClientWithSharedKey(az.Endpoint, cred, opts)
	require.NoError(t, err)
	id, _ := requestID.(string)
	resp, err := svc.NewClient(cmp.Or(table, "timeboxusage")).GetEntity(context.Background(), "anonymous_2000-01", "req_"+id, nil)
	require.NoError(t, err)
	var row map[string]any
	require.NoError(t, json.Unmarshal(resp.Value, &row))
	return row
}

// A generation of four hops or more is held from its create (its prompt
// and completion limit) through every hop, and charged once, by the hop
// that saw it end, with the usage Azure reported; the caller reading its
// usage as the answer arrives finds it counted. A retried last continue
// (the same cursor, the same end) charges nothing more.
func TestLongAnswerChargedOnceWithItsUsage(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		first := hopLines(h)[0]
		assert.Equal(t, "held", first["quota"], "the first hop keeps the hold for the later ones")
		day := usageOf(t, h).User.Day
		assert.EqualValues(t, 0, day.Used)
		assert.EqualValues(t, first["quotaReserved"], day.Reserved, "the prompt and the completion limit")

		last, c, hops := followHops(t, h, ans)
		done := doneOf(t, last)
		assert.GreaterOrEqual(t, hops, 4)
		day = usageOf(t, h).User.Day
		assert.EqualValues(t, done.Usage.TotalTokens, day.Used, "charged the generation's usage")
		assert.EqualValues(t, 0, day.Reserved, "the rest released")
		lines := hopLines(h)
		for _, l := range lines[1 : hops-1] {
			assert.Equal(t, "held", l["quota"])
		}
		assert.Equal(t, "settled", lines[hops-1]["quota"])

		again := h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		doneOf(t, again)
		assert.EqualValues(t, done.Usage.TotalTokens, usageOf(t, h).User.Day.Used, "a retried continue charges nothing more")

		row := ledgerOf(t, az, "", first["requestId"])
		assert.Equal(t, "settled", row["State"])
		assert.Equal(t, "completed", row["Outcome"])
		assert.Equal(t, h.responseID(), row["ResponseId"])
		assert.EqualValues(t, hops, row["Hop"], "the hop that saw the end")
		assert.EqualValues(t, done.Usage.PromptTokens, row["PromptTokens"])
		assert.EqualValues(t, done.Usage.CompletionTokens, row["CompletionTokens"])
		assert.Equal(t, strconv.Itoa(done.Usage.TotalTokens), row["Charged"])
		assert.Nil(t, row["UsageUnreported"])
	})
}

// Hops 2 on are answered by another instance that shares only the table:
// it finds the reservation in the response's metadata and settles it.
// The caller does not stream (202, then a continue that waits): the same
// rule.
func TestLongAnswerSettledByAnotherInstance(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		other := h.twin()
		ans := h.send(context.Background(), "/api/chat", ask(long600), false)
		var c string
		hops := 1
		for ans.resp.StatusCode == http.StatusAccepted {
			var p apiwire.InProgress
			require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &p))
			c = p.Cursor
			ans = other.send(context.Background(), "/api/chat/continue", cursorBody(c), false)
			hops++
		}
		require.Equal(t, http.StatusOK, ans.resp.StatusCode, ans.events[0].data)
		require.GreaterOrEqual(t, hops, 2)
		var done api.ChatResponse
		require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &done))
		lines := hopLines(h)
		assert.Equal(t, "held", lines[0]["quota"])
		assert.Equal(t, "settled", lines[hops-1]["quota"])
		day := usageOf(t, h).User.Day
		assert.EqualValues(t, done.Usage.TotalTokens, day.Used)
		assert.EqualValues(t, 0, day.Reserved)

		// The first instance sees the same end (a retried continue): once.
		again := h.send(context.Background(), "/api/chat/continue", cursorBody(c), false)
		assert.Equal(t, http.StatusOK, again.resp.StatusCode)
		assert.EqualValues(t, done.Usage.TotalTokens, usageOf(t, other).User.Day.Used)
	})
}

// A cancel between hops settles: Azure's cancelled response reports no
// usage, though what it generated is billed, so the whole hold is
// charged, and the ledger says so. A second cancel, or a continue, charges
// nothing more.
func TestLongAnswerCancelBetweenHopsSettles(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		c := continueOf(t, ans.last())
		held := usageOf(t, h).User.Day.Reserved
		require.Positive(t, held)

		got := h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		require.Equal(t, http.StatusNoContent, got.resp.StatusCode, got.events)
		day := usageOf(t, h).User.Day
		assert.Equal(t, held, day.Used, "the whole hold, the most it can have cost")
		assert.EqualValues(t, 0, day.Reserved)
		assert.Equal(t, "settled", hopLines(h)[1]["quota"])

		h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		assert.Equal(t, held, usageOf(t, h).User.Day.Used, "settled once")

		row := ledgerOf(t, az, "", hopLines(h)[0]["requestId"])
		assert.Equal(t, "cancelled", row["Outcome"])
		assert.Equal(t, true, row["UsageUnreported"])
		assert.EqualValues(t, 2, row["Hop"])
		assert.EqualValues(t, http.StatusNoContent, row["Status"])
		assert.Equal(t, strconv.FormatInt(held, 10), row["Charged"])
	})
}

// A caller that leaves during a later hop has the generation cancelled,
// and that hop settles it; so does the hop that reaches
// LONG_ANSWER_LIMIT.
func TestLongAnswerCallerGoneOrLimitSettles(t *testing.T) {
	az := azuritetest.Start(t)
	for _, tt := range []struct {
		name, outcome string
		status        int
		env           map[string]string
		leave         bool
	}{
		{"caller gone", "caller_gone", 499, nil, true},
		{"limit", "limit", http.StatusInternalServerError, map[string]string{"LONG_ANSWER_LIMIT": "300s", "QUOTA_TABLE": "limit"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := longQuotaHarness(t, az, 10_000, tt.env)
				ans := h.send(context.Background(), "/api/chat", ask(long600), true)
				held := usageOf(t, h).User.Day.Reserved
				ctx, leave := context.WithCancel(context.Background())
				defer leave()
				if tt.leave {
					time.AfterFunc(60*time.Second, leave)
				}
				h.send(ctx, "/api/chat/continue", cursorBody(continueOf(t, ans.last())), true)
				info, _ := h.sim.Generation(h.responseID())
				assert.Equal(t, "cancelled", info.Status)
				day := usageOf(t, h).User.Day
				assert.Equal(t, held, day.Used)
				assert.EqualValues(t, 0, day.Reserved)
				line := hopLines(h)[1]
				assert.Equal(t, "settled", line["quota"])
				row := ledgerOf(t, az, tt.env["QUOTA_TABLE"], hopLines(h)[0]["requestId"])
				assert.Equal(t, tt.outcome, row["Outcome"])
				assert.EqualValues(t, tt.status, row["Status"])
				assert.Equal(t, true, row["UsageUnreported"])
			})
		})
	}
}

// A generation no hop sees end (its instance crashed mid-hop, or its
// caller never came back) holds its tokens for as long as it may run,
// LONG_ANSWER_LIMIT and the grace, not a hop's budget; then its hold
// lapses by itself.
func TestLongAnswerHoldLapsesAfterItsLimit(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, map[string]string{"LONG_ANSWER_LIMIT": "1200s"})
		start := time.Now()
		h.send(context.Background(), "/api/chat", ask(long600), true)
		held := usageOf(t, h).User.Day.Reserved
		require.Positive(t, held)

		time.Sleep(h.cfg.Budget + quota.Grace + time.Minute - time.Since(start))
		assert.Equal(t, held, usageOf(t, h).User.Day.Reserved, "held past the hop's budget")
		time.Sleep(h.cfg.LongAnswerLimit - 20*time.Second - time.Since(start))
		assert.Equal(t, held, usageOf(t, h).User.Day.Reserved, "held while the generation may run")

		time.Sleep(h.cfg.LongAnswerLimit + quota.Grace + 10*time.Second - time.Since(start))
		day := usageOf(t, h).User.Day
		assert.EqualValues(t, 0, day.Reserved, "lapsed")
		assert.EqualValues(t, 0, day.Used)
	})
}

// Two long answers of one user on a small limit: the second, started
// while the first is held, is granted what is left (a lower completion
// limit, which its generation stops at), a third is refused, and the
// settled usage never exceeds the limit.
func TestLongAnswersNeverExceedTheLimit(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		const limit = 1_600
		h := longQuotaHarness(t, az, limit, nil)
		a := h.send(context.Background(), "/api/chat", ask(long600), true)
		b := h.send(context.Background(), "/api/chat", ask(long600), true)
		lines := hopLines(h)
		assert.EqualValues(t, limit, lines[0]["quotaReserved"].(float64)+lines[1]["quotaReserved"].(float64), "the second holds what is left")
		refused := h.send(context.Background(), "/api/chat", ask(long600), true)
		assert.Equal(t, http.StatusTooManyRequests, refused.resp.StatusCode)

		lastA, _, _ := followHops(t, h, a)
		lastB, _, _ := followHops(t, h, b)
		doneA, doneB := doneOf(t, lastA), doneOf(t, lastB)
		assert.Equal(t, "length", doneB.FinishReason, "the second stopped at its lower limit")
		day := usageOf(t, h).User.Day
		assert.EqualValues(t, doneA.Usage.TotalTokens+doneB.Usage.TotalTokens, day.Used)
		assert.LessOrEqual(t, day.Used, int64(limit))
		assert.EqualValues(t, 0, day.Reserved)
	})
}

// A cursor gives nothing of a hold to anyone but its owner: another user's
// cancel or continue of it is 404 and leaves the owner's hold as it was,
// and the owner's own edited cursor (its place moved back to the start)
// is charged what Azure reported at the end, no less.
func TestAnotherCallersCursorSettlesNothing(t *testing.T) {
	az := azuritetest.Start(t)
	const bob = "00000000-0000-4000-8000-00000000b0b0"
	as := func(oid string) []string {
		return []string{"X-MS-CLIENT-PRINCIPAL", principalOf(oid, authTenant)}
	}
	alice := as(issuertest.TestUserOID)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, map[string]string{
			"AUTH_MODE": "easyauth", "WEBSITE_SITE_NAME": "timebox", "WEBSITE_AUTH_ENABLED": "True", "AUTH_TENANTS": authTenant,
		})
		usage := func(who []string) api.UsageResponse {
			r := httptest.NewRequest(http.MethodGet, "/api/usage", nil)
			r.Header.Set(who[0], who[1])
			w := h.do(r)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			var u api.UsageResponse
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &u))
			return u
		}
		ans := h.send(context.Background(), "/api/chat", ask(long600), true, alice...)
		c := continueOf(t, ans.last())
		held := usage(alice).User.Day.Reserved
		require.Positive(t, held)

		for _, path := range []string{"/api/chat/cancel", "/api/chat/continue"} {
			got := h.send(context.Background(), path, cursorBody(c), true, as(bob)...)
			assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, path)
		}
		day := usage(alice).User.Day
		assert.Equal(t, held, day.Reserved, "the owner's hold is as it was")
		assert.EqualValues(t, 0, day.Used)
		assert.EqualValues(t, 0, usage(as(bob)).User.Day.Used)

		parsed, err := cursor.Parse(c)
		require.NoError(t, err)
		parsed.After, parsed.Offset = 0, 0
		ans = h.send(context.Background(), "/api/chat/continue", cursorBody(parsed.String()), true, alice...)
		for ans.last().typ == "continue" {
			ans = h.send(context.Background(), "/api/chat/continue", cursorBody(continueOf(t, ans.last())), true, alice...)
		}
		done := doneOf(t, ans)
		assert.EqualValues(t, done.Usage.TotalTokens, usage(alice).User.Day.Used, "charged what Azure reported")
	})
}

// The OpenAI surface answers a long-answer deployment with Chat
// Completions, in one request: its hold lapses after that request, as
// any question's, not after LONG_ANSWER_LIMIT.
func TestOpenAISurfaceHoldsForItsRequestOnly(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		r := httptest.NewRequest(http.MethodPost, "/openai/v1/chat/completions", strings.NewReader(`{"model":"o3","messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("Content-Type", "application/json")
		w := h.do(r)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		row := ledgerOf(t, az, "", hopLines(h)[0]["requestId"])
		reserved, err := time.Parse(time.RFC3339Nano, row["ReservedAt"].(string))
		require.NoError(t, err)
		expires, err := time.Parse(time.RFC3339Nano, row["ExpiresAt"].(string))
		require.NoError(t, err)
		assert.LessOrEqual(t, expires.Sub(reserved), h.cfg.Budget+quota.Grace, "the request's budget and the grace")
	})
}
