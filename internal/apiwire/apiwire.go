// Package apiwire holds the error body of timebox's HTTP API (docs/api.md),
// the wire of a long answer delivered across hops (the 202 in-progress
// body, the stream's continue event, the cursor request of
// /api/chat/continue and /api/chat/cancel) and the usage body of
// GET /api/usage, spelled once for both ends: the
// server (package api) writes them, the Go client (package client) and the
// tests read them. It depends on the standard library only, so the CLI that
// imports it does not carry the server.
package apiwire

import "time"

// ErrorBody is the body of every error answer:
// {"error": {"code", "message", "requestId"}, "partial"?}.
type ErrorBody struct {
	Error Error `json:"error"`
	// Partial is the text the answer had reached when it failed, on a JSON
	// answer to a caller that does not stream; nil when there was none.
	Partial *PartialAnswer `json:"partial,omitempty"`
}

// Error is what went wrong: a stable code (docs/api.md lists them all), a
// message an end user can read, and the request's id for support.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// PartialAnswer is the text an answer had reached when it failed, sent
// with the error to a caller that does not stream (a streaming caller has
// had it already, as deltas).
type PartialAnswer struct {
	Answer           string `json:"answer"`
	CompletionTokens int    `json:"completionTokens"`
}

// StreamError is the data of a stream's error event (docs/api.md,
// "Streaming"), the last event of a stream that ends without its answer.
type StreamError struct {
	Error Error `json:"error"`
	// Partial is true when pieces of the answer (delta events) came before
	// the error: they are all of it there will be, and asking again would
	// start, and bill, another answer, so nothing is retried. False when
	// none came: the attempt failed before its first token, only a
	// keep-alive had committed the 200, and the fields below are what the
	// JSON answer would have said, for the client's retry rule to judge it
	// exactly as that answer.
	Partial bool `json:"partial"`
	// Status is the HTTP status of the JSON answer; only when Partial is false.
	Status int `json:"status,omitempty"`
	// RetryAfterMs is its retry-after-ms header (a 429's wait, or a 503's
	// that names one); 0 when none.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	// ShouldRetry is false where its x-should-retry header says false;
	// only when Partial is false.
	ShouldRetry *bool `json:"shouldRetry,omitempty"`
}

// The codes of the server's error answers (docs/api.md, "Errors"). A code is
// stable: clients and operators match on it, never on the message.
const (
	CodeInvalidRequest          = "invalid_request"
	CodeUnknownParameter        = "unknown_parameter" // the OpenAI surface: a field it does not take
	CodeModelNotFound           = "model_not_found"   // the OpenAI surface: a model it does not serve
	CodeUnsupportedMediaType    = "unsupported_media_type"
	CodeBodyTooLarge            = "body_too_large"
	CodePromptTooLarge          = "prompt_too_large"
	CodeNotFound                = "not_found"
	CodeMethodNotAllowed        = "method_not_allowed"
	CodeOriginNotAllowed        = "origin_not_allowed"
	CodeUnauthenticated         = "unauthenticated"
	CodeForbidden               = "forbidden"
	CodeAuthUnavailable         = "auth_unavailable"
	CodeOverloaded              = "overloaded"
	CodeDeadlineExceeded        = "deadline_exceeded"
	CodeFetchTimeout            = "fetch_timeout"
	CodeExtractTimeout          = "extract_timeout"
	CodeURLBlocked              = "url_blocked"
	CodeURLUnreachable          = "url_unreachable"
	CodeUnsupportedDocument     = "unsupported_document"
	CodeDocumentUnreadable      = "document_unreadable"
	CodeContentFiltered         = "content_filtered"
	CodeRateLimited             = "rate_limited"
	CodeUpstreamUnavailable     = "upstream_unavailable"
	CodeUpstreamError           = "upstream_error"
	CodeUpstreamMisconfigured   = "upstream_misconfigured"
	CodeUpstreamAuthUnavailable = "upstream_auth_unavailable"
	CodeQuotaExceeded           = "quota_exceeded"
	CodeQuotaUnavailable        = "quota_unavailable"
	CodeInternalError           = "internal_error"
	CodeCancelled               = "cancelled" // a long answer's hop whose generation a cancel stopped
)

// The wire of a long answer, delivered across hops (docs/api.md, "Long
// answers").

// StatusInProgress is the status of a 202 answer: the answer is still
// being written.
const StatusInProgress = "in_progress"

// CursorRequest is the body of POST /api/chat/continue and
// POST /api/chat/cancel.
type CursorRequest struct {
	Cursor string `json:"cursor"`
}

// Continue is the data of a stream's continue event: the stream's hop is
// over, the answer is still being written, and POST /api/chat/continue with
// the cursor goes on where the stream stopped.
type Continue struct {
	Cursor string `json:"cursor"`
}

// InProgress is the 202 body of POST /api/chat and /api/chat/continue to a
// caller that does not stream, when the hop ended before the answer: the
// answer so far, and the cursor to continue with.
type InProgress struct {
	Status  string        `json:"status"`
	Cursor  string        `json:"cursor"`
	Partial PartialAnswer `json:"partial"`
}

// Usage is the 200 body of GET /api/usage: the caller's quota windows; a
// window is nil when its limit is not set.
type Usage struct {
	User struct {
		Day *UsageWindow `json:"day,omitempty"`
	} `json:"user"`
	Tenant struct {
		Month *UsageWindow `json:"month,omitempty"`
	} `json:"tenant"`
}

// UsageWindow is one window of a quota, in tokens.
type UsageWindow struct {
	Used     int64     `json:"used"`
	Reserved int64     `json:"reserved"`
	Limit    int64     `json:"limit"`
	ResetsAt time.Time `json:"resetsAt"`
}
