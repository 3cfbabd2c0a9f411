package aoaitest

import (
	"time"
)

// rateWindow is the span Azure OpenAI's tokens-per-minute limit counts over.
const rateWindow = time.Minute

// nominalTPM is the limit reported in headers when Options.TPM is 0
// (unlimited): clients that read x-ratelimit-remaining-* see a large,
// plausible number rather than a missing header.
const nominalTPM = 1_000_000

// limiter is a sliding-window tokens-per-minute limit. Azure admits a
// request on an estimate made before the model runs (prompt tokens plus
// max_tokens), so the window holds estimates, not usage. It is not safe for
// concurrent use; Server guards it.
type limiter struct {
	tpm     int  // the limit; nominalTPM when not enforced
	enforce bool // false when Options.TPM is 0
	entries []spend
}

type spend struct {
	at     time.Time
	tokens int
}

// verdict is the limiter's answer to one request.
type verdict struct {
	ok bool
	// never is true when the estimate alone exceeds the limit: no wait
	// will ever admit it.
	never bool
	// wait is how long until enough of the window expires to admit the
	// request; set when !ok && !never.
	wait time.Duration
	// remainingTokens and remainingRequests are what the response headers
	// report, after this request when it was admitted.
	remainingTokens, remainingRequests int
	// limitTokens and limitRequests are the quota per minute.
	limitTokens, limitRequests int
}

func newLimiter(tpm int) *limiter {
	if tpm <= 0 {
		return &limiter{tpm: nominalTPM}
	}
	return &limiter{tpm: tpm, enforce: true}
}

// requestLimit is the requests-per-minute figure Azure pairs with a TPM
// quota: 6 RPM per 1000 TPM (Learn: "Azure OpenAI quotas and limits"). It is
// reported, not enforced.
func (l *limiter) requestLimit() int {
	return max(1, l.tpm/1000*6)
}

// admit decides on a request of est tokens at now and, when it is admitted,
// records it.
func (l *limiter) admit(now time.Time, est int) verdict {
	used := l.used(now)
	v := l.remaining(used)
	if !l.enforce {
		l.entries = append(l.entries, spend{at: now, tokens: est})
		v.ok = true
		v.remainingTokens = max(0, v.remainingTokens-est)
		v.remainingRequests = max(0, v.remainingRequests-1)
		return v
	}
	if est > l.tpm {
		v.never = true
		return v
	}
	if used+est <= l.tpm {
		l.entries = append(l.entries, spend{at: now, tokens: est})
		v.ok = true
		v.remainingTokens -= est
		v.remainingRequests = max(0, v.remainingRequests-1)
		return v
	}
	// Walk the window oldest first until enough has expired to fit est.
	for _, e := range l.entries {
		used -= e.tokens
		if used+est <= l.tpm {
			v.wait = e.at.Add(rateWindow).Sub(now)
			break
		}
	}
	return v
}

// peek reports the remaining quota at now without spending any.
func (l *limiter) peek(now time.Time) verdict {
	v := l.remaining(l.used(now))
	v.ok = true
	return v
}

// used drops the spends that left the window at now and sums the rest.
func (l *limiter) used(now time.Time) int {
	i := 0
	for i < len(l.entries) && now.Sub(l.entries[i].at) >= rateWindow {
		i++
	}
	l.entries = l.entries[i:]
	n := 0
	for _, e := range l.entries {
		n += e.tokens
	}
	return n
}

// remaining is the quota left when used tokens are spent.
func (l *limiter) remaining(used int) verdict {
	return verdict{
		remainingTokens:   max(0, l.tpm-used),
		remainingRequests: max(0, l.requestLimit()-len(l.entries)),
		limitTokens:       l.tpm,
		limitRequests:     l.requestLimit(),
	}
}
