package quota

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// counter is one window's row: the settled tokens and the holds of the
// reservations under way, each hold a property named after the time its
// reservations lapse (holdName), so that a window's row stays the same
// size however many requests are under way, and an expired hold is simply
// not counted (and dropped at the next write).
type counter struct {
	row   string
	limit Limit
	size  int64
	reset time.Time

	found bool
	etag  azcore.ETag
	used  int64
	holds map[string]int64
}

// holdStep is the granularity of the holds' expiry: reservations that
// lapse within the same 10 s share one property.
const holdStep = 10

// holdName is the property of the holds that lapse at exp (rounded up to
// holdStep seconds): "H" and the Unix time; "B" for holds charged when
// they lapse (Request.ChargeOnLapse).
func holdName(exp time.Time, chargeOnLapse bool) string {
	sec := (exp.Unix() + holdStep - 1) / holdStep * holdStep
	prefix := "H"
	if chargeOnLapse {
		prefix = "B"
	}
	return prefix + strconv.FormatInt(sec, 10)
}

// isHold says whether a counter's property is a hold.
func isHold(name string) bool { return strings.HasPrefix(name, "H") || strings.HasPrefix(name, "B") }

// chargedOnLapse says whether the holds of property name are charged when
// they lapse.
func chargedOnLapse(name string) bool { return strings.HasPrefix(name, "B") }

// holdLive says whether the holds of property name still count at now.
func holdLive(name string, now time.Time) bool {
	sec, err := strconv.ParseInt(name[min(1, len(name)):], 10, 64)
	return err == nil && now.Unix() < sec
}

// held is what the live holds add up to at now.
func (c *counter) held(now time.Time) int64 {
	var n int64
	for name, v := range c.holds {
		if holdLive(name, now) {
			n += v
		}
	}
	return n
}

// freesAt is when enough of the window's live holds at now have ended, at
// their expiry at the latest, for need more tokens to fit; zero when the
// window's charges alone leave no room for them, whatever ends. A hold
// charged on lapse may be charged in full then, so asking again at that
// time is only worth it, not sure to fit.
func (c *counter) freesAt(need int64, now time.Time) time.Time {
	var ends []string
	for name, v := range c.holds {
		if v > 0 && holdLive(name, now) {
			ends = append(ends, name)
		}
	}
	// Hold names sort by their expiry: the prefix, then Unix seconds of
	// the same width for centuries to come.
	slices.SortFunc(ends, func(a, b string) int { return strings.Compare(a[1:], b[1:]) })
	free := c.free(now)
	for _, name := range ends {
		free += c.holds[name]
		if free >= need {
			sec, _ := strconv.ParseInt(name[1:], 10, 64)
			return time.Unix(sec, 0)
		}
	}
	return time.Time{}
}

// lapse charges the holds charged on lapse that have lapsed at now: they
// move to the settled tokens, and the next write drops them. read calls
// it, with the time the decisions on the counter are made at.
func (c *counter) lapse(now time.Time) {
	for name, v := range c.holds {
		if chargedOnLapse(name) && !holdLive(name, now) {
			c.used += max(0, v)
			delete(c.holds, name)
		}
	}
}

// free is what is left of the window at now.
func (c *counter) free(now time.Time) int64 { return c.size - c.used - c.held(now) }

// counters are the rows of the windows a request of oid at now counts
// against in its batch: the user's day. (The tenant's month is counted
// through the instance's lease of it, lease.go.)
func (s *Store) counters(oid string, now time.Time) []*counter {
	if s.userDay <= 0 {
		return nil
	}
	return []*counter{{row: dayRow(oid, now), limit: UserDay, size: s.userDay, reset: resetOf(UserDay, now)}}
}

// clone is a copy of c that a write can change.
func (c *counter) clone() *counter {
	d := *c
	d.holds = maps.Clone(c.holds)
	return &d
}

// entity is c's row as written at now, the time it was read at (read):
// a lapsed hold is released by being left out, one charged on lapse
// having been charged by then (lapse).
func (c *counter) entity(partition string, now time.Time) []byte {
	props := map[string]any{"Used": aztables.EDMInt64(c.used), "Limit": aztables.EDMInt64(c.size)}
	for name, v := range c.holds {
		if v > 0 && holdLive(name, now) {
			props[name] = aztables.EDMInt64(v)
		}
	}
	return marshal(partition, c.row, props)
}

// action writes c: an insert for a row not there yet (which fails if
// another writer inserted it first), else a replace conditional on the
// ETag read.
func (c *counter) action(partition string, now time.Time) aztables.TransactionAction {
	if !c.found {
		return aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: c.entity(partition, now)}
	}
	etag := c.etag
	return aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateReplace, Entity: c.entity(partition, now), IfMatch: &etag}
}
