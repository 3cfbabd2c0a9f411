// Package client is the Go twin of @timebox/client (client/src): it calls a
// timebox Function App with the fast-failure retry rule of package retry (a
// failed attempt is retried only when it came back fast, with a status the
// rule retries, and a wait that fits the time left), and turns the attempt
// that ends a call into a readable *CallError. The CLI (cmd/timebox) is its
// user.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/apiwire"
	"github.com/timebox-dev/timebox/internal/retry"
)

// maxBody caps what is read of one response.
const maxBody = 4 << 20

// Client calls one Function App. Its fields are read, never changed, by
// Call, so one Client serves calls at once.
type Client struct {
	// BaseURL is the Function App's base URL, without a trailing slash.
	BaseURL string
	// Key is sent as x-functions-key when set; Token as a bearer token.
	Key, Token string
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Policy is the retry rule's settings.
	Policy retry.Policy
	// Timeout bounds a whole call, every attempt and wait included.
	Timeout time.Duration
	// AttemptTimeout bounds one attempt (shrunk to the time left) and is
	// sent as x-client-timeout-ms, so the server answers before it runs out.
	AttemptTimeout time.Duration
	// Log gets one line per attempt, and where the server says the last
	// attempt's time went; nil means no lines.
	Log io.Writer

	// part is the long answer's part a call asks for (Follow's hop), 0
	// outside Follow: the attempt's line says a hop that ended before the
	// answer as the part it is, not as a success.
	part int
}

// Result is the answer of a call that succeeded (2xx).
type Result struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int           // attempts made, the first included
	Elapsed  time.Duration // the whole call, waits included
	// Cursor is set when a long answer's hop ended before the answer: a
	// stream's continue event. Follow goes on with it.
	Cursor string
}

// Call sends method path (with body, JSON, when not nil) under the rule. It
// returns the 2xx Result, or the *CallError of the attempt that ended the
// call, or the cause of ctx when ctx ended first.
func (c *Client) Call(ctx context.Context, method, path string, body []byte) (Result, error) {
	return c.call(ctx, method, path, body, nil)
}

// Stream is Call for POST path asking for server-sent events: onDelta gets
// each piece of the answer as it arrives, and the Result's Body is the data
// of the done event (the JSON 200's object). Attempts are retried under the
// rule until the first piece of the answer; never after it (the text would
// be written twice). A stream that ends otherwise than with done is a
// *CallError: the server's error event (its code and message), or the
// connection lost mid-answer (code stream_broken).
func (c *Client) Stream(ctx context.Context, path string, body []byte, onDelta func(string)) (Result, error) {
	return c.call(ctx, http.MethodPost, path, body, onDelta)
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, onDelta func(string)) (Result, error) {
	start := time.Now()
	deadline := start.Add(c.Timeout)
	for n := 1; ; n++ {
		// The attempt may use no more than the time left, and tells the
		// server so: the server answers before x-client-timeout-ms runs out.
		attemptTimeout := max(min(c.AttemptTimeout, time.Until(deadline)), time.Millisecond)
		a := c.attempt(ctx, method, path, body, attemptTimeout, onDelta)
		if ctx.Err() != nil {
			return Result{}, context.Cause(ctx)
		}
		if a.streamErr != nil {
			c.logf("attempt %d: %s in %s -> stop: the answer had begun\n", n, a.streamErr.Code, a.elapsed.Round(time.Millisecond))
			a.streamErr.Attempts, a.streamErr.Elapsed = n, time.Since(start)
			return Result{}, a.streamErr
		}
		if a.status >= 200 && a.status < 300 {
			c.logf("attempt %d: status %d in %s -> %s\n", n, a.status, a.elapsed.Round(time.Millisecond), c.outcome(a))
			return Result{Status: a.status, Header: a.header, Body: a.body, Attempts: n, Elapsed: time.Since(start), Cursor: a.cursor}, nil
		}
		now := time.Now()
		d := c.Policy.Decide(retry.Attempt{Number: n, Elapsed: a.elapsed, Status: a.status, Header: a.header, Remaining: deadline.Sub(now), Now: now})
		c.logf("attempt %d: %s in %s -> %s\n", n, a.describe(), a.elapsed.Round(time.Millisecond), describe(d))
		if !d.Retry {
			if c.Log != nil {
				PrintServerTiming(c.Log, a.header)
			}
			return Result{}, a.callError(n, time.Since(start), d, attemptTimeout)
		}
		t := time.NewTimer(d.Wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Result{}, context.Cause(ctx)
		}
	}
}

// outcome is what a 2xx attempt's line says it was: in a long answer, a
// hop that ended before the answer (a 202, or a stream's continue event)
// is a part of it; else a success.
func (c *Client) outcome(a attemptResult) string {
	switch {
	case c.part > 0 && (a.status == http.StatusAccepted || a.cursor != ""):
		return fmt.Sprintf("part %d of the answer, still writing", c.part)
	case c.part > 1:
		return fmt.Sprintf("success: part %d, the end of the answer", c.part)
	}
	return "success"
}

func (c *Client) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format, args...)
	}
}

// PrintServerTiming prints where the server says an attempt's time went
// (its Server-Timing header: "upstream;dur=812.0, total;dur=815.2"), so an
// operator sees at once whether Azure OpenAI or timebox was slow.
func PrintServerTiming(w io.Writer, h http.Header) {
	var parts []string
	for _, entry := range strings.Split(h.Get("Server-Timing"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(entry), ";")
		for _, p := range strings.Split(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "dur="); ok && name != "" {
				parts = append(parts, name+" "+v+" ms")
			}
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "server timing: %s\n", strings.Join(parts, ", "))
	}
}

// attemptResult is what one attempt brought back.
type attemptResult struct {
	status   int // 0: network error or attempt timeout
	header   http.Header
	body     []byte
	elapsed  time.Duration
	err      error
	timedOut bool
	errBody  apiwire.ErrorBody
	// streamErr ends a stream that had begun: never retried.
	streamErr *CallError
	// cursor is the continue event's: the stream's hop ended before the
	// answer.
	cursor string
	// inEvent: status, header and errBody came in a stream's error event
	// before its first piece (the 200 was committed by a keep-alive).
	inEvent bool
}

func (c *Client) attempt(ctx context.Context, method, path string, body []byte, timeout time.Duration, onDelta func(string)) attemptResult {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, c.BaseURL+path, rd)
	if err != nil {
		return attemptResult{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if onDelta != nil {
		req.Header.Set("Accept", "text/event-stream, application/json;q=0.5")
	}
	req.Header.Set("User-Agent", "timebox-cli")
	req.Header.Set("x-client-timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10))
	if c.Key != "" {
		req.Header.Set("x-functions-key", c.Key)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	start := time.Now()
	resp, err := hc.Do(req)
	var r attemptResult
	if err == nil && onDelta != nil && isEventStream(resp) {
		r = readStream(resp, onDelta)
		r.elapsed = time.Since(start)
		if r.streamErr != nil || r.status != 0 {
			return r
		}
		// Lost before the first piece of the answer: judged by the rule
		// like any other network error.
		r.timedOut = errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		return r
	}
	if err == nil {
		r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		_ = resp.Body.Close()
		if err == nil {
			r.status, r.header = resp.StatusCode, resp.Header
			_ = json.Unmarshal(r.body, &r.errBody)
		}
	}
	r.elapsed = time.Since(start)
	if err != nil {
		// A network error, or the attempt's own timeout, before or during
		// the body: both are status 0 for the rule.
		r.status, r.header, r.body, r.err = 0, nil, nil, err
		r.timedOut = errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	}
	return r
}

func (r attemptResult) describe() string {
	switch {
	case r.timedOut:
		return "no answer (attempt timeout)"
	case r.status == 0:
		return fmt.Sprintf("network error (%v)", r.err)
	case r.inEvent:
		return fmt.Sprintf("status %d %s (in an error event after a keep-alive)", r.status, r.errBody.Error.Code)
	case r.errBody.Error.Code != "":
		return fmt.Sprintf("status %d %s", r.status, r.errBody.Error.Code)
	}
	return fmt.Sprintf("status %d", r.status)
}

func describe(d retry.Decision) string {
	switch d.Reason {
	case retry.ReasonRetry:
		return fmt.Sprintf("retry after %s", d.Wait.Round(time.Millisecond))
	case retry.ReasonWaitTooLong:
		return fmt.Sprintf("stop: %s (%s)", d.Reason, d.Wait.Round(time.Millisecond))
	case retry.ReasonSlowFailure:
		return fmt.Sprintf("stop: %s, a timeout", d.Reason)
	}
	return fmt.Sprintf("stop: %s", d.Reason)
}
