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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/api"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/issuertest"
	"github.com/timebox-dev/timebox/internal/quota"
	"github.com/timebox-dev/timebox/internal/tokens"
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
// (the anonymous user's partition in the anonymous tenant's month of the
// bubble's clock, 2000-01).
func ledgerOf(t *testing.T, az *azuritetest.Server, table string, requestID any) map[string]any {
	t.Helper()
	id, _ := requestID.(string)
	resp, err := az.Table(t, cmp.Or(table, "timeboxusage")).GetEntity(context.Background(), "anonymous_2000-01_anonymous", "req_"+id, nil)
	require.NoError(t, err)
	var row map[string]any
	require.NoError(t, json.Unmarshal(resp.Value, &row))
	return row
}

// num is a number of a log line or a ledger row (JSON's float64, or an
// Int64 property's string).
func num(t *testing.T, v any) int64 {
	t.Helper()
	switch v := v.(type) {
	case float64:
		return int64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		return n
	}
	require.Failf(t, "not a number", "%v", v)
	return 0
}

// generated is the tokens the simulator's generation of the harness's
// first response has written so far.
func generated(t *testing.T, h *harness) int64 {
	t.Helper()
	info, ok := h.sim.Generation(h.responseID())
	require.True(t, ok)
	counter, err := tokens.New("o200k_base")
	require.NoError(t, err)
	return int64(counter.Text(info.Text))
}

// A generation of four hops or more is held from its create (its prompt
// and completion limit); each hop that hands out a cursor is charged what
// it received (the prompt with the first) and the rest stays held; the
// hop that sees the end charges what is left of the usage Azure reported,
// so the charges add up to it exactly, once; the caller reading its usage
// as the answer arrives finds it counted. A retried continue (the same
// cursor) charges only what it read past the hops before; at the end,
// nothing more.
func TestLongAnswerChargedOnceWithItsUsage(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		first := hopLines(h)[0]
		assert.Equal(t, "held", first["quota"], "the first hop keeps the rest of the hold for the later ones")
		prompt := num(t, ledgerOf(t, az, "", first["requestId"])["CountedPrompt"])
		charged := prompt + num(t, first["hopTokens"])
		day := usageOf(t, h).User.Day
		assert.Equal(t, charged, day.Used, "the prompt and what hop 1 received")
		assert.Equal(t, num(t, first["quotaReserved"])-charged, day.Reserved, "the rest held")

		// Hop 2, then the same cursor again: what both received is
		// charged once, and only what the second read past the first.
		c := continueOf(t, ans.last())
		h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		hop2 := num(t, hopLines(h)[1]["hopTokens"])
		assert.Equal(t, charged+hop2, usageOf(t, h).User.Day.Used, "hop 2's tokens")
		ans = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		retried := num(t, hopLines(h)[2]["hopTokens"])
		require.Greater(t, retried, hop2, "the generation ran on: the retry read further")
		charged += retried
		assert.Equal(t, charged, usageOf(t, h).User.Day.Used, "a retried continue charges what it read past hop 2, no more")

		last, c, hops := followHops(t, h, ans)
		hops++ // hop 1; the retried hop 2 began followHops' count
		done := doneOf(t, last)
		assert.GreaterOrEqual(t, hops, 3, "the retried hop 2 read further: the generation ran on")
		day = usageOf(t, h).User.Day
		assert.EqualValues(t, done.Usage.TotalTokens, day.Used, "charged the generation's usage, in all")
		assert.EqualValues(t, 0, day.Reserved, "the rest released")
		lines := hopLines(h) // hop 2 twice
		for _, l := range lines[1:hops] {
			assert.Equal(t, "held", l["quota"])
		}
		assert.Equal(t, "settled", lines[hops]["quota"])

		again := h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		doneOf(t, again)
		assert.EqualValues(t, done.Usage.TotalTokens, usageOf(t, h).User.Day.Used, "a retried last continue charges nothing more")

		row := ledgerOf(t, az, "", first["requestId"])
		assert.Equal(t, "settled", row["State"])
		assert.Equal(t, "completed", row["Outcome"])
		assert.Equal(t, h.responseID(), row["ResponseId"])
		assert.Equal(t, "default", row["Backend"], "the pool of one's backend, which held the response")
		assert.EqualValues(t, hops, row["Hop"], "the hop that saw the end")
		assert.EqualValues(t, hops-1, row["ChargedHop"], "the last hop that handed out a cursor")
		assert.EqualValues(t, done.Usage.PromptTokens, row["PromptTokens"])
		assert.EqualValues(t, done.Usage.CompletionTokens, row["CompletionTokens"])
		assert.Equal(t, strconv.Itoa(done.Usage.TotalTokens), row["Charged"])
		assert.Nil(t, row["UsageUnreported"])
	})
}

// Hops 2 on are answered by another instance that shares only the table:
// it finds the reservation in the response's metadata, charges its hops
// and settles it. The caller does not stream (202, then a continue that
// waits, each reading the answer whole so far): the same rule.
func TestLongAnswerSettledByAnotherInstance(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		other := h.twin()
		ans := h.send(context.Background(), "/api/chat", ask(long600), false)
		first := hopLines(h)[0]
		prompt := num(t, ledgerOf(t, az, "", first["requestId"])["CountedPrompt"])
		var c string
		hops := 1
		for ans.resp.StatusCode == http.StatusAccepted {
			var p apiwire.InProgress
			require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &p))
			assert.Equal(t, prompt+int64(p.Partial.CompletionTokens), usageOf(t, h).User.Day.Used,
				"each 202's hop charged the answer so far, counted once")
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
// usage, though what it generated is billed, so the charge is an estimate:
// the prompt, what the hops received, and what the generation wrote, at
// its pace, while no hop watched it; about what it generated, far from the
// whole hold. A second cancel, or a continue, charges nothing more.
func TestLongAnswerCancelBetweenHopsSettles(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600), true)
		c := continueOf(t, ans.last())
		before := usageOf(t, h).User.Day
		hold := before.Used + before.Reserved

		time.Sleep(60 * time.Second) // the generation runs on, unwatched
		got := h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		require.Equal(t, http.StatusNoContent, got.resp.StatusCode, got.events)
		first := hopLines(h)[0]
		prompt := num(t, ledgerOf(t, az, "", first["requestId"])["CountedPrompt"])
		wrote := prompt + generated(t, h)
		day := usageOf(t, h).User.Day
		assert.InDelta(t, wrote, day.Used, float64(wrote)/10, "about what was generated")
		assert.Greater(t, day.Used, before.Used, "more than hop 1 received: it ran on")
		assert.Less(t, day.Used, hold*9/10, "not the whole hold")
		assert.EqualValues(t, 0, day.Reserved)
		assert.Equal(t, "settled", hopLines(h)[1]["quota"])
		charged := day.Used

		h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
		h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
		assert.Equal(t, charged, usageOf(t, h).User.Day.Used, "settled once")

		row := ledgerOf(t, az, "", first["requestId"])
		assert.Equal(t, "cancelled", row["Outcome"])
		assert.Equal(t, true, row["UsageUnreported"])
		assert.EqualValues(t, 2, row["Hop"])
		assert.EqualValues(t, http.StatusNoContent, row["Status"])
		assert.Equal(t, strconv.FormatInt(charged, 10), row["Charged"])
	})
}

// A caller that leaves during a later hop has the generation cancelled,
// and that hop settles it; so does the hop that reaches
// LONG_ANSWER_LIMIT. Each watched the generation to its end: the charge
// is the prompt and what the hops received, about what was generated;
// a caller that does not stream receives the answer whole so far in each
// hop, which counts once.
func TestLongAnswerCallerGoneOrLimitSettles(t *testing.T) {
	az := azuritetest.Start(t)
	for _, tt := range []struct {
		name, outcome string
		status        int
		env           map[string]string
		leave, whole  bool
	}{
		{"caller gone", "caller_gone", 499, nil, true, false},
		{"limit", "limit", http.StatusInternalServerError, map[string]string{"LONG_ANSWER_LIMIT": "300s", "QUOTA_TABLE": "limit"}, false, false},
		{"limit not streamed", "limit", http.StatusInternalServerError, map[string]string{"LONG_ANSWER_LIMIT": "300s", "QUOTA_TABLE": "limitwhole"}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := longQuotaHarness(t, az, 10_000, tt.env)
				ans := h.send(context.Background(), "/api/chat", ask(long600), !tt.whole)
				var c string
				if tt.whole {
					require.Equal(t, http.StatusAccepted, ans.resp.StatusCode, ans.events)
					var p apiwire.InProgress
					require.NoError(t, json.Unmarshal([]byte(ans.events[0].data), &p))
					c = p.Cursor
				} else {
					c = continueOf(t, ans.last())
				}
				before := usageOf(t, h).User.Day
				ctx, leave := context.WithCancel(context.Background())
				defer leave()
				if tt.leave {
					time.AfterFunc(60*time.Second, leave)
				}
				h.send(ctx, "/api/chat/continue", cursorBody(c), !tt.whole)
				info, _ := h.sim.Generation(h.responseID())
				assert.Equal(t, "cancelled", info.Status)
				lines := hopLines(h)
				row := ledgerOf(t, az, tt.env["QUOTA_TABLE"], lines[0]["requestId"])
				received := num(t, lines[0]["hopTokens"]) + num(t, lines[1]["hopTokens"])
				if tt.whole {
					received = num(t, lines[1]["hopTokens"]) // hop 1's text too
				}
				charged := num(t, row["CountedPrompt"]) + received
				day := usageOf(t, h).User.Day
				assert.Equal(t, charged, day.Used, "the prompt and what the hops received")
				wrote := num(t, row["CountedPrompt"]) + generated(t, h)
				assert.InDelta(t, wrote, day.Used, float64(wrote)/20, "about what was generated")
				assert.Less(t, day.Used, before.Used+before.Reserved, "not the whole hold")
				assert.EqualValues(t, 0, day.Reserved)
				assert.Equal(t, "settled", lines[1]["quota"])
				assert.Equal(t, tt.outcome, row["Outcome"])
				assert.EqualValues(t, tt.status, row["Status"])
				assert.Equal(t, true, row["UsageUnreported"])
			})
		})
	}
}

// A generation no hop sees end (its instance crashed mid-hop, or its
// caller never came back) has paid for what its caller was given: hop 1
// charged the prompt and what it received. The rest of its hold is held
// for as long as the generation may run, LONG_ANSWER_LIMIT and the grace,
// not a hop's budget; then it is charged, not released: the generation
// ran on at Azure, which bills it to its end, at most the hold.
func TestLongAnswerHoldLapsesAfterItsLimit(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, map[string]string{"LONG_ANSWER_LIMIT": "1200s"})
		start := time.Now()
		h.send(context.Background(), "/api/chat", ask(long600), true)
		first := hopLines(h)[0]
		hopOne := num(t, ledgerOf(t, az, "", first["requestId"])["CountedPrompt"]) + num(t, first["hopTokens"])
		day := usageOf(t, h).User.Day
		assert.Equal(t, hopOne, day.Used, "the prompt and what hop 1 received")
		held := day.Reserved
		require.Positive(t, held)

		time.Sleep(h.cfg.Budget + quota.Grace + time.Minute - time.Since(start))
		assert.Equal(t, held, usageOf(t, h).User.Day.Reserved, "held past the hop's budget")
		time.Sleep(h.cfg.LongAnswerLimit - 20*time.Second - time.Since(start))
		assert.Equal(t, held, usageOf(t, h).User.Day.Reserved, "held while the generation may run")

		time.Sleep(h.cfg.LongAnswerLimit + quota.Grace + 10*time.Second - time.Since(start))
		day = usageOf(t, h).User.Day
		assert.EqualValues(t, 0, day.Reserved, "lapsed")
		assert.Equal(t, hopOne+held, day.Used, "the rest charged when it lapsed")
		assert.Equal(t, true, ledgerOf(t, az, "", first["requestId"])["ChargeOnLapse"])
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
		start := time.Now()
		a := h.send(context.Background(), "/api/chat", ask(long600), true)
		b := h.send(context.Background(), "/api/chat", ask(long600), true)
		lines := hopLines(h)
		assert.EqualValues(t, limit, lines[0]["quotaReserved"].(float64)+lines[1]["quotaReserved"].(float64), "the second holds what is left")
		refused := h.send(context.Background(), "/api/chat", ask(long600), true)
		assert.Equal(t, http.StatusTooManyRequests, refused.resp.StatusCode)
		// Refused because of the two holds, not a day used up: it says so,
		// and the wait is until the first one's end (at the long answers'
		// limit at the latest), not until midnight.
		var e apiwire.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(refused.events[0].data), &e))
		assert.Regexp(t, `^Your daily limit of 1,600 tokens is held by answers under way \([\d,]+ used, [\d,]+ held\)\. Try again when they end, in \d+ min at most\.$`, e.Error.Message)
		wait, err := strconv.Atoi(refused.resp.Header.Get("Retry-After"))
		require.NoError(t, err)
		lapse := start.Add(h.cfg.LongAnswerLimit + quota.Grace)
		assert.InDelta(t, time.Until(lapse).Seconds(), wait, 10, "until the first hold lapses")

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
		before := usage(alice).User.Day
		require.Positive(t, before.Reserved)

		for _, path := range []string{"/api/chat/cancel", "/api/chat/continue"} {
			got := h.send(context.Background(), path, cursorBody(c), true, as(bob)...)
			assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, path)
		}
		day := usage(alice).User.Day
		assert.Equal(t, before.Reserved, day.Reserved, "the owner's hold is as it was")
		assert.Equal(t, before.Used, day.Used)
		assert.EqualValues(t, 0, usage(as(bob)).User.Day.Used)

		ans = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true, alice...)
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

// A first hop whose stream breaks after its response was created leaves
// its caller no cursor to go on with: the generation is cancelled upstream
// (none runs for nobody) and charged as a failed long answer, the prompt
// and what the hop received; the rest of its hold is released.
func TestLongAnswerFirstHopBrokenIsCancelledAndCharged(t *testing.T) {
	az := azuritetest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		h := longQuotaHarness(t, az, 10_000, nil)
		ans := h.send(context.Background(), "/api/chat", ask(long600+" [[sim:reset tokens=20]]"), true)
		assert.Equal(t, "error", ans.last().typ, ans.last().data)
		info, _ := h.sim.Generation(h.responseID())
		assert.Equal(t, "cancelled", info.Status, "no generation runs for nobody")
		line := hopLines(h)[0]
		assert.Equal(t, true, line["cancelledUpstream"])
		assert.Equal(t, "settled", line["quota"])
		row := ledgerOf(t, az, "", line["requestId"])
		day := usageOf(t, h).User.Day
		assert.Equal(t, num(t, row["CountedPrompt"])+num(t, line["hopTokens"]), day.Used, "the prompt and what the hop received")
		assert.EqualValues(t, 0, day.Reserved)
		assert.Equal(t, "failed", row["Outcome"])
		assert.Equal(t, true, row["UsageUnreported"])
	})
}

// A caller cannot lower its charge by editing its cursor: every edit (the
// hop set back, what it received set back, where it goes on) is 404, so a
// long answer read through edited cursors, then cancelled (charged the
// estimate that reads the hops' numbers), is charged exactly what the same
// answer read honestly is. Replaying an older cursor, which opens, reads
// from an earlier place and charges what it reads past the hops before
// (TestLongAnswerChargedOnceWithItsUsage).
func TestEditedCursorsCannotLowerTheCharge(t *testing.T) {
	az := azuritetest.Start(t)
	edits := []func(f []string){
		func(f []string) { f[3] = "2" },                // the hop set back
		func(f []string) { f[5] = "0" },                // nothing received before
		func(f []string) { f[3], f[5] = "2", "0" },     // both
		func(f []string) { f[2], f[4] = "0", "0" },     // from the start again
		func(f []string) { f[5] = f[5] + "0" },         // more received, for luck
		func(f []string) { f[1] = f[1][:len(f[1])-1] }, // another response
	}
	run := func(table string, edit bool) (used int64, hops []map[string]any) {
		synctest.Test(t, func(t *testing.T) {
			h := longQuotaHarness(t, az, 100_000, map[string]string{"QUOTA_TABLE": table})
			try := func(path, c string) {
				if !edit {
					return
				}
				for _, e := range edits {
					edited := editFields(t, c, e)
					if edited == c {
						continue // the first cursor's hop is 2 already
					}
					got := h.send(context.Background(), path, cursorBody(edited), true)
					assert.Equal(t, http.StatusNotFound, got.resp.StatusCode, "%s: an edited cursor", path)
				}
			}
			ans := h.send(context.Background(), "/api/chat", ask(long600), true)
			for range 2 {
				c := continueOf(t, ans.last())
				try("/api/chat/continue", c)
				ans = h.send(context.Background(), "/api/chat/continue", cursorBody(c), true)
			}
			c := continueOf(t, ans.last())
			try("/api/chat/continue", c)
			try("/api/chat/cancel", c)
			got := h.send(context.Background(), "/api/chat/cancel", cursorBody(c), false)
			require.Equal(t, http.StatusNoContent, got.resp.StatusCode)
			used = usageOf(t, h).User.Day.Used
			hops = hopLines(h)
		})
		return used, hops
	}
	honest, honestHops := run("honest", false)
	edited, editedHops := run("edited", true)
	require.Positive(t, honest)
	assert.Equal(t, honest, edited, "read through edited cursors, charged as the honest answer")
	assert.Greater(t, len(editedHops), len(honestHops)+3*len(edits), "each edit answered, and logged, as a hop refused")
}
