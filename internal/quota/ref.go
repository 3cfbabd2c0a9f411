package quota

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// A reservation outlives the request that took it when the work it holds
// for does: a long answer's generation runs across hops, each a request,
// on any instance. Ref names the reservation so that whichever hop sees
// the work end can settle it (ParseRef, then Settle), with no state kept
// in an instance.

// refVersion starts every ref, so that a later format can be told apart.
const refVersion = "q1"

// ErrBadRef is a ref ParseRef cannot read.
var ErrBadRef = errors.New("quota: not a reservation ref")

// Ref is the reservation's name for ParseRef: its window's time, expiry,
// tokens held, which windows it counts against (and whether its hold is
// charged on lapse) and its request id. It
// holds nothing secret, and the caller's ids are not in it: ParseRef takes
// them from the verified caller. Whoever keeps it must keep it from being
// edited (a long answer keeps it in its response's metadata at Azure
// OpenAI, which only the service writes): a ref with fewer tokens would
// release a hold for less than it held.
func (r *Reservation) Ref() string {
	var windows string
	for range r.counters {
		windows += "d"
	}
	if r.tenant != "" {
		windows += "m"
	}
	if chargedOnLapse(r.hold) {
		windows += "b"
	}
	return strings.Join([]string{
		refVersion,
		strconv.FormatInt(r.at.Unix(), 10),
		strconv.FormatInt(r.Expires.Unix(), 10),
		strconv.FormatInt(r.Tokens, 10),
		windows,
		r.ID,
	}, "|")
}

// ParseRef is the reservation ref names, of the caller oid in tenant tid:
// what Settle takes. A ref that does not parse is ErrBadRef.
func ParseRef(ref, oid, tid string) (*Reservation, error) {
	parts := strings.SplitN(ref, "|", 6)
	if len(parts) != 6 || parts[0] != refVersion || parts[5] == "" {
		return nil, ErrBadRef
	}
	var n [3]int64
	for i, p := range parts[1:4] {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return nil, ErrBadRef
		}
		n[i] = v
	}
	at := time.Unix(n[0], 0).UTC()
	r := &Reservation{
		ID: parts[5], Tokens: n[2], Expires: time.Unix(n[1], 0).UTC(),
		at: at, oid: oid, partition: userPartition(tid, oid, at), ledger: ledgerRow(parts[5]),
	}
	windows, chargeOnLapse := strings.CutSuffix(parts[4], "b")
	r.hold = holdName(r.Expires, chargeOnLapse)
	for _, w := range windows {
		switch w {
		case 'd':
			r.counters = append(r.counters, dayRow(oid, at))
		case 'm':
			r.tenant = tenantPartition(tid, at)
		default:
			return nil, ErrBadRef
		}
	}
	return r, nil
}
