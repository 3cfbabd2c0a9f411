package openaiwire

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// The error types of OpenAI's error object, by status (TypeFor).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeRateLimit      = "rate_limit_error"
	TypeServer         = "server_error"
)

// Error is an OpenAI-shaped refusal of a request, before anything is sent
// upstream. Param names the field at fault ("" for none).
type Error struct {
	Status  int
	Type    string
	Param   string
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Invalid is a 400 invalid_request naming param.
func Invalid(param, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Param: param, Code: apiwire.CodeInvalidRequest, Message: message}
}

// ErrorBody is the body of every failure, and the data of a stream's
// error frame: {"error": {"message", "type", "param", "code"}}, param and
// code null when there is none, and Azure OpenAI's innererror (its
// content_filter_result, when its filter refused the prompt) as Azure
// sent it.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the error itself.
type ErrorObject struct {
	Message    string         `json:"message"`
	Type       string         `json:"type"`
	Param      *string        `json:"param"`
	Code       *string        `json:"code"`
	Innererror jsontext.Value `json:"innererror,omitempty"`
}

// NewError is the error object of an answer with status and code, naming
// param ("" for none).
func NewError(status int, code, message, param string) ErrorBody {
	e := ErrorBody{Error: ErrorObject{Message: message, Type: TypeFor(status)}}
	if code != "" {
		e.Error.Code = &code
	}
	if param != "" {
		e.Error.Param = &param
	}
	return e
}

// TypeFor is the error type OpenAI gives with status.
func TypeFor(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return TypeAuthentication
	case status == http.StatusForbidden:
		return TypePermission
	case status == http.StatusTooManyRequests:
		return TypeRateLimit
	case status >= 500:
		return TypeServer
	}
	return TypeInvalidRequest
}

// ShouldRetry is the x-should-retry of a failure with status that asks the
// caller to wait retryAfter (0: it names no wait), under the fast-failure
// threshold fastFailure: the client rule of package retry applied to the
// answer as the SDK will see it, with the threshold as the longest wait
// worth taking. The SDKs obey x-should-retry before the status, and wait
// any Retry-After up to a minute: so true only for a failure the rule
// retries (a gateway status, a throttle, a network error) whose wait fits
// under the threshold; false for everything else, the deadline's 500 and
// every 4xx included.
func ShouldRetry(status int, retryAfter, fastFailure time.Duration) bool {
	var h http.Header
	if retryAfter > 0 {
		h = http.Header{"Retry-After-Ms": {strconv.FormatInt(retryAfter.Milliseconds(), 10)}}
	}
	p := retry.Policy{FastFailure: fastFailure, MaxWait: fastFailure}
	return p.Decide(retry.Attempt{Number: 1, Status: status, Header: h, Remaining: retry.Unbounded}).Retry
}
