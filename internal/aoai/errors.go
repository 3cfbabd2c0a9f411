package aoai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/timebox-dev/timebox/internal/retry"
)

// Kind classifies a failed chat completion, decided once at this package's
// boundary from the status, the headers and the body's error code (never
// from a whole message string).
type Kind int

// The kinds of failure.
const (
	// KindTransient: a fast 5xx (other than 503), a connection error or a
	// bad response body. Worth another attempt by the caller.
	KindTransient Kind = iota + 1
	// KindUnavailable: a fast 503.
	KindUnavailable
	// KindThrottled: a 429 that a later attempt can pass; RetryAfter says when.
	KindThrottled
	// KindTooLarge: the request alone exceeds the deployment's rate limit or
	// the model's context window; no retry can ever pass it.
	KindTooLarge
	// KindFiltered: the prompt was rejected by the content filter.
	KindFiltered
	// KindMisconfigured: the upstream refused our credentials (401/403) or
	// the deployment or path does not exist (404).
	KindMisconfigured
	// KindSlowFailure: a retryable failure that took at least the
	// fast-failure threshold; a timeout, never retried.
	KindSlowFailure
	// KindRejected: any other 4xx: our request was wrong.
	KindRejected
	// KindCanceled: the context ended first (the budget ran out or the
	// caller went away); the *Error wraps the context's error.
	KindCanceled
	// KindBroken: the answer stopped after its first piece of text (the
	// connection broke, the stream ended early or carried an error). Never
	// retried: the text so far (Error.Partial) was generated and billed,
	// and may already have been shown.
	KindBroken
	// KindCredential: the Entra ID credential gave no token and asking
	// again will not change that: it has nothing to sign in with (no az
	// login, no managed identity) or its sign-in was refused (a wrong
	// tenant, an identity not assigned). Nothing was sent to Azure OpenAI.
	// A token endpoint that failed as any server may is KindTransient.
	KindCredential
)

var kindNames = map[Kind]string{
	KindTransient: "transient", KindUnavailable: "unavailable", KindThrottled: "throttled",
	KindTooLarge: "too_large", KindFiltered: "filtered", KindMisconfigured: "misconfigured",
	KindSlowFailure: "slow_failure", KindRejected: "rejected", KindCanceled: "canceled",
	KindBroken: "broken", KindCredential: "credential",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is a failed chat completion. Status is the last attempt's HTTP
// status (0 for a connection error), Code the upstream error code,
// RetryAfter the wait the upstream asked for (429, 503), Attempts how many
// attempts were made and Elapsed how long the last one took.
type Error struct {
	// Backend is the name of the backend of the last attempt; empty when
	// none was made.
	Backend string
	// Trail is every attempt of the call, over all backends.
	Trail      []Attempt
	Kind       Kind
	Status     int
	Code       string
	RetryAfter time.Duration
	Attempts   int
	Elapsed    time.Duration
	// UpstreamRequestID is Azure's id for the failed attempt, when it
	// answered (see Response.UpstreamRequestID).
	UpstreamRequestID string
	// Partial is the answer's text that had arrived when the attempt
	// failed; empty when it failed before its first token.
	Partial string
	// Path is the URL path the attempt called (no query, no host) when
	// Azure OpenAI answered 404: the endpoint's path or the deployment is
	// wrong, and the path says which. Empty otherwise.
	Path string
	// Object is the error object Azure OpenAI answered with, as it sent
	// it (message, code, param, innererror); nil when it sent none. The
	// OpenAI dialect passes it on.
	Object json.RawMessage
	Err    error
	// delivered is true when the attempt had handed text or a chunk on
	// before it failed: it is tried nowhere again.
	delivered bool
}

func (e *Error) Error() string {
	s := fmt.Sprintf("azure openai: %s (status %d", e.Kind, e.Status)
	if e.Code != "" {
		s += ", code " + e.Code
	}
	if e.Path != "" {
		s += ", path " + e.Path
	}
	s += fmt.Sprintf(", attempt %d after %s)", e.Attempts, e.Elapsed.Round(time.Millisecond))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// errBadBody is the cause of a 2xx answer that could not be read.
var errBadBody = errors.New("malformed response body")

// errorBody is Azure OpenAI's error envelope. code is a string ("429",
// "content_filter", "DeploymentNotFound") or null; innererror.code names
// ResponsibleAIPolicyViolation on content filtering.
type errorBody struct {
	Error struct {
		Code       json.RawMessage `json:"code"`
		Innererror struct {
			Code string `json:"code"`
		} `json:"innererror"`
	} `json:"error"`
}

func (b errorBody) code() string {
	var s string
	if json.Unmarshal(b.Error.Code, &s) == nil {
		return s
	}
	return ""
}

// longestPlannedWait is the longest wait Azure OpenAI names as a plan:
// its token and request limits are per minute, so a 429 asking for more
// means the request alone exceeds the limit (Azure answers such a request
// with "retry after 86400 seconds") and never clears; a 503 asking for more
// (a header of 292 years, a date in 2100) is no plan for a brief outage,
// and its wait is not passed on to the caller (docs/api.md,
// upstream_unavailable): the clients keep their own backoff.
const longestPlannedWait = time.Minute

// classify turns one non-2xx answer into an *Error.
func classify(status int, h http.Header, body []byte) *Error {
	var eb errorBody
	_ = json.Unmarshal(body, &eb)
	e := &Error{Status: status, Code: eb.code(), Object: errorObject(body)}
	switch {
	case status == http.StatusTooManyRequests:
		wait, ok := retry.ServerWait(h, time.Time{})
		e.RetryAfter = wait
		e.Kind = KindThrottled
		if ok && wait > longestPlannedWait {
			e.Kind = KindTooLarge
		}
	case status == http.StatusBadRequest && (e.Code == "content_filter" || eb.Error.Innererror.Code == "ResponsibleAIPolicyViolation"):
		e.Kind = KindFiltered
	case status == http.StatusBadRequest && e.Code == "context_length_exceeded":
		e.Kind = KindTooLarge
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusNotFound:
		e.Kind = KindMisconfigured
	case status == http.StatusServiceUnavailable:
		// Its wait, when it names a plausible one, is passed on to the
		// caller; a longer one (a header of 292 years, a date in 2100) is
		// no plan of Azure's for a brief outage, and was passed on as
		// "Try again in 9223372037 s": the clients keep their own backoff.
		if wait, _ := retry.ServerWait(h, time.Time{}); wait <= longestPlannedWait {
			e.RetryAfter = wait
		}
		e.Kind = KindUnavailable
	case status >= 500:
		e.Kind = KindTransient
	default:
		e.Kind = KindRejected
	}
	return e
}

// ruleStatus is the status the retry rule judges (retry.Upstream): the
// attempt's own, except that a connection error or an unreadable answer is
// 0, like any network error, and a request too large for the deployment's
// quota (a 429 no wait clears) is 413, not a throttle: no wait lets it
// pass, another deployment's larger quota may.
func (e *Error) ruleStatus() int {
	switch {
	case e.Kind == KindTransient && e.Status < 500:
		return 0
	case e.Kind == KindTooLarge && e.Status == http.StatusTooManyRequests:
		return http.StatusRequestEntityTooLarge
	}
	return e.Status
}
