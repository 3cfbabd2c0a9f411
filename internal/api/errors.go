package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/caller"
	"github.com/timebox-dev/timebox/internal/extract"
	"github.com/timebox-dev/timebox/internal/fetch"
	"github.com/timebox-dev/timebox/internal/openaiwire"
	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/quota"
	"github.com/timebox-dev/timebox/internal/retry"
)

// Error is an answer timebox gives on purpose: status, stable code and a
// message an end user can read. Handlers return it for bad input.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func invalid(format string, args ...any) *Error {
	return &Error{http.StatusBadRequest, apiwire.CodeInvalidRequest, fmt.Sprintf(format, args...)}
}

var (
	errOriginNotAllowed = &Error{http.StatusForbidden, apiwire.CodeOriginNotAllowed, "This site is not allowed to call the service."}
	errOriginAmbiguous  = &Error{http.StatusForbidden, apiwire.CodeOriginNotAllowed, "The request carries more than one Origin header."}
	errNotFound         = &Error{http.StatusNotFound, apiwire.CodeNotFound, "There is nothing at this address."}
	errMethodNotAllowed = &Error{http.StatusMethodNotAllowed, apiwire.CodeMethodNotAllowed, "This address does not accept that method."}
	errMediaType        = &Error{http.StatusUnsupportedMediaType, apiwire.CodeUnsupportedMediaType, "Send the request as JSON (Content-Type: application/json)."}
	errCharset          = &Error{http.StatusUnsupportedMediaType, apiwire.CodeUnsupportedMediaType, "Send the request as JSON in UTF-8 (Content-Type: application/json, with no charset or charset=utf-8)."}
	errContentEncoding  = &Error{http.StatusUnsupportedMediaType, apiwire.CodeUnsupportedMediaType, "Send the request body uncompressed (no Content-Encoding)."}
	// errBodyLate: the deadline came while the body was still arriving. A
	// 500, like every other deadline: the same upload would be as slow again.
	// errNoTimeForUpstream: after reading the material and fitting the
	// prompt, less than MinUpstreamTime was left.
	errNoTimeForUpstream = &Error{http.StatusInternalServerError, apiwire.CodeDeadlineExceeded, "Reading the documents and pages and preparing the question took most of the time, so the AI service was not asked. Try fewer or smaller documents, or allow more time."}
	errBodyLate          = &Error{http.StatusInternalServerError, apiwire.CodeDeadlineExceeded, "The request took too long to arrive, so it was stopped. Check the network connection, or send smaller documents."}
)

// codeClientGone marks, in the log only, a request whose caller went away:
// nobody is answered with it.
const codeClientGone = "client_gone"

// errorRow is a row of the error table (rowFor): what an error is answered
// with, in any dialect.
type errorRow struct {
	status     int
	code, msg  string
	retryAfter time.Duration // 429, 503: the wait to ask for; 0: none named
	challenge  string        // WWW-Authenticate, 401 and 403 only
	// final marks an answer no client retries whatever its status (a quota
	// used up or held: its wait, until the window resets or holds of
	// answers under way end, is the person's to wait, told in the message).
	final bool
	param string // the request's field at fault, where the dialect names one
	// inner is Azure OpenAI's innererror (its content filter's verdict),
	// which the OpenAI dialect passes on; nil when there is none.
	inner json.RawMessage
}

// rowFor is the one ordered table from errors to answers. The first
// matching row wins; detail stays in the log, never in the message.
func rowFor(err error) errorRow {
	var (
		apiErr  *Error
		maxErr  *http.MaxBytesError
		step    *budget.StepTimeout
		upErr   *aoai.Error
		tooBig  *prompt.TooLargeError
		docErr  *extract.Error
		pageErr *fetch.Error
		callErr *caller.Error
		quotaUp *quota.ExceededError
		quotaNo *quota.UnavailableError
		wireErr *openaiwire.Error
	)
	switch {
	case errors.As(err, &quotaUp):
		return errorRow{status: http.StatusTooManyRequests, code: apiwire.CodeQuotaExceeded, retryAfter: quotaUp.RetryAfter(), final: true, msg: quotaUp.Message()}
	case errors.As(err, &quotaNo):
		return errorRow{status: http.StatusServiceUnavailable, code: apiwire.CodeQuotaUnavailable, retryAfter: quotaNo.RetryAfter(),
			msg: fmt.Sprintf("Your token quota cannot be checked right now, so the question was not sent. Try again in %d s.", ceilSeconds(quotaNo.RetryAfter()))}
	case errors.Is(err, admission.ErrOverloaded):
		return errorRow{status: http.StatusServiceUnavailable, code: apiwire.CodeOverloaded, retryAfter: admission.RetryAfter,
			msg: fmt.Sprintf("The service is busy with other requests. Try again in %d s.", ceilSeconds(admission.RetryAfter))}
	case errors.As(err, &apiErr):
		return errorRow{status: apiErr.Status, code: apiErr.Code, msg: apiErr.Message}
	case errors.As(err, &wireErr):
		return errorRow{status: wireErr.Status, code: wireErr.Code, msg: wireErr.Message, param: wireErr.Param}
	case errors.As(err, &callErr):
		return callerRow(callErr)
	case errors.As(err, &maxErr):
		return errorRow{status: http.StatusRequestEntityTooLarge, code: apiwire.CodeBodyTooLarge,
			msg: fmt.Sprintf("The request is larger than the %s allowed. Send fewer or smaller documents.", sizeForPeople(maxErr.Limit))}
	case errors.As(err, &step) && step.Step == quota.StepName:
		return quotaStepRow(step)
	case errors.As(err, &step):
		code, what := apiwire.CodeFetchTimeout, "Reading the page "+step.Name
		if step.Step == "extract" {
			code, what = apiwire.CodeExtractTimeout, "Reading the document "+strconv.Quote(step.Name)
		}
		if step.Request > 0 {
			// The request's clock ran out, not the step's: say so, with the
			// request's time, not the step's timeout.
			return errorRow{status: http.StatusInternalServerError, code: code,
				msg: fmt.Sprintf("%s was not finished when the request's time (%s in all) ran out, so the request was stopped. Try fewer or smaller documents and pages.", what, step.Request.Round(100*time.Millisecond))}
		}
		return errorRow{status: http.StatusInternalServerError, code: code,
			msg: fmt.Sprintf("%s took longer than %s, so the request was stopped. Try without it, or with a smaller one.", what, step.Timeout.Round(100*time.Millisecond))}
	case errors.Is(err, budget.ErrExhausted), errors.Is(err, budget.ErrClientTimeout), errors.Is(err, context.DeadlineExceeded):
		return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeDeadlineExceeded,
			msg: "The AI service did not answer in time, so the request was stopped. Try a shorter question or fewer sources; trying the same request again will likely take as long."}
	case errors.As(err, &tooBig):
		return errorRow{status: http.StatusRequestEntityTooLarge, code: apiwire.CodePromptTooLarge, msg: tooBig.Error()}
	case errors.As(err, &pageErr) && errors.Is(err, fetch.ErrBlocked):
		return errorRow{status: http.StatusUnprocessableEntity, code: apiwire.CodeURLBlocked,
			msg: fmt.Sprintf("The address %s cannot be read: only public http and https pages are allowed.", pageErr.URL)}
	case errors.As(err, &pageErr) && errors.Is(err, fetch.ErrUnreachable):
		return errorRow{status: http.StatusUnprocessableEntity, code: apiwire.CodeURLUnreachable,
			msg: fmt.Sprintf("The page %s could not be fetched (it did not answer, answered with an error, or is too large or not a readable type).", pageErr.URL)}
	case errors.As(err, &docErr) && errors.Is(err, extract.ErrUnsupported):
		return errorRow{status: http.StatusUnsupportedMediaType, code: apiwire.CodeUnsupportedDocument,
			msg: fmt.Sprintf("The document %q is of a type that cannot be read; send PDF, DOCX, HTML, plain text or Markdown.", docErr.Name)}
	case errors.As(err, &docErr) && errors.Is(err, extract.ErrUnreadable):
		return errorRow{status: http.StatusUnprocessableEntity, code: apiwire.CodeDocumentUnreadable,
			msg: fmt.Sprintf("The document %q cannot be read: it is damaged, protected, or too large once expanded.", docErr.Name)}
	case errors.As(err, &upErr):
		row := upstreamRow(upErr)
		row.inner = json.RawMessage(openaiwire.InnerError(upErr.Object))
		return row
	}
	return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeInternalError, msg: "Something went wrong on our side."}
}

// quotaStepRow is the answer when the quota store was still being asked
// as the request's own time ran out (the store's own deadline is
// quota_unavailable, retryable): it names the store, not the AI service
// or documents that were never sent. A question was not sent; a usage read
// has no number to show.
func quotaStepRow(step *budget.StepTimeout) errorRow {
	when := fmt.Sprintf("within %s", step.Timeout.Round(100*time.Millisecond))
	if step.Request > 0 {
		when = fmt.Sprintf("before the request's time (%s in all) ran out", step.Request.Round(100*time.Millisecond))
	}
	what := "your token quota could not be checked, so the question was not sent"
	if step.Name == quota.OpUsage {
		what = "your token usage could not be read"
	}
	return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeDeadlineExceeded,
		msg: fmt.Sprintf("The quota store did not answer %s: %s. Try again in a moment, or allow more time.", when, what)}
}

// callerRow never says more than the kind: the detail (which check
// failed) stays in the log, and nothing of the token is echoed.
func callerRow(e *caller.Error) errorRow {
	switch e.Kind {
	case caller.Unauthenticated:
		if errors.Is(e, caller.ErrAPIKey) {
			return errorRow{status: http.StatusUnauthorized, code: apiwire.CodeUnauthenticated, challenge: e.Challenge,
				msg: "This service takes no API key: send the request without the api-key header (where sign-in is required, with an access token in Authorization: Bearer)."}
		}
		return errorRow{status: http.StatusUnauthorized, code: apiwire.CodeUnauthenticated, challenge: e.Challenge,
			msg: "Sign in to use this service: the request carries no valid access token for it."}
	case caller.Forbidden:
		return errorRow{status: http.StatusForbidden, code: apiwire.CodeForbidden, challenge: e.Challenge,
			msg: "Your account is signed in but not allowed to use this service. Ask the site's administrators for access."}
	case caller.Unavailable:
		// Asking again before the keys may be fetched again is refused the
		// same way: the answer says when (at least a second, the unit of
		// Retry-After), and its message says it too.
		wait := max(e.RetryAfter, time.Second)
		return errorRow{status: http.StatusServiceUnavailable, code: apiwire.CodeAuthUnavailable, retryAfter: wait,
			msg: fmt.Sprintf("Sign-in cannot be checked right now. Try again in %d s.", ceilSeconds(wait))}
	}
	return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeInternalError, msg: "Something went wrong on our side."}
}

func upstreamRow(e *aoai.Error) errorRow {
	switch e.Kind {
	case aoai.KindThrottled:
		return errorRow{status: http.StatusTooManyRequests, code: apiwire.CodeRateLimited, retryAfter: e.RetryAfter,
			msg: fmt.Sprintf("The AI service is busy. Try again in %d s.", ceilSeconds(e.RetryAfter))}
	case aoai.KindTooLarge:
		return errorRow{status: http.StatusRequestEntityTooLarge, code: apiwire.CodePromptTooLarge,
			msg: "The request is too large for the AI deployment and can never pass its limits. Shorten the question, or send fewer sources or documents."}
	case aoai.KindFiltered:
		return errorRow{status: http.StatusBadRequest, code: apiwire.CodeContentFiltered,
			msg: "The question was blocked by the content filter. Rephrase it and try again."}
	case aoai.KindMisconfigured:
		return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeUpstreamMisconfigured,
			msg: "The service is not set up correctly to reach the AI deployment. Contact the site's administrators."}
	case aoai.KindCredential:
		// A configuration error, not a hiccup: every question fails alike
		// until the credential is fixed, so nothing asks again.
		return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeUpstreamAuthUnavailable,
			msg: "The service cannot sign in to Azure OpenAI, so the question was not sent. Its administrators find why in the handler's log: it needs an Entra ID sign-in that works (az login on a workstation, a managed identity in Azure) or an API key."}
	case aoai.KindSlowFailure:
		return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeUpstreamError,
			msg: "The AI service failed after a long wait. Trying the same request again will likely take as long; try a shorter question or fewer sources."}
	case aoai.KindUnavailable:
		// Azure OpenAI's own wait when its 503 named one; none otherwise, so
		// that each client keeps its own jittered backoff (docs/api.md).
		if e.RetryAfter > 0 {
			return errorRow{status: http.StatusServiceUnavailable, code: apiwire.CodeUpstreamUnavailable, retryAfter: e.RetryAfter,
				msg: fmt.Sprintf("The AI service is briefly unavailable. Try again in %d s.", ceilSeconds(e.RetryAfter))}
		}
		return errorRow{status: http.StatusServiceUnavailable, code: apiwire.CodeUpstreamUnavailable,
			msg: "The AI service is briefly unavailable. Try again in a moment."}
	case aoai.KindTransient:
		return errorRow{status: http.StatusBadGateway, code: apiwire.CodeUpstreamError,
			msg: "The AI service failed. Try again in a moment."}
	case aoai.KindBroken:
		// Not retryable, however fast: the answer had begun, and asking
		// again would start (and bill) another one.
		return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeUpstreamError,
			msg: "The AI service stopped in the middle of the answer; what it wrote so far is kept."}
	}
	return errorRow{status: http.StatusInternalServerError, code: apiwire.CodeInternalError, msg: "Something went wrong on our side."}
}

// The retry hints of an answer: what it tells a client's retry rule besides
// its status. The JSON answer carries them as headers (retry-after-ms,
// Retry-After, x-should-retry), a stream's error event before its first
// delta as fields (apiwire.StreamError), so that both are judged alike.

// retryAfterMs is the wait an answer asks for, in ms: a 429's (at least
// 1 s when Azure named none) or any other answer's that names one (the
// 503s overloaded, auth_unavailable, and upstream_unavailable when Azure's
// 503 named one); 0 when there is none.
func (a errorRow) retryAfterMs() int64 {
	if a.status != http.StatusTooManyRequests && a.retryAfter <= 0 {
		return 0
	}
	if ms := a.retryAfter.Milliseconds(); ms > 0 {
		return ms
	}
	return 1000
}

// shouldRetry is false on every answer the rule does not retry: clients
// retry only what the rule retries (after the wait, for a 429).
func (a errorRow) shouldRetry() bool { return !a.final && retry.Retryable(a.status) }

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// noteErr puts a failure's detail on the request's log line.
func noteErr(ctx context.Context, err error) {
	if err == nil {
		return
	}
	rec := recordFrom(ctx)
	var upErr *aoai.Error
	if errors.As(err, &upErr) {
		rec.attempts, rec.upstreamStatus, rec.upstreamID = upErr.Attempts, upErr.Status, upErr.UpstreamRequestID
		rec.backend, rec.trail = upErr.Backend, upErr.Trail
		billOf(ctx).backend = upErr.Backend
	}
	rec.err = err
}

// partialOf returns the text an upstream failure had received, if any.
func partialOf(err error) string {
	var upErr *aoai.Error
	if errors.As(err, &upErr) {
		return upErr.Partial
	}
	if wp := (*withPartial)(nil); errors.As(err, &wp) {
		return wp.partial
	}
	return ""
}

// A dialect writes the error table's rows as one wire dialect's answers:
// its error body, and its x-should-retry header.
type dialect interface {
	// errorBody is the JSON error body of row; partial is the text the
	// answer had reached, nil when none.
	errorBody(row errorRow, requestID string, partial *apiwire.PartialAnswer) any
	// shouldRetry is the x-should-retry header of row: "true", "false",
	// or "" for none.
	shouldRetry(row errorRow) string
}

// timeboxDialect is POST /api/chat's: {"error": {"code", "message",
// "requestId"}, "partial"?}, and x-should-retry: false on every answer
// the rule does not retry (its clients judge the rest by the rule).
type timeboxDialect struct{}

func (timeboxDialect) errorBody(row errorRow, requestID string, partial *apiwire.PartialAnswer) any {
	return apiwire.ErrorBody{Error: apiwire.Error{Code: row.code, Message: row.msg, RequestID: requestID}, Partial: partial}
}

func (timeboxDialect) shouldRetry(row errorRow) string {
	if !row.shouldRetry() {
		return "false"
	}
	return ""
}

// fail answers err with its row of the error table, written in the
// request's dialect (speaks), with the status and the retry headers every
// dialect shares, and hands the detail to the request's log line. A caller that went away gets nothing:
// there is nobody to read it, and the text generated for it is counted as
// abandoned. Text that had arrived goes with the error.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	rec, b, d := recordFrom(r.Context()), billOf(r.Context()), dialectOf(r.Context())
	noteErr(r.Context(), err)
	var partial *apiwire.PartialAnswer
	if text := partialOf(err); text != "" {
		// Counted as its pieces arrived (tally): the answer goes out now.
		partial = &apiwire.PartialAnswer{Answer: text, CompletionTokens: b.tally.of(text)}
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil && !errors.Is(context.Cause(r.Context()), budget.ErrExhausted) {
		rec.code, b.gone = codeClientGone, true
		if partial != nil {
			b.abandoned = partial.CompletionTokens
		}
		return
	}
	row := rowFor(err)
	rec.code = row.code
	h := w.Header()
	if ms := row.retryAfterMs(); ms > 0 {
		h.Set("Retry-After", strconv.FormatInt(max(ceilSeconds(row.retryAfter), 1), 10))
		h.Set("retry-after-ms", strconv.FormatInt(ms, 10))
	}
	if row.challenge != "" {
		h.Set("WWW-Authenticate", row.challenge)
	}
	if v := d.shouldRetry(row); v != "" {
		h.Set("x-should-retry", v)
	}
	stampTiming(w, r)
	if partial != nil {
		b.completion = partial.CompletionTokens
	}
	writeJSON(w, row.status, d.errorBody(row, requestID(r.Context()), partial))
}

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, marshal(v))
}

// marshal is v's JSON. Every value written here is a struct of strings and
// numbers of this package's own or openaiwire's; a failure is a
// programming error, answered as one.
func marshal(v any) []byte {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("api: encode an answer: %v", err))
	}
	return body
}

// writeBody writes body, a JSON value, as the answer's body with status.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Its length, so that the whole answer can leave before the log line
	// is written (sendWhole).
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// sizeForPeople writes a byte limit as an end user reads it: "16 MiB", not
// "16777216 bytes".
func sizeForPeople(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
