package quota

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// The tenant's month, counted off the request's path. A tenant is a whole
// organisation: were each question to read and write the tenant's one
// month row, the instances would queue on its ETag (one tenant topped out
// near 20 questions a second, whatever the number of instances). Instead,
// each instance leases a block of the month's room in one conditional
// write of the month row and takes its reservations' holds from the block
// in memory. The month row holds Used and one property per live lease,
// named after its expiry and its instance (L<unix time>_<instance>).
//
// A hold counts in the month from its reservation, whole: the lease's
// tokens are in the row before the reservation is granted, so the month's
// settled tokens never pass its limit. A settlement gives back what it
// held and did not charge; the instance adds what its reservations took
// less what was given back to Used at its next write (a fold), which
// renews its lease, sized by its recent pace, or releases it when it was
// idle since the last. A lease that lapses (its instance died, or could
// not reach the store for a lease's life) is charged whole by the next
// writer: its instance may have spent all of it.

const (
	// leaseLife is how long a lease lasts unless its instance writes it
	// again.
	leaseLife = 20 * time.Second
	// leaseTick is how often an instance with a lease folds it in: a
	// lease is renewed or released at most this long after its last use.
	leaseTick = 2 * time.Second
	// leaseShare bounds a lease to this share of the month's room left:
	// near the limit the leases shrink, and the room the other instances'
	// leases keep idle with them.
	leaseShare = 16
	// leasePrefix starts a lease's property in the month row.
	leasePrefix = "L"
)

// leases are an instance's leases of its tenants' months, by partition.
type leases struct {
	mu sync.Mutex
	m  map[string]*lease
}

// lease is an instance's lease of one tenant's month.
type lease struct {
	partition string
	reset     time.Time

	// mu is held for a take, a give-back and a write alike: a write is
	// two store calls, a few ms, once a lease.
	mu sync.Mutex
	// granted is the lease's tokens in the month row, until expires.
	granted int64
	expires time.Time
	// taken is what reservations took from the lease since its write,
	// given what settlements gave back: what the next write adds to Used.
	taken, given int64
	// holds are this instance's reservations' holds taken from its
	// leases and not settled here, by their hold's property name (they
	// stop counting when they lapse): the usage it reports tells them
	// from settled tokens.
	holds map[string]int64
	// written is when the lease was last written, the start of the pace
	// that sizes the next.
	written time.Time
	// seen is the month row as the last write read it, for a refusal;
	// full is until when a reservation that did not fit the room seen
	// then is refused with no write (a tick, or a give-back here).
	seen     monthSeen
	full     time.Time
	ticking  bool
	failures int
	// seq numbers the lease's writes; pending is a write whose answer
	// was lost: the next write finds it in the row, or not.
	seq     int
	pending *leaseWrite
}

// leaseWrite is a write of a lease: its property's name, and what it
// folded in.
type leaseWrite struct {
	name         string
	taken, given int64
}

// monthSeen is the month row as read: its settled tokens, what the other
// instances' live leases hold, and when the last of them lapses.
type monthSeen struct {
	used, others, free int64
	lastLapse          time.Time
}

func (ls *leases) get(partition string, reset time.Time) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[string]*lease{}
	}
	l := ls.m[partition]
	if l == nil {
		l = &lease{partition: partition, reset: reset}
		ls.m[partition] = l
	}
	return l
}

// room is what is left of the lease at now: none once it is within a
// tick of its expiry, which a write would be late for.
func (l *lease) room(now time.Time) int64 {
	if !now.Before(l.expires.Add(-leaseTick)) {
		return 0
	}
	return l.granted - l.taken + l.given
}

// takeMonth holds prompt plus completion in the tenant month of
// partition, from this instance's lease, writing the lease first when it
// has not room enough; completion is lowered to what is left when the
// whole does not fit but the prompt and least do. It returns the
// completion granted, or the month's refusal.
func (s *Store) takeMonth(ctx context.Context, partition, hold string, prompt, completion, least int64, now time.Time) (int64, error) {
	l := s.leases.get(partition, resetOf(TenantMonth, now))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.room(now) < prompt+completion && !(now.Before(l.full) && l.room(now)+l.seen.free < prompt+least) {
		if err := s.writeLease(ctx, l, prompt+completion, prompt+least, false); err != nil {
			return 0, err
		}
		now = s.now()
	}
	room := l.room(now)
	switch {
	case room >= prompt+completion:
	case room >= prompt+least:
		completion = room - prompt
	default:
		if !now.Before(l.full) {
			// Near the limit every instance would write the month row
			// for each question only to be refused: for a tick, this
			// one refuses what did not fit with no write.
			l.full = now.Add(leaseTick)
		}
		e := &ExceededError{Limit: TenantMonth, Size: s.tenantMon, Used: l.seen.used, Held: l.seen.others, ResetsAt: l.reset, Now: now}
		if l.seen.used+prompt+least <= s.tenantMon && l.seen.lastLapse.Before(l.reset) {
			// The room is in other instances' leases: they fold it
			// back within a tick, or lapse by then at the latest.
			e.FreesAt = l.seen.lastLapse
		}
		return 0, e
	}
	l.taken += prompt + completion
	if l.holds == nil {
		l.holds = map[string]int64{}
	}
	l.holds[hold] += prompt + completion
	s.tickLease(l)
	return completion, nil
}

// giveMonth gives n tokens back to the tenant month of partition: a hold
// settled for less than it held, or a take whose reservation was not
// written. The next write of this instance's lease subtracts them from
// Used. ended is the tokens of a hold of property hold taken here that
// ends with it (0: none, or taken on another instance).
func (s *Store) giveMonth(partition, hold string, n, ended int64, now time.Time) {
	l := s.leases.get(partition, resetOf(TenantMonth, now))
	l.mu.Lock()
	defer l.mu.Unlock()
	if ended > 0 && l.holds[hold] > 0 {
		if l.holds[hold] -= min(ended, l.holds[hold]); l.holds[hold] == 0 {
			delete(l.holds, hold)
		}
	}
	if n > 0 {
		l.given += n
		l.full = time.Time{}
		s.tickLease(l)
	}
}

// held is what this instance's live holds in l add up to at now, and what
// it has taken and given back and not yet folded into Used.
func (s *Store) held(partition string, now time.Time) (holds, pending int64) {
	l := s.leases.get(partition, resetOf(TenantMonth, now))
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, v := range l.holds {
		if holdLive(name, now) {
			holds += v
		} else {
			delete(l.holds, name)
		}
	}
	return holds, l.taken - l.given
}

// tickLease makes sure l is written again within a tick (l.mu held).
func (s *Store) tickLease(l *lease) {
	if l.ticking {
		return
	}
	l.ticking = true
	time.AfterFunc(leaseTick, func() { s.renewLease(l) })
}

// renewLease is a lease's tick: it folds in what was taken and given back
// since the last write, and renews the lease when it was used since, or
// releases it when it was idle. A write that fails is tried at the next
// tick, for a lease's life; then what it held is left to its lapse.
func (s *Store) renewLease(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ticking = false
	idle := l.taken == 0 && l.given == 0
	if idle && l.granted == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.step)
	defer cancel()
	err := s.writeLease(ctx, l, 0, 0, idle)
	if err == nil && !idle && l.granted == 0 {
		// Renewed with room for nothing (the month is full): nothing
		// more to write until a reservation or a settlement.
		return
	}
	if err != nil {
		if l.failures++; l.failures > int(leaseLife/leaseTick) {
			l.failures, l.taken, l.given, l.granted = 0, 0, 0, 0
			return
		}
	} else {
		l.failures = 0
	}
	if err != nil || !idle {
		s.tickLease(l)
	}
}

// writeLease folds l into the month row and writes its new lease (l.mu
// held): at least need tokens when need > 0 and the room allows, at least
// floor for a reservation to go on with; sized to two ticks of the pace
// since its last write; none for an idle lease (need and the pace both
// 0) or when release is set. It reads the row and writes it conditional
// on its ETag, read again and tried again when another instance wrote
// first.
func (s *Store) writeLease(ctx context.Context, l *lease, need, floor int64, release bool) error {
	for attempt := 0; ; attempt++ {
		e, etag, found, err := s.get(ctx, l.partition, monthRow)
		if s.local && isCode(err, aztables.TableNotFound) {
			if err = s.createTable(ctx); err == nil {
				continue
			}
		}
		if err != nil {
			return err
		}
		now := s.now()
		used := integer(e.Properties["Used"])
		props := map[string]any{}
		var others, mine int64
		var lastLapse time.Time
		if p := l.pending; p != nil {
			if _, ok := e.Properties[p.name]; ok {
				// The write whose answer was lost went in: what it
				// folded is in Used.
				l.taken -= p.taken
				l.given -= p.given
			}
			l.pending = nil
		}
		for name, v := range e.Properties {
			exp, instance, ok := leaseOf(name)
			switch {
			case !ok:
				continue
			case strings.HasPrefix(instance, s.instance+"x"):
				// This instance's own: replaced by what it knows.
				mine += integer(v)
			case !now.Before(exp):
				// Lapsed: its instance may have spent all of it.
				used += max(0, integer(v))
			default:
				others += integer(v)
				props[name] = v
				if exp.After(lastLapse) {
					lastLapse = exp
				}
			}
		}
		used = max(0, used+l.taken-l.given)
		free := max(0, s.tenantMon-used-others)
		var grant int64
		if want := l.pace(now); !release && (need > 0 || want > 0) {
			if l.written.IsZero() || now.Sub(l.written) > leaseLife {
				// No pace to go by yet: room for a few reservations.
				want = max(want, 8*need)
			}
			grant = min(max(min(want, free/leaseShare), need), free)
			if grant < floor {
				// Not enough for the reservation: keep none.
				grant = 0
			}
		}
		if grant == 0 && mine == 0 && l.taken == 0 && l.given == 0 {
			// Nothing to fold in and no lease to take: a refusal needs
			// no write (near the limit, every instance asks).
			l.granted, l.expires, l.written = 0, time.Time{}, now
			l.seen = monthSeen{used: used, others: others, free: free, lastLapse: lastLapse}
			return nil
		}
		expires := time.Unix(now.Add(leaseLife).Unix()+1, 0)
		l.seq++
		// Written even when it holds nothing, so that a write whose
		// answer is lost can be found by its name.
		name := leaseName(expires, s.instance+"x"+strconv.Itoa(l.seq))
		props[name] = aztables.EDMInt64(grant)
		props["Used"], props["Limit"] = aztables.EDMInt64(used), aztables.EDMInt64(s.tenantMon)
		entity := marshal(l.partition, monthRow, props)
		wctx, cancel := s.try(ctx)
		if found {
			_, err = s.table.UpdateEntity(wctx, entity, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &etag})
		} else {
			_, err = s.table.AddEntity(wctx, entity, nil)
		}
		cancel()
		if isStatus(err, 412) || isStatus(err, 409) {
			s.conflicts.Add(1)
			// Every instance may be writing the row at once near the
			// limit: waits that grow faster and further than a
			// batch's spread them out.
			if err := backoff(ctx, min(attempt+2, 8)); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			// Whether it was written is not known: the next read of the
			// row finds this one there, or not.
			l.pending = &leaseWrite{name: name, taken: l.taken, given: l.given}
			if err := s.retryAfter(ctx, err, attempt); err != nil {
				return err
			}
			continue
		}
		l.granted, l.expires, l.taken, l.given, l.written = grant, expires, 0, 0, now
		if grant == 0 {
			l.expires = time.Time{}
		}
		l.seen = monthSeen{used: used, others: others, free: free - grant, lastLapse: lastLapse}
		return nil
	}
}

// Release folds every lease of this store into its month row and gives
// back the room they hold, for an instance that stops: its leases then
// neither keep room idle nor lapse to be charged whole. The holds of
// reservations still under way stay counted. A store may go on being
// used after it; it takes leases again.
func (s *Store) Release(ctx context.Context) error {
	s.leases.mu.Lock()
	all := make([]*lease, 0, len(s.leases.m))
	for _, l := range s.leases.m {
		all = append(all, l)
	}
	s.leases.mu.Unlock()
	var errs []error
	for _, l := range all {
		l.mu.Lock()
		if l.granted > 0 || l.taken != 0 || l.given != 0 {
			errs = append(errs, s.writeLease(ctx, l, 0, 0, true))
		}
		l.mu.Unlock()
	}
	return errors.Join(errs...)
}

// pace is the lease's next size: what was taken since its last write, per
// two ticks; 0 for none.
func (l *lease) pace(now time.Time) int64 {
	if l.taken <= 0 || l.written.IsZero() {
		return max(0, l.taken)
	}
	took := max(now.Sub(l.written), 100*time.Millisecond)
	return int64(math.Ceil(float64(l.taken) * float64(2*leaseTick) / float64(took)))
}

// leaseName is the property of instance's lease that lapses at exp.
func leaseName(exp time.Time, instance string) string {
	return leasePrefix + strconv.FormatInt(exp.Unix(), 10) + "_" + instance
}

// leaseOf reads a lease's property name; ok is false for another property.
func leaseOf(name string) (exp time.Time, instance string, ok bool) {
	rest, found := strings.CutPrefix(name, leasePrefix)
	if !found {
		return time.Time{}, "", false
	}
	sec, instance, found := strings.Cut(rest, "_")
	n, err := strconv.ParseInt(sec, 10, 64)
	if !found || err != nil {
		return time.Time{}, "", false
	}
	return time.Unix(n, 0), instance, true
}

// monthUsage reads the tenant month of partition as this instance sees
// it: used is its settled tokens, with what this instance has not folded
// in yet, less its holds taken since its last write; held is those holds
// and the other instances' live leases (the holds of their reservations
// under way and the room they leased). A lapsed lease counts as used, as
// the next write charges it. A hold counts as used from its instance's
// next write (a tick) until its settlement is folded in.
func (s *Store) monthUsage(ctx context.Context, partition string) (used, held int64, err error) {
	e, _, _, err := s.get(ctx, partition, monthRow)
	if err != nil {
		return 0, 0, err
	}
	now := s.now()
	holds, pending := s.held(partition, now)
	// Holds folded in already are in Used; those taken since are in
	// pending. (A hold settled on another instance stays in holds until
	// it lapses: the bound keeps it from counting.)
	holds = max(0, min(holds, pending))
	used = integer(e.Properties["Used"]) + pending - holds
	held = holds
	for name, v := range e.Properties {
		exp, instance, ok := leaseOf(name)
		switch {
		case !ok || strings.HasPrefix(instance, s.instance+"x"):
		case now.Before(exp):
			held += integer(v)
		default:
			used += integer(v)
		}
	}
	return max(0, used), held, nil
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}
