package openaiwire

import (
	"math"
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

// FilterVerdict is the innererror of the error frame that ends a stream
// the content filter stopped (finish_reason "content_filter"): Azure
// OpenAI's content_filter_results of the chunk that tripped it, as Azure
// sent them, under the names of Azure's own 400 for a filtered prompt
// (code ResponsibleAIPolicyViolation, content_filter_result), so that a
// caller reads the verdict in one place whichever part was filtered.
// chunks are the stream's last chunks, the latest first; nil when none
// has a category filtered.
func FilterVerdict(chunks ...string) jsontext.Value {
	for _, data := range chunks {
		var c struct {
			Choices []struct {
				Index                int            `json:"index"`
				ContentFilterResults jsontext.Value `json:"content_filter_results"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &c, lenient) != nil {
			continue
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 || !anyFiltered(ch.ContentFilterResults) {
				continue
			}
			v, err := json.Marshal(struct {
				Code   string         `json:"code"`
				Result jsontext.Value `json:"content_filter_result"`
			}{"ResponsibleAIPolicyViolation", ch.ContentFilterResults})
			if err != nil {
				return nil
			}
			return v
		}
	}
	return nil
}

// anyFiltered reports whether content_filter_results has a category
// (hate, violence, a blocklist, ...) marked filtered.
func anyFiltered(results jsontext.Value) bool {
	if results.Kind() != '{' {
		return false
	}
	var categories map[string]jsontext.Value
	if json.Unmarshal(results, &categories, lenient) != nil {
		return false
	}
	for _, v := range categories {
		var c struct {
			Filtered bool `json:"filtered"`
		}
		if v.Kind() == '{' && json.Unmarshal(v, &c, lenient) == nil && c.Filtered {
			return true
		}
	}
	return false
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

// maxTimeout is the longest SDK timeout read: a day. A longer one cannot
// shorten any budget.
const maxTimeout = 24 * time.Hour

// Timeouts are what the Stainless-generated SDKs' timeout headers bound,
// each SDK's as its source applies it; 0 where they bound nothing. A
// whole answer's bytes come at its end, so for an answer written whole
// every bound is a bound on the whole wait; they differ for a stream.
type Timeouts struct {
	// Whole bounds the whole answer, a stream's last byte included:
	// openai-go's request timeout (option.WithRequestTimeout) is a context
	// timeout on the request that the response body keeps until it is
	// closed (internal/requestconfig's bodyWithTimeout). openai-node's
	// X-Stainless-Timeout is told from it by X-Stainless-Lang "js" (First);
	// any other SDK's counts as a whole bound, the safe reading.
	Whole time.Duration
	// First bounds the wait for the answer's headers: openai-node's timeout
	// is a timer on fetch() that is cleared once the headers arrive (the
	// body is then read with no bound), and openai-python's read timeout
	// bounds each read, the headers' included.
	First time.Duration
	// Gap is the longest silence a begun stream may keep: openai-python's
	// read timeout bounds every wait for the next bytes (httpx's read
	// timeout, applied to each read of the body).
	Gap time.Duration
}

// KeepAlive is how long a begun stream may stay silent: longest, or half
// the SDK's Gap when that is shorter, so that a comment always comes
// before the SDK's read timer ends a live stream.
func (t Timeouts) KeepAlive(longest time.Duration) time.Duration {
	if t.Gap > 0 && t.Gap/2 < longest {
		return t.Gap / 2
	}
	return longest
}

// Timeout reads the request's timeouts as the Stainless-generated SDKs send
// them (Timeouts): X-Stainless-Timeout, in whole seconds (openai-node,
// openai-go), and X-Stainless-Read-Timeout, in seconds written as a decimal
// ("600.0": openai-python, on every request). A value that is not one
// positive number of seconds, whole for X-Stainless-Timeout and at most a
// day there, is an *Error; a read timeout over a day counts as a day. An
// X-Stainless-Timeout of 0 is a timeout under a second, which the SDKs
// truncate to whole seconds (openai-node's Math.trunc(ms / 1000)): it is
// read as a second, too short for any answer, not as a bad header.
func Timeout(h http.Header) (Timeouts, error) {
	var t Timeouts
	if vs := h.Values("X-Stainless-Timeout"); len(vs) > 0 {
		s, err := strconv.ParseInt(strings.TrimSpace(vs[0]), 10, 64)
		if len(vs) > 1 || err != nil || s < 0 || s > int64(maxTimeout/time.Second) {
			return Timeouts{}, Invalid("", "X-Stainless-Timeout must be one whole number of seconds, from 0 to 86400.")
		}
		s = max(s, 1)
		if h.Get("X-Stainless-Lang") == "js" {
			t.First = time.Duration(s) * time.Second
		} else {
			t.Whole = time.Duration(s) * time.Second
		}
	}
	if vs := h.Values("X-Stainless-Read-Timeout"); len(vs) > 0 {
		s, err := strconv.ParseFloat(strings.TrimSpace(vs[0]), 64)
		if len(vs) > 1 || err != nil || !(s > 0) || math.IsInf(s, 0) {
			return Timeouts{}, Invalid("", "X-Stainless-Read-Timeout must be one positive number of seconds.")
		}
		read := maxTimeout
		if s < maxTimeout.Seconds() {
			read = max(time.Duration(s*float64(time.Second)), time.Nanosecond)
		}
		t.Gap = read
		if t.First == 0 || read < t.First {
			t.First = read
		}
	}
	return t, nil
}
