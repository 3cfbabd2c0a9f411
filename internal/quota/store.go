package quota

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"golang.org/x/sync/errgroup"
)

// Ledger states.
const (
	stateReserved = "reserved"
	stateSettled  = "settled"
)

func (s *Store) reserve(ctx context.Context, req Request) (res *Reservation, err error) {
	now := s.now()
	res = &Reservation{
		ID:        req.ID,
		Expires:   req.Deadline.Add(Grace),
		at:        now,
		oid:       req.OID,
		partition: userPartition(req.TID, req.OID, now),
		ledger:    ledgerRow(req.ID),
		tag:       newTag(),
	}
	res.hold = holdName(res.Expires, req.ChargeOnLapse)
	counters := s.counters(req.OID, now)
	for _, c := range counters {
		res.counters = append(res.counters, c.row)
	}
	if s.tenantMon > 0 {
		res.tenant = tenantPartition(req.TID, now)
	}
	release, err := s.turns.take(ctx, res.partition)
	if err != nil {
		return nil, err
	}
	defer release()
	// month is what the reservation took from the tenant month's lease:
	// given back unless the reservation is written.
	var month int64
	tenant, hold := res.tenant, res.hold
	defer func() {
		if err != nil && month > 0 {
			s.giveMonth(tenant, hold, month, month, now)
		}
	}()
	prompt, least := int64(req.Prompt), int64(min(s.minAnswer, req.MaxCompletion))
	// lookup is set once a batch may have gone in without its answer
	// coming back (or its ledger row is there already): the ledger row is
	// read with the counters, and tells.
	lookup := false
	for attempt := 0; ; attempt++ {
		var l ledger
		if len(counters) > 0 || lookup {
			var lr *ledgerRead
			if lookup {
				lr = &ledgerRead{row: res.ledger, into: &l}
			}
			if now, err = s.read(ctx, res.partition, counters, lr); err != nil {
				return nil, err
			}
		}
		if l.found {
			if l.tag != res.tag {
				return nil, ErrDuplicate
			}
			// An earlier attempt of this reservation went in.
			res.leased = month
			return res, nil
		}
		completion, err := s.fit(counters, req, now)
		if err != nil {
			return nil, err
		}
		if res.tenant != "" {
			switch want := prompt + int64(completion); {
			case month == 0:
				c, err := s.takeMonth(ctx, res.tenant, res.hold, prompt, int64(completion), least, now)
				if err != nil {
					return nil, err
				}
				completion, month = int(c), prompt+c
			case want < month:
				s.giveMonth(res.tenant, res.hold, month-want, month-want, now)
				month = want
			default:
				completion = int(month - prompt)
			}
		}
		res.Completion, res.Tokens = completion, prompt+int64(completion)
		var actions []aztables.TransactionAction
		for _, c := range counters {
			if c.holds == nil {
				c.holds = map[string]int64{}
			}
			c.holds[res.hold] += res.Tokens
			actions = append(actions, c.action(res.partition, now))
		}
		row := map[string]any{
			"RequestId":     req.ID,
			"Oid":           req.OID,
			"Tid":           req.TID,
			"Deployment":    req.Deployment,
			"State":         stateReserved,
			"Day":           dayOf(now).Format("2006-01-02"),
			"CountedPrompt": int32(req.Prompt),
			"MaxCompletion": int32(completion),
			"Reserved":      aztables.EDMInt64(res.Tokens),
			"ReservedAt":    aztables.EDMDateTime(now.UTC()),
			"ExpiresAt":     aztables.EDMDateTime(res.Expires.UTC()),
			"Tag":           res.tag,
		}
		if req.ChargeOnLapse {
			row["ChargeOnLapse"] = true
		}
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: marshal(res.partition, res.ledger, row)})
		etags, err := s.submit(ctx, actions)
		var c *conflict
		switch {
		case err == nil:
			l = ledger{found: true, state: stateReserved, oid: req.OID, prompt: prompt, reservedAt: now, tag: res.tag}
			res.remember(counters, l, etags)
			res.leased = month
			return res, nil
		case errors.As(err, &c) && c.index == len(actions)-1:
			// The ledger row is there: this reservation's, written by an
			// attempt whose answer was lost, or another request's.
			lookup = true
		case errors.As(err, &c):
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		default:
			if err := s.retryAfter(ctx, err, attempt); err != nil {
				return nil, err
			}
			lookup = true
		}
	}
}

// fit decides the completion limit a reservation for req gets against
// counters at now: the request's own when the whole fits every window; a
// lower one when the prompt and a useful answer (MinAnswer, or the
// request's limit when lower) still fit; else the refusal of the window
// that resets last among those it does not fit.
func (s *Store) fit(counters []*counter, req Request, now time.Time) (int, error) {
	if len(counters) == 0 {
		return req.MaxCompletion, nil
	}
	room := counters[0].free(now)
	for _, c := range counters[1:] {
		room = min(room, c.free(now))
	}
	if room >= int64(req.Prompt)+int64(req.MaxCompletion) {
		return req.MaxCompletion, nil
	}
	least := int64(min(s.minAnswer, req.MaxCompletion))
	if room-int64(req.Prompt) >= least {
		return int(room - int64(req.Prompt)), nil
	}
	var refusal *ExceededError
	for _, c := range counters {
		need := int64(req.Prompt) + least
		if c.free(now) >= need {
			continue
		}
		e := &ExceededError{Limit: c.limit, Size: c.size, Used: c.used, Held: c.held(now), ResetsAt: c.reset, FreesAt: c.freesAt(need, now), Now: now}
		if refusal == nil || e.RetryAfter() > refusal.RetryAfter() {
			refusal = e
		}
	}
	return 0, refusal
}

// ledger is a request's ledger row as read.
type ledger struct {
	found bool
	etag  azcore.ETag
	state string
	oid   string
	// prompt is the counted prompt; charged what the windows were
	// charged so far.
	prompt, charged int64
	// A long answer's hops that handed out a cursor: the last one charged
	// (hop), the completion tokens the hops received through it
	// (received), and when it was charged (receivedAt), since the
	// reservation (reservedAt): the generation's observed pace.
	hop                    int
	received               int64
	reservedAt, receivedAt time.Time
	// tag is the reservation's own mark, which tells its row from
	// another request's of the same id; mark is its last write's.
	tag, mark string
}

// read takes in what a write of row set.
func (l *ledger) read(row map[string]any) {
	if v, ok := row["State"].(string); ok {
		l.state = v
	}
	if v, ok := row["ChargedHop"].(int32); ok {
		l.hop = int(v)
	}
	if v, ok := row["Received"]; ok {
		l.received = integer(v)
	}
	if v, ok := row["ReceivedAt"]; ok {
		l.receivedAt = instant(v)
	}
}

// update is one write of a reservation, given its ledger row as read at
// now: what the reservation is charged in all (capped at what it held),
// what the ledger row gains (nil: there is nothing to write), and whether
// the rest of the hold is released.
type update func(l *ledger, now time.Time) (total int64, row map[string]any, release bool)

func (s *Store) settle(ctx context.Context, res *Reservation, b Billed) error {
	return s.apply(ctx, res, func(l *ledger, now time.Time) (int64, map[string]any, bool) {
		return b.charge(l, now), settledRow(b, l, now), true
	})
}

func (s *Store) chargeHop(ctx context.Context, res *Reservation, hop int, seen Seen) error {
	return s.apply(ctx, res, func(l *ledger, now time.Time) (int64, map[string]any, bool) {
		received := seen.through(l.received)
		if (l.hop > 0 && received <= l.received) || l.prompt+received < l.charged {
			// Nothing received past what was charged already (a retried
			// or replayed continue, on this instance or another, or a
			// hop that received nothing, which leaves the pace as it
			// was), or the whole hold was charged, when it lapsed.
			return 0, nil, false
		}
		row := map[string]any{
			"ChargedHop": int32(max(l.hop, hop)),
			"Received":   aztables.EDMInt64(received),
			"ReceivedAt": aztables.EDMDateTime(now.UTC()),
		}
		return l.prompt + received, row, false
	})
}

// apply reads res's counters and ledger row and writes them as u says, in
// one batch conditional on their ETags, read again and tried again when
// another writer came first. Nothing is written for a reservation settled
// already.
func (s *Store) apply(ctx context.Context, res *Reservation, u update) error {
	release, err := s.turns.take(ctx, res.partition)
	if err != nil {
		return err
	}
	defer release()
	// mark tells this write's ledger row from another's, when its answer
	// was lost and the row is read again.
	mark := newTag()
	for attempt := 0; ; attempt++ {
		var now time.Time
		counters, l, written := res.recall()
		if !written {
			// The rows as the reservation's last write left them are not
			// known, or another writer has written since: read them.
			for i, row := range res.counters {
				// The size and window of the row are the store's; only
				// the row's values are read.
				counters[i] = &counter{row: row, size: s.userDay}
			}
			if now, err = s.read(ctx, res.partition, counters, &ledgerRead{row: res.ledger, into: &l}); err != nil {
				return err
			}
		} else {
			now = s.now()
			for _, c := range counters {
				c.lapse(now)
			}
		}
		switch {
		case !l.found || l.oid != res.oid:
			// Not there, or another user's: nothing of it is settled.
			return errUnknownReservation
		case l.state == stateSettled && l.mark == mark:
			// This settlement went in, its answer lost.
			s.settledMonth(res, l.charged, now)
			return nil
		case l.state == stateSettled:
			if res.tenant != "" && res.leased > 0 {
				// Settled on another instance: its hold here ends.
				s.giveMonth(res.tenant, res.hold, 0, res.leased, now)
				res.leased = 0
			}
			return nil
		}
		live := holdLive(res.hold, now)
		if !live && chargedOnLapse(res.hold) {
			// Its hold was charged whole when it lapsed.
			l.charged = res.Tokens
		}
		total, row, releaseAll := u(&l, now)
		if row == nil {
			return nil
		}
		// delta is what this write charges: less than nothing when the
		// end's usage is below what was charged already (a refund).
		delta := min(total, res.Tokens) - l.charged
		charged := delta
		var actions []aztables.TransactionAction
		for _, c := range counters {
			var own int64
			if live {
				own = max(0, min(res.Tokens-l.charged, c.holds[res.hold]))
			}
			counted := max(delta, -c.used)
			if delta > 0 {
				// A charge after its hold lapsed finds the window
				// possibly taken by others meanwhile: it charges no
				// more than is left, so the window never goes past
				// its limit.
				room := max(0, c.size-(c.used+c.held(now)-own))
				counted = min(delta, room)
				charged = min(charged, counted)
			}
			c.used += counted
			switch {
			case own == 0:
			case releaseAll:
				c.holds[res.hold] -= own
			default:
				c.holds[res.hold] -= min(own, max(0, counted))
			}
			actions = append(actions, c.action(res.partition, now))
		}
		row["Charged"] = aztables.EDMInt64(l.charged + charged)
		row["Mark"] = mark
		etag := l.etag
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateMerge, IfMatch: &etag, Entity: marshal(res.partition, res.ledger, row)})
		etags, err := s.submit(ctx, actions)
		var c *conflict
		switch {
		case err == nil:
			l.charged += charged
			l.read(row)
			res.remember(counters, l, etags)
			if releaseAll {
				s.settledMonth(res, l.charged, now)
			}
			return nil
		case errors.As(err, &c):
			if err := backoff(ctx, attempt); err != nil {
				return err
			}
		default:
			// Whether it went in is not known: the ledger row, read
			// again, says (a settled row is not settled twice, a hop
			// charged is not charged twice).
			if err := s.retryAfter(ctx, err, attempt); err != nil {
				return err
			}
		}
	}
}

// settledMonth gives back to the tenant month what res held and its
// settlement did not charge: the month counted the whole hold from its
// reservation.
func (s *Store) settledMonth(res *Reservation, charged int64, now time.Time) {
	if res.tenant == "" {
		return
	}
	s.giveMonth(res.tenant, res.hold, res.Tokens-charged, res.leased, now)
	res.leased = 0
}

// settledRow is what a settlement writes to the ledger row (l as read at
// now): what was billed, by which backend, and, for a long answer, which response, the hop
// that settled it and how it ended, and for an estimate the tokens the
// hops received.
func settledRow(b Billed, l *ledger, now time.Time) map[string]any {
	row := map[string]any{
		"State":            stateSettled,
		"PromptTokens":     int32(b.Prompt),
		"CompletionTokens": int32(b.Completion),
		"AbandonedTokens":  int32(b.Abandoned),
		"Status":           int32(b.Status),
		"SettledAt":        aztables.EDMDateTime(now.UTC()),
	}
	if b.Unreported {
		row["UsageUnreported"] = true
		row["Received"] = aztables.EDMInt64(b.Seen.through(l.received))
	}
	if b.ResponseID != "" {
		row["ResponseId"], row["Hop"], row["Outcome"] = b.ResponseID, int32(b.Hop), b.Outcome
	}
	if b.Backend != "" {
		row["Backend"] = b.Backend
	}
	return row
}

func (s *Store) usage(ctx context.Context, oid, tid string) (Usage, error) {
	now := s.now()
	var u Usage
	g, gctx := errgroup.WithContext(ctx)
	if s.userDay > 0 {
		g.Go(func() error {
			counters := s.counters(oid, now)
			at, err := s.read(gctx, userPartition(tid, oid, now), counters, nil)
			if err != nil {
				return err
			}
			c := counters[0]
			u.UserDay = &Window{Used: c.used, Reserved: c.held(at), Limit: c.size, ResetsAt: c.reset}
			return nil
		})
	}
	if s.tenantMon > 0 {
		g.Go(func() error {
			used, held, err := s.monthUsage(gctx, tenantPartition(tid, now))
			if s.local && isCode(err, aztables.TableNotFound) {
				err = nil // no table yet: nothing counted
			}
			u.TenantMonth = &Window{Used: used, Reserved: held, Limit: s.tenantMon, ResetsAt: resetOf(TenantMonth, now)}
			return err
		})
	}
	return u, g.Wait()
}

// ledgerRead asks read for a ledger row too.
type ledgerRead struct {
	row  string
	into *ledger
}

// read fills counters (and l) from their rows, all at once: one round trip
// of time, and returns the time they are read at, the time of the
// decisions made on them; the counters' lapsed holds charged on lapse are
// charged as of then (counter.lapse). A row not there is a window nothing
// was counted in yet. A missing table is created first on a loopback store
// (Azurite; in Azure the deployment template creates it).
func (s *Store) read(ctx context.Context, partition string, counters []*counter, l *ledgerRead) (time.Time, error) {
	err := s.readOnce(ctx, partition, counters, l)
	if s.local && isCode(err, aztables.TableNotFound) {
		if err := s.createTable(ctx); err != nil {
			return time.Time{}, err
		}
		err = s.readOnce(ctx, partition, counters, l)
	}
	if err != nil {
		return time.Time{}, err
	}
	now := s.now()
	for _, c := range counters {
		c.lapse(now)
	}
	return now, nil
}

func (s *Store) readOnce(ctx context.Context, partition string, counters []*counter, l *ledgerRead) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range counters {
		g.Go(func() error {
			e, etag, found, err := s.get(gctx, partition, c.row)
			if err != nil || !found {
				c.found, c.etag, c.used, c.holds = false, "", 0, map[string]int64{}
				return err
			}
			c.found, c.etag, c.used, c.holds = true, etag, 0, map[string]int64{}
			for name, v := range e.Properties {
				switch {
				case name == "Used":
					c.used = integer(v)
				case isHold(name):
					c.holds[name] = integer(v)
				}
			}
			return nil
		})
	}
	if l != nil {
		g.Go(func() error {
			e, etag, found, err := s.get(gctx, partition, l.row)
			*l.into = ledger{found: found, etag: etag}
			if found {
				p := e.Properties
				l.into.state, _ = p["State"].(string)
				l.into.tag, _ = p["Tag"].(string)
				l.into.mark, _ = p["Mark"].(string)
				l.into.oid, _ = p["Oid"].(string)
				l.into.prompt, l.into.charged = integer(p["CountedPrompt"]), integer(p["Charged"])
				l.into.hop, l.into.received = int(integer(p["ChargedHop"])), integer(p["Received"])
				l.into.reservedAt, l.into.receivedAt = instant(p["ReservedAt"]), instant(p["ReceivedAt"])
			}
			return err
		})
	}
	return g.Wait()
}
