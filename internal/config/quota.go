package config

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Quota is how many tokens callers may spend, across every instance, and
// where that is counted: a table of Azure Table Storage (Azurite locally).
type Quota struct {
	// Endpoint is the Table service URL (QUOTA_TABLE_ENDPOINT, e.g.
	// https://<account>.table.core.windows.net, or Azurite's
	// http://127.0.0.1:10002/devstoreaccount1): https, or http for a
	// loopback host. Nil: no quotas, and no limit may be set.
	Endpoint *url.URL
	// Table is the table's name (QUOTA_TABLE, default timeboxusage).
	Table string
	// UserDailyTokens is what one user may spend in a UTC day
	// (QUOTA_USER_DAILY_TOKENS); 0 means no such limit.
	UserDailyTokens int64
	// TenantMonthlyTokens is what one tenant may spend in a UTC month
	// (QUOTA_TENANT_MONTHLY_TOKENS); 0 means no such limit.
	TenantMonthlyTokens int64
	// FailOpen serves a request whose quota cannot be checked because the
	// store is unreachable (QUOTA_FAIL_OPEN=true; default false: 503
	// quota_unavailable).
	FailOpen bool
}

// DefaultQuotaTable is QUOTA_TABLE's default.
const DefaultQuotaTable = "timeboxusage"

// tableName is Azure Table Storage's rule for a table's name.
var tableName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{2,62}$`)

// maxQuotaTokens bounds a limit: far above any deployment's month, and an
// int64 sum of many never overflows.
const maxQuotaTokens = 1_000_000_000_000

// loadQuota reads the QUOTA_* settings.
func loadQuota(get func(string) string, bad func(name, format string, args ...any)) Quota {
	q := Quota{Table: DefaultQuotaTable}
	tokens := func(name string) int64 {
		v := get(name)
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > maxQuotaTokens {
			bad(name, "%q must be a whole number of tokens from 0 (no limit) to %d", v, int64(maxQuotaTokens))
			return 0
		}
		return n
	}
	q.UserDailyTokens = tokens("QUOTA_USER_DAILY_TOKENS")
	q.TenantMonthlyTokens = tokens("QUOTA_TENANT_MONTHLY_TOKENS")
	if v := get("QUOTA_TABLE"); v != "" {
		if !tableName.MatchString(v) {
			bad("QUOTA_TABLE", "%q is not a table name (3-63 letters and digits, starting with a letter)", v)
		} else {
			q.Table = v
		}
	}
	switch v := strings.ToLower(get("QUOTA_FAIL_OPEN")); v {
	case "", "false":
	case "true":
		q.FailOpen = true
	default:
		bad("QUOTA_FAIL_OPEN", "%q must be true or false", v)
	}
	switch v := get("QUOTA_TABLE_ENDPOINT"); {
	case v == "":
		if q.UserDailyTokens > 0 || q.TenantMonthlyTokens > 0 {
			bad("QUOTA_TABLE_ENDPOINT", "required when a quota is set (the Table service URL, https://<account>.table.core.windows.net)")
		}
	default:
		u, err := url.Parse(v)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("QUOTA_TABLE_ENDPOINT", "%q is not an http(s) URL", v)
		case u.Scheme == "http" && !isLoopback(u.Hostname()):
			bad("QUOTA_TABLE_ENDPOINT", "%q: http is allowed only for a loopback host (Azurite); use https", v)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			bad("QUOTA_TABLE_ENDPOINT", "%q must be the Table service URL without credentials, query or fragment (no SAS: the app's identity is used)", v)
		default:
			u.Path = strings.TrimRight(u.Path, "/")
			q.Endpoint = u
		}
	}
	return q
}
