package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/timebox-dev/timebox/internal/longanswer"
	"github.com/timebox-dev/timebox/internal/quota"
)

// This file is what a long answer owes, decided in one place: its first
// hop reserves for the whole generation (reserveQuota, with the hold's
// expiry at LONG_ANSWER_LIMIT and charged if it lapses) and names its
// reservation in the response's metadata (quotaMetadata); a hop that
// hands out a cursor is charged what it received and keeps the rest held
// (chargeHop), and seals into the cursor what the hops delivered
// (sealNext); the hop that sees the generation end (completed, cancelled,
// its caller gone, its limit come, failed) settles what is not charged yet
// (settleHop). A hop's tokens are counted as its pieces come (noteHop).

// quotaRefKey is the metadata key of a long answer's response that names
// its reservation (quota.Reservation.Ref), so that whichever hop sees the
// generation end, on any instance, settles it. The response's metadata is
// written by the service at create and read back by the owner's check: a
// caller cannot edit it, as it could a cursor.
const quotaRefKey = "timebox_quota"

// quotaMetadata is what a long answer's response is created with for its
// quota: its reservation's ref; nil without one.
func quotaMetadata(ctx context.Context) map[string]string {
	if h := billOf(ctx).hold; h.open() {
		return map[string]string{quotaRefKey: h.res.Ref()}
	}
	return nil
}

// settleHop settles a long answer's reservation in the hop that saw its
// generation end (completed, cancelled, its caller gone, its limit come,
// failed), before the hop's answer is written: the first hop's own
// reservation, or a later hop's as the response's metadata names it. The
// charge is the generation's usage as Azure OpenAI reported it, or, when
// it reported none (a cancelled generation's is null, though what it
// generated is billed), an estimate of what was generated
// (quota.Billed.estimate); less what the hops were charged (chargeHop),
// and the rest released. A hop that hands out a cursor keeps the hold for
// chargeHop. Settling is idempotent: two hops that see the same end (a
// retried continue, another instance) charge it once. whole says the
// hop's text is the answer from its start (a caller that does not stream).
func (s *server) settleHop(ctx context.Context, res *longanswer.Result, status int, whole bool) {
	rec, b, who := recordFrom(ctx), billOf(ctx), callerOf(ctx)
	if s.Quota == nil || res == nil {
		return
	}
	if b.hold == nil && res.Metadata[quotaRefKey] != "" {
		r, err := quota.ParseRef(res.Metadata[quotaRefKey], who.OID, who.TID)
		if err != nil {
			rec.err = errors.Join(rec.err, err)
			return
		}
		b.hold, rec.quota = &hold{res: r, kept: true}, quotaReserved
	}
	h := b.hold
	switch {
	case h == nil || h.settled:
		return
	case res.Next != nil:
		h.kept, h.handedOn, rec.quota = true, true, quotaHeld
		return
	case res.End == "":
		// No end seen, and no cursor: a first hop that failed (settled
		// as any request, by openBill), or a later one the caller may
		// retry with the same cursor (the hold stays for it).
		return
	}
	s.settle(ctx, quota.Billed{
		Prompt: res.Usage.PromptTokens, Completion: res.Usage.CompletionTokens,
		Unreported: res.Usage.TotalTokens == 0, Seen: seenOf(b, res, whole),
		RanUnseen: res.Unwatched, Status: status, ResponseID: res.ResponseID, Hop: res.Hop, Outcome: res.End,
		Backend: res.Backend,
	})
}

// chargeHop charges a long answer's hop that handed out a cursor what it
// received from Azure OpenAI (the prompt too, on the first hop), keeping
// the rest of the hold, so that a caller who never comes back has paid for
// what it was given. It runs once the cursor has gone, so that the hop
// change does not wait for the store: the next hop's own charge comes a
// hop's budget later, and a next hop that sees the end at once settles
// what is not charged yet, after which this charge does nothing. A
// charge is made once per hop, on any instance (a retried continue
// charges nothing twice); one that fails leaves the hold for the end.
func (s *server) chargeHop(ctx context.Context, res *longanswer.Result, whole bool) {
	rec, b := recordFrom(ctx), billOf(ctx)
	if h := b.hold; h == nil || !h.handedOn { // settleHop saw res hand out a cursor
		return
	}
	start := time.Now()
	err := s.Quota.ChargeHop(ctx, b.hold.res, res.Hop, seenOf(b, res, whole))
	rec.since("quotaCharge", start)
	rec.err = errors.Join(rec.err, err)
}

// seenOf is what a long answer's hop received: the tokens it delivered,
// counted as they came, from where its sealed cursor says the hops before
// it stopped (never a number the caller sends).
func seenOf(b *bill, res *longanswer.Result, whole bool) quota.Seen {
	return quota.Seen{Tokens: b.hopTokens, Whole: whole, Before: res.Received}
}

// sealNext is the cursor a hop hands out, sealed: res.Next with what the
// hops delivered through this one (whole: this hop's text is the answer
// from its start), which the next hop's charge starts from.
func (s *server) sealNext(ctx context.Context, res *longanswer.Result, whole bool) string {
	next := *res.Next
	next.Received = int(seenOf(billOf(ctx), res, whole).Through())
	return s.Cursors.Seal(next)
}

// hopStatus is the status a hop that ended its generation answers with,
// for the ledger.
func hopStatus(res *longanswer.Result, err error) int {
	switch {
	case res != nil && res.End == longanswer.EndCallerGone:
		return statusClientGone
	case err != nil:
		return rowFor(longError(err, "")).status
	}
	return http.StatusOK
}
