package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/quota"
)

// Quota is the callers' token quotas across every instance, satisfied by
// *quota.Store: a request reserves what it can at most cost before its
// upstream call and settles to what was billed after it. Its errors are
// package quota's (*quota.ExceededError, *quota.UnavailableError).
type Quota interface {
	Reserve(ctx context.Context, req quota.Request) (*quota.Reservation, error)
	Settle(ctx context.Context, res *quota.Reservation, b quota.Billed) error
	ChargeHop(ctx context.Context, res *quota.Reservation, hop int, seen quota.Seen) error
	Usage(ctx context.Context, oid, tid string) (quota.Usage, error)
}

// What the log line's quota field says of a request. It is written as the
// request's hold changes, never read to decide.
const (
	quotaReserved    = "reserved"    // held; not settled (yet)
	quotaHeld        = "held"        // a long answer's hold, kept for the hop that sees its generation end
	quotaSettled     = "settled"     // charged what was billed, the rest released
	quotaUnsettled   = "unsettled"   // the settlement failed: the hold lapses at its expiry
	quotaSkipped     = "skipped"     // the store was unreachable and QUOTA_FAIL_OPEN served it unaccounted
	quotaExceeded    = "exceeded"    // refused: 429 quota_exceeded
	quotaUnavailable = "unavailable" // refused: 503 quota_unavailable
)

// reserveQuota holds, against the caller's quotas, what call can at most
// cost: its prompt and its completion limit. A completion limit lowered to
// what is left of a quota is the one sent upstream. With no quotas it does
// nothing; with the store unreachable and failOpen it serves the request
// unaccounted and says so on the log line.
func (s *server) reserveQuota(ctx context.Context, call *chatCall) error {
	if s.Quota == nil {
		return nil
	}
	rec, who := recordFrom(ctx), callerOf(ctx)
	prompt := call.fit.PromptTokens
	if prompt == 0 {
		// Fitting did not count a small prompt; the reservation needs it.
		prompt = s.Tokens.Prompt(call.fit.Messages)
	}
	deadline, _ := ctx.Deadline()
	if call.long {
		// A long answer's generation runs on after this request, until
		// it ends or its limit: its hold lasts as long.
		deadline = time.Now().Add(s.LongAnswers.Limit)
	}
	// Every hold is charged, not released, when it lapses unsettled: it is
	// taken just before the upstream call, so one left unsettled is, but
	// for a few milliseconds, a request Azure OpenAI processed and bills
	// (its instance killed, the store down until the lapse). A request
	// that fails before reaching Azure is settled by this instance to
	// nothing (settleQuota), which releases its hold explicitly.
	req := quota.Request{
		ID: requestID(ctx), OID: who.OID, TID: who.TID, Deployment: s.Deployment,
		Prompt: prompt, MaxCompletion: call.req.MaxTokens, Deadline: deadline, ChargeOnLapse: true,
	}
	res, err := s.Quota.Reserve(ctx, req)
	if errors.Is(err, quota.ErrDuplicate) {
		// A caller's x-request-id names one request to the caller, not
		// one ledger row: a retry may send it again.
		req.ID += "." + newID()[:8]
		res, err = s.Quota.Reserve(ctx, req)
	}
	var (
		exceeded    *quota.ExceededError
		unavailable *quota.UnavailableError
	)
	switch {
	case err == nil:
		billOf(ctx).hold, rec.quota = &hold{res: res}, quotaReserved
		call.req.MaxTokens = res.Completion
		return nil
	case errors.As(err, &exceeded):
		rec.quota = quotaExceeded
	case errors.As(err, &unavailable) && s.QuotaFailOpen:
		rec.quota, rec.err = quotaSkipped, err
		return nil
	case errors.As(err, &unavailable):
		rec.quota = quotaUnavailable
	}
	return err
}

// hold is a request's hold on its caller's quota (quota.Reservation),
// owned by the request (its bill) from its reservation to its settlement,
// which happens once, whichever way the request ends.
type hold struct {
	res *quota.Reservation
	// kept: the hold outlives this request, for the hop of a long answer
	// that sees its generation end: a later hop's (the response's
	// metadata names it), or one whose hop handed out a cursor.
	kept bool
	// handedOn: this hop handed out a cursor; chargeHop charges what it
	// received, and the rest stays held.
	handedOn bool
	// settled: its settlement ran (a failed one leaves it to lapse).
	settled bool
}

// open reports whether h is a hold that this request settles when it
// ends.
func (h *hold) open() bool { return h != nil && !h.kept && !h.settled }

// settleAnswered settles a whole answer just before it is written: a page
// that reads GET /api/usage when the answer arrives then finds it counted
// (the store's read-your-writes), for the time of one settlement.
func (s *server) settleAnswered(ctx context.Context) {
	if b := billOf(ctx); b.hold.open() {
		s.settle(ctx, b.charged(http.StatusOK))
	}
}

// settle charges the request's hold what it was billed, once, and says so
// on the log line.
func (s *server) settle(ctx context.Context, billed quota.Billed) {
	h, rec := billOf(ctx).hold, recordFrom(ctx)
	if h == nil || h.settled {
		return
	}
	h.settled = true
	start := time.Now()
	err := s.Quota.Settle(ctx, h.res, billed)
	rec.since("quotaSettle", start)
	if err != nil {
		rec.quota, rec.err = quotaUnsettled, errors.Join(rec.err, err)
		return
	}
	rec.quota = quotaSettled
}

// UsageResponse is the 200 answer of GET /api/usage (apiwire.Usage).
type UsageResponse = apiwire.Usage

// UsageWindow is one window of a quota, in tokens (apiwire.UsageWindow).
type UsageWindow = apiwire.UsageWindow

// handleUsage is GET /api/usage: the calling user's day and the tenant's
// month as the store has them now (no windows without quotas). A store
// that cannot be read is 503 quota_unavailable, with QUOTA_FAIL_OPEN too:
// fail-open serves questions, but there is no true number to show, and
// zeros or no windows would say something false (nothing used, no limit).
func (s *server) handleUsage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out UsageResponse
		if s.Quota != nil {
			rec, who := recordFrom(r.Context()), callerOf(r.Context())
			u, err := s.Quota.Usage(r.Context(), who.OID, who.TID)
			if unavailable := (*quota.UnavailableError)(nil); errors.As(err, &unavailable) {
				rec.quota = quotaUnavailable
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
			out.User.Day, out.Tenant.Month = usageWindow(u.UserDay), usageWindow(u.TenantMonth)
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func usageWindow(w *quota.Window) *UsageWindow {
	if w == nil {
		return nil
	}
	return &UsageWindow{Used: w.Used, Reserved: w.Reserved, Limit: w.Limit, ResetsAt: w.ResetsAt.UTC()}
}
