package aoaitest

import (
	"time"
)

// rateWindow is the span Azure OpenAI's tokens-per-minute limit counts over.
const rateWindow = time.Minute

// callWindow is the span the request-rate limit is evaluated over. Azure
// evaluates requests per minute "over a small period of time, typically 1
// or 10 seconds" (Learn: "Manage Azure OpenAI quota"), and the recorded
// x-ratelimit-limit-requests of a 250,000 TPM deployment is 250: its
// 1,500 RPM per 10 s (chat_200_stream_v1_endpoint.json).
const callWindow = 10 * time.Second

// nominalTPM is the limit reported in headers when Options.TPM is 0
// (unlimited): clients that read x-ratelimit-remaining-* see a large,
// plausible number rather than a missing header.
const nominalTPM = 1_000_000

// limiter is a sliding-window tokens-per-minute limit and the request-rate
// limit Azure pairs with it. Azure admits a request on an estimate made
// before the model runs (prompt tokens plus max_tokens), so the token window
// holds estimates, not usage. It is not safe for concurrent use; Server
// guards it.
type limiter struct {
	tpm     int         // the limit; nominalTPM when not enforced
	enforce bool        // false when Options.TPM is 0
	entries []spend     // admitted estimates in the last rateWindow, oldest first
	sum     int         // the tokens of entries, kept as they come and go
	calls   []time.Time // admitted requests in the last callWindow, oldest first
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
	// callRate is true when the tokens fit but the request rate does not.
	callRate bool
	// wait is how long until enough of the window expires to admit the
	// request; set when !ok && !never.
	wait time.Duration
	// remainingTokens and remainingRequests are what the response headers
	// report, after this request when it was admitted.
	remainingTokens, remainingRequests int
	// limitTokens is the quota per minute, limitRequests per callWindow.
	limitTokens, limitRequests int
}

func newLimiter(tpm int) *limiter {
	if tpm <= 0 {
		return &limiter{tpm: nominalTPM}
	}
	return &limiter{tpm: tpm, enforce: true}
}

// requestLimit is the request-rate limit per callWindow: Azure pairs 6 RPM
// with each 1000 TPM (Learn: "Azure OpenAI quotas and limits") and
// evaluates them per 10 s, and 6 a minute is 1 per 10 s: one request per
// callWindow for each 1000 TPM.
func (l *limiter) requestLimit() int {
	return max(1, l.tpm/1000)
}

// admit decides on a request of est tokens at now and, when it is admitted,
// records it. Tokens are judged first: a request over both limits gets the
// token 429, as the recorded token refusals carry the token policy-id.
func (l *limiter) admit(now time.Time, est int) verdict {
	used := l.used(now)
	v := l.remaining(used)
	if !l.enforce {
		l.spend(now, est, &v)
		return v
	}
	if est > l.tpm {
		v.never = true
		return v
	}
	if used+est > l.tpm {
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
	if len(l.calls) >= l.requestLimit() {
		v.callRate = true
		v.wait = l.calls[len(l.calls)-l.requestLimit()].Add(callWindow).Sub(now)
		return v
	}
	l.spend(now, est, &v)
	return v
}

// spend records an admitted request of est tokens at now in v.
func (l *limiter) spend(now time.Time, est int, v *verdict) {
	l.entries = append(l.entries, spend{at: now, tokens: est})
	l.sum += est
	l.calls = append(l.calls, now)
	v.ok = true
	v.remainingTokens = max(0, v.remainingTokens-est)
	v.remainingRequests = max(0, v.remainingRequests-1)
}

// peek reports the remaining quota at now without spending any.
func (l *limiter) peek(now time.Time) verdict {
	v := l.remaining(l.used(now))
	v.ok = true
	return v
}

// used drops the spends and calls that left their windows at now and
// reports the tokens of the rest. The sum is kept, not counted again, so
// that a request costs the same however many the window holds (thousands
// a second in a benchmark).
func (l *limiter) used(now time.Time) int {
	i := 0
	for i < len(l.entries) && now.Sub(l.entries[i].at) >= rateWindow {
		l.sum -= l.entries[i].tokens
		i++
	}
	l.entries = l.entries[i:]
	i = 0
	for i < len(l.calls) && now.Sub(l.calls[i]) >= callWindow {
		i++
	}
	l.calls = l.calls[i:]
	return l.sum
}

// remaining is the quota left when used tokens are spent.
func (l *limiter) remaining(used int) verdict {
	return verdict{
		remainingTokens:   max(0, l.tpm-used),
		remainingRequests: max(0, l.requestLimit()-len(l.calls)),
		limitTokens:       l.tpm,
		limitRequests:     l.requestLimit(),
	}
}
