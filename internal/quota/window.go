package quota

import (
	"strings"
	"time"
)

// Windows are fixed UTC days and months: a day's tokens count from 00:00 UTC
// to the next 00:00 UTC, a month's from its first day to the next month's.

// Limit names one of the limits a request is counted against.
type Limit int

// The limits.
const (
	// UserDay is one user's tokens in a UTC day (QUOTA_USER_DAILY_TOKENS).
	UserDay Limit = iota + 1
	// TenantMonth is one tenant's tokens in a UTC month (QUOTA_TENANT_MONTHLY_TOKENS).
	TenantMonth
)

func (l Limit) String() string {
	switch l {
	case UserDay:
		return "user day"
	case TenantMonth:
		return "tenant month"
	}
	return "unknown limit"
}

// dayOf is the start of t's UTC day.
func dayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// monthOf is the start of t's UTC month.
func monthOf(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// resetOf is when the window of l that holds t ends.
func resetOf(l Limit, t time.Time) time.Time {
	if l == UserDay {
		return dayOf(t).AddDate(0, 0, 1)
	}
	return monthOf(t).AddDate(0, 1, 0)
}

// The table's keys. A user's partition, one per tenant, month and user,
// holds the user's day counters of that month and a ledger row per
// request: a day lies within its month, so one request's day counter and
// its ledger row are always in one partition, which is what lets one batch
// (atomic within a partition) reserve or settle it. The tenant's
// partition, one per tenant and month, holds the tenant's month counter
// and the instances' leases of it (lease.go): it is written once per lease,
// not once per request, so one tenant's questions spread over as many
// partitions as it has users (Table Storage's scalability target is 2,000
// entity operations a second per partition).
const (
	monthRow     = "month"
	dayRowPrefix = "day_"
	ledgerPrefix = "req_"
	// anonymous stands for the missing tenant or user of AUTH_MODE=none.
	anonymous = "anonymous"
)

// tenantPartition is the partition of tenant tid's month holding t.
func tenantPartition(tid string, t time.Time) string {
	return key(orAnonymous(tid)) + "_" + monthOf(t).Format("2006-01")
}

// userPartition is the partition of user oid of tenant tid in t's month:
// the tenant's partition key, "_" and the user's.
func userPartition(tid, oid string, t time.Time) string {
	return tenantPartition(tid, t) + "_" + key(orAnonymous(oid))
}

// dayRow is the row of user oid's counter for t's UTC day.
func dayRow(oid string, t time.Time) string {
	return dayRowPrefix + dayOf(t).Format("2006-01-02") + "_" + key(orAnonymous(oid))
}

// ledgerRow is the row of request id's ledger entity.
func ledgerRow(id string) string { return ledgerPrefix + key(id) }

func orAnonymous(id string) string {
	if id == "" {
		return anonymous
	}
	return id
}

// key escapes what Azure Table Storage refuses in a key (/ \ # ? and
// control characters), the quote OData filters and key paths would have to
// double, and the escape character itself, as %XX. Object, tenant and
// request ids never hold them; a principal from elsewhere might.
func key(s string) string {
	const hex = "0123456789ABCDEF"
	if !strings.ContainsFunc(s, badKeyRune) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if badKeyRune(rune(c)) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func badKeyRune(r rune) bool {
	return r == '/' || r == '\\' || r == '\'' || r == '#' || r == '?' || r == '%' || r < 0x20 || (r >= 0x7f && r < 0xa0)
}
