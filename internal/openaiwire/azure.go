package openaiwire

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// azureError is the part of Azure OpenAI's error object this package
// passes on.
type azureError struct {
	Message    string         `json:"message"`
	Param      *string        `json:"param"`
	Code       *string        `json:"code"`
	Innererror jsontext.Value `json:"innererror"`
}

// InnerError is the innererror of Azure OpenAI's error object obj (its
// content filter's verdict: code ResponsibleAIPolicyViolation and
// content_filter_result), as Azure sent it; nil when there is none.
func InnerError(obj []byte) jsontext.Value {
	var e azureError
	if len(obj) == 0 || json.Unmarshal(obj, &e, lenient) != nil || e.Innererror.Kind() != '{' {
		return nil
	}
	return e.Innererror
}

// Rejected is the 400 a caller gets when Azure OpenAI refused, with a 400,
// a field of the request this dialect passed on as it came (a tool's
// schema, a response_format, reasoning_effort on a model that does not
// reason): Azure's own message, param and code, which name the caller's
// field. nil when obj is no such error object.
func Rejected(obj []byte) *Error {
	var e azureError
	if len(obj) == 0 || json.Unmarshal(obj, &e, lenient) != nil || e.Message == "" {
		return nil
	}
	out := Invalid("", e.Message)
	if e.Param != nil {
		out.Param = *e.Param
	}
	if e.Code != nil && *e.Code != "" {
		out.Code = *e.Code
	}
	return out
}

// Timeout reads X-Stainless-Timeout, the request's timeout in whole seconds
// that the Stainless-generated SDKs (openai-node, openai-python, openai-go)
// send when one is set, as it is by default: 0 when absent. A value that is
// not one positive whole number is an *Error.
func Timeout(h http.Header) (time.Duration, error) {
	vs := h.Values("X-Stainless-Timeout")
	if len(vs) == 0 {
		return 0, nil
	}
	s, err := strconv.ParseInt(strings.TrimSpace(vs[0]), 10, 64)
	if len(vs) > 1 || err != nil || s <= 0 || s > 24*60*60 {
		return 0, Invalid("", "X-Stainless-Timeout must be one whole number of seconds, from 1 to 86400.")
	}
	return time.Duration(s) * time.Second, nil
}
