package quota

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ExceededError is a reservation refused because a limit is used up, or
// held by requests under way: even the prompt and the least useful answer
// do not fit what is left of it.
type ExceededError struct {
	// Limit is the limit that refused; when several did, the one whose
	// refusal lasts longest (asking before then is refused again).
	Limit Limit
	// Size is the limit, in tokens.
	Size int64
	// Used is what the window was charged (settled), in tokens.
	Used int64
	// Held is what requests under way hold in the window, in tokens.
	Held int64
	// ResetsAt is when the window ends and a new one starts empty.
	ResetsAt time.Time
	// FreesAt, when not zero, says the refusal is because of holds: the
	// window's charges alone leave room, and by FreesAt enough holds have
	// ended (settled, or lapsed at their expiry) for the request to fit,
	// before the window resets.
	FreesAt time.Time
	// Now is when the reservation was refused.
	Now time.Time
}

func (e *ExceededError) Error() string {
	if e.held() {
		return fmt.Sprintf("quota: %s limit of %d tokens held by requests under way (%d used, %d held), frees by %s", e.Limit, e.Size, e.Used, e.Held, e.FreesAt.Format(time.RFC3339))
	}
	return fmt.Sprintf("quota: %s limit of %d tokens used up (%d used, %d held), resets at %s", e.Limit, e.Size, e.Used, e.Held, e.ResetsAt.Format(time.RFC3339))
}

// held says whether the refusal is because of holds that end before the
// window resets.
func (e *ExceededError) held() bool { return !e.FreesAt.IsZero() && e.FreesAt.Before(e.ResetsAt) }

// RetryAfter is the time left until the refusal ends, rounded up to a
// whole second, at least one: until enough holds end when the refusal is
// because of them, else until the window resets.
func (e *ExceededError) RetryAfter() time.Duration {
	d := e.ResetsAt.Sub(e.Now)
	if e.held() {
		d = e.FreesAt.Sub(e.Now)
	}
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

// Message says which limit, how large it is and when asking again can
// succeed, for the person who asked: "Your daily limit of 200,000 tokens is
// used up. It resets at 00:00 UTC, in 5 h 12 min." A refusal because of
// holds says so: "Your daily limit of 2,000 tokens is held by answers under
// way (501 used, 1,499 held). Try again when they end, in 4 min at most."
func (e *ExceededError) Message() string {
	whose, when := "Your daily limit", "at 00:00 UTC"
	if e.Limit == TenantMonth {
		whose = "Your organization's monthly limit"
		when = "on " + e.ResetsAt.UTC().Format("2 January") + " at 00:00 UTC"
	}
	if e.held() {
		return fmt.Sprintf("%s of %s tokens is held by answers under way (%s used, %s held). Try again when they end, in %s at most.",
			whose, thousands(e.Size), thousands(e.Used), thousands(e.Held), span(e.FreesAt.Sub(e.Now)))
	}
	return fmt.Sprintf("%s of %s tokens is used up. It resets %s, in %s.", whose, thousands(e.Size), when, span(e.ResetsAt.Sub(e.Now)))
}

// thousands writes n with a comma between each group of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// span says a wait in its two largest units, rounded up to the minute:
// "5 h 12 min", "3 d 4 h", "1 min".
func span(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	if m < 1 {
		m = 1
	}
	days, hours, mins := m/(24*60), m/60%24, m%60
	switch {
	case days > 0 && hours > 0:
		return fmt.Sprintf("%d d %d h", days, hours)
	case days > 0:
		return fmt.Sprintf("%d d", days)
	case hours > 0 && mins > 0:
		return fmt.Sprintf("%d h %d min", hours, mins)
	case hours > 0:
		return fmt.Sprintf("%d h", hours)
	}
	return fmt.Sprintf("%d min", mins)
}

// StepName is the step (budget.StepTimeout.Step) of every call to the
// store, and the Op* constants its names (budget.StepTimeout.Name, and
// UnavailableError.Op): a request whose own time runs out while the store
// is asked ends with that step as its cause.
const (
	StepName  = "quota"
	OpReserve = "reserve"
	OpSettle  = "settle"
	OpCharge  = "charge"
	OpUsage   = "usage"
)

// UnavailableRetryAfter is the wait an unreachable store's answer asks for.
const UnavailableRetryAfter = 5 * time.Second

// UnavailableError is a store that could not be reached or did not answer
// within its step deadline: the quota could not be checked (or settled).
type UnavailableError struct {
	// Op is OpReserve, OpSettle, OpCharge or OpUsage.
	Op  string
	Err error
}

func (e *UnavailableError) Error() string {
	return "quota " + e.Op + ": store unavailable: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// RetryAfter is how long to wait before asking again.
func (e *UnavailableError) RetryAfter() time.Duration { return UnavailableRetryAfter }

// ErrDuplicate is a reservation for a request id that already has one: a
// request id names one request in the ledger.
var ErrDuplicate = errors.New("quota: the request id already has a reservation")
