package client

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// CallError is the readable error of a call that gave up: what the server
// said and what the rule decided. Error() is fit for an operator's terminal.
type CallError struct {
	Status     int           // last HTTP status; 0 for a network error or an attempt timeout
	Code       string        // the server's code, or network_error / attempt_timeout / http_<status>
	Message    string        // the server's message, or a description of the failure
	RequestID  string        // the server's request id, when it answered
	Attempts   int           // attempts made
	Elapsed    time.Duration // time spent on the whole call, waits included
	RetryAfter time.Duration // the wait the server asked for; 0 when none
	Timeout    bool          // a slow failure, the server's deadline_exceeded, or an attempt timeout
	Reason     retry.Reason  // why the rule stopped

	// serverSaysWhen: the answer carried retry-after-ms, and timebox's
	// message with it already says when to try again (docs/api.md).
	serverSaysWhen bool
}

// Error says what happened in one line.
func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	// Say when to try again, once: timebox's message says it wherever the
	// answer names the wait in retry-after-ms.
	if e.Reason == retry.ReasonWaitTooLong && e.RetryAfter > 0 && !e.serverSaysWhen {
		fmt.Fprintf(&b, " Try again in %d s.", int(math.Ceil(e.RetryAfter.Seconds())))
	}
	fmt.Fprintf(&b, " (status %d, code %s", e.Status, e.Code)
	if e.RequestID != "" {
		fmt.Fprintf(&b, ", request id %s", e.RequestID)
	}
	fmt.Fprintf(&b, ", %d attempt(s) in %s, %s", e.Attempts, e.Elapsed.Round(time.Millisecond), e.Reason)
	if e.Timeout {
		b.WriteString(", judged a timeout")
	}
	b.WriteString(")")
	return b.String()
}

func (r attemptResult) callError(attempts int, elapsed time.Duration, d retry.Decision, attemptTimeout time.Duration) *CallError {
	e := &CallError{
		Status:    r.status,
		Code:      r.errBody.Error.Code,
		Message:   r.errBody.Error.Message,
		RequestID: r.errBody.Error.RequestID,
		Attempts:  attempts,
		Elapsed:   elapsed,
		Timeout:   d.Timeout || r.timedOut || r.errBody.Error.Code == apiwire.CodeDeadlineExceeded,
		Reason:    d.Reason,
	}
	e.serverSaysWhen = r.header.Get("retry-after-ms") != "" && e.Message != ""
	if e.RequestID == "" && r.header != nil {
		e.RequestID = r.header.Get("x-request-id")
	}
	if w, ok := retry.ServerWait(r.header, time.Now()); ok {
		e.RetryAfter = w
	} else if d.Reason == retry.ReasonWaitTooLong {
		e.RetryAfter = d.Wait
	}
	switch {
	case e.Code != "":
	case r.timedOut:
		e.Code = "attempt_timeout"
	case r.status == 0:
		e.Code = "network_error"
	default:
		e.Code = "http_" + strconv.Itoa(r.status)
	}
	if e.Message == "" {
		switch {
		case r.timedOut:
			e.Message = fmt.Sprintf("The service did not answer within %s.", attemptTimeout.Round(time.Millisecond))
		case r.status == 0:
			e.Message = fmt.Sprintf("The service could not be reached: %v.", r.err)
		default:
			e.Message = fmt.Sprintf("The service answered with HTTP %d.", r.status)
		}
	}
	return e
}
