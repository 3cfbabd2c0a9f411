package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/retry"
)

// maxBody caps what is read of one response.
const maxBody = 4 << 20

// errUsage marks a command line that cannot run; the usage was printed.
var errUsage = errors.New("usage: timebox ask --url URL [--key K | --token T] [--timeout D] [--attempt-timeout D] [--attempts N] [--threshold D] QUESTION\n       timebox health --url URL [--key K | --token T] [--timeout D] [--attempts N] [--threshold D]")

// run is the composition root: it parses args (without the program name,
// like the other commands), reads TIMEBOX_URL, TIMEBOX_KEY and TIMEBOX_TOKEN from getenv as
// defaults for the flags, and runs the subcommand with a plain http.Client.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdout, stderr, &http.Client{})
}

// runWith is run with the HTTP client given, so that tests can use an
// in-memory network inside a synctest bubble.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, client *http.Client) error {
	if len(args) < 1 || (args[0] != "ask" && args[0] != "health") {
		fmt.Fprintln(stderr, errUsage)
		return errUsage
	}
	cfg, err := parse(args[0], args[1:], getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.command == "health" {
		return health(ctx, cfg, client, stdout, stderr)
	}
	return ask(ctx, cfg, client, stdout, stderr)
}

// askConfig is the parsed command line of timebox ask or timebox health.
type askConfig struct {
	command        string // "ask" or "health"
	baseURL        string
	key, token     string
	timeout        time.Duration // whole command, attempts and waits included
	attemptTimeout time.Duration // one attempt, sent as x-client-timeout-ms
	policy         retry.Policy
	question       string
}

func parse(command string, args []string, getenv func(string) string, stderr io.Writer) (askConfig, error) {
	c := askConfig{command: command}
	// A health check is quick or it is not healthy; a question may take the
	// whole budget, and retries on top.
	timeout, attemptTimeout := 5*time.Minute, 230*time.Second
	if command == "health" {
		timeout, attemptTimeout = time.Minute, 30*time.Second
	}
	fs := flag.NewFlagSet("timebox "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, errUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.baseURL, "url", getenv("TIMEBOX_URL"), "Function App base `URL`, e.g. https://app.azurewebsites.net or http://127.0.0.1:7071 (env TIMEBOX_URL)")
	fs.StringVar(&c.key, "key", getenv("TIMEBOX_KEY"), "function `key`, sent as x-functions-key (env TIMEBOX_KEY)")
	fs.StringVar(&c.token, "token", getenv("TIMEBOX_TOKEN"), "bearer `token` for App Service Authentication (env TIMEBOX_TOKEN)")
	fs.DurationVar(&c.timeout, "timeout", timeout, "overall deadline: every attempt and wait included")
	fs.DurationVar(&c.attemptTimeout, "attempt-timeout", attemptTimeout, "one attempt's timeout, sent as x-client-timeout-ms (shrunk to the time left)")
	fs.IntVar(&c.policy.MaxAttempts, "attempts", retry.DefaultMaxAttempts, "attempts in all, the first included")
	fs.DurationVar(&c.policy.FastFailure, "threshold", retry.DefaultFastFailure, "a failed attempt that took at least this long is a timeout and is not retried")
	if err := fs.Parse(args); err != nil {
		return c, errUsage
	}
	c.question = strings.TrimSpace(strings.Join(fs.Args(), " "))
	var problems []error
	if u, err := url.Parse(c.baseURL); c.baseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, errors.New("--url must be an http or https base URL"))
	}
	switch {
	case command == "ask" && c.question == "":
		problems = append(problems, errors.New("a question is required"))
	case command == "health" && c.question != "":
		problems = append(problems, errors.New("health takes no question"))
	}
	if c.key != "" && c.token != "" {
		problems = append(problems, errors.New("give --key or --token, not both"))
	}
	if c.timeout <= 0 || c.attemptTimeout <= 0 || c.policy.FastFailure <= 0 {
		problems = append(problems, errors.New("--timeout, --attempt-timeout and --threshold must be positive"))
	}
	if c.policy.MaxAttempts < 1 {
		problems = append(problems, errors.New("--attempts must be at least 1"))
	}
	if err := errors.Join(problems...); err != nil {
		fmt.Fprintln(stderr, errUsage)
		return c, err
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	return c, nil
}

// chatResponse is the 200 body of POST /api/chat (docs/api.md).
type chatResponse struct {
	Answer       string `json:"answer"`
	FinishReason string `json:"finishReason"`
	Usage        struct {
		PromptTokens     int `json:"promptTokens"`
		CompletionTokens int `json:"completionTokens"`
		TotalTokens      int `json:"totalTokens"`
	} `json:"usage"`
	RequestID        string  `json:"requestId"`
	ElapsedMs        float64 `json:"elapsedMs"`
	UpstreamAttempts int     `json:"upstreamAttempts"`
}

// errorBody is the error body of every timebox route.
type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"requestId"`
	} `json:"error"`
}

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
}

// Error says what happened in one line.
func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	// The server's message may already say when; say it once.
	if e.Reason == retry.ReasonWaitTooLong && e.RetryAfter > 0 && !saysWhen(e.Message) {
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

// saysWhen reports whether a message already tells the reader when to try
// again. It only shapes the text shown to a person.
func saysWhen(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "try again in")
}

// ask sends the question with the rule and prints one line per attempt to
// stderr and the answer to stdout.
func ask(ctx context.Context, c askConfig, client *http.Client, stdout, stderr io.Writer) error {
	body, err := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": c.question}}})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	res, n, elapsed, err := call(ctx, c, client, http.MethodPost, "/api/chat", body, stderr)
	if err != nil {
		return err
	}
	var r chatResponse
	if err := json.Unmarshal(res.body, &r); err != nil {
		return &CallError{Status: res.status, Code: "invalid_response", Message: "The service sent an answer that could not be read.", RequestID: res.header.Get("x-request-id"), Attempts: n, Elapsed: elapsed, Reason: retry.ReasonNotRetryable}
	}
	fmt.Fprintln(stdout, r.Answer)
	fmt.Fprintf(stderr, "request id %s, finish %s, upstream attempts %d, server time %s, tokens %d prompt + %d completion\n",
		r.RequestID, r.FinishReason, r.UpstreamAttempts, time.Duration(r.ElapsedMs)*time.Millisecond, r.Usage.PromptTokens, r.Usage.CompletionTokens)
	printServerTiming(stderr, res.header)
	return nil
}

// health checks GET /api/health with the rule: the deployment answers, from
// behind its front end and authentication, with status ok. It prints the
// version deployed; no Azure OpenAI call is made.
func health(ctx context.Context, c askConfig, client *http.Client, stdout, stderr io.Writer) error {
	res, n, elapsed, err := call(ctx, c, client, http.MethodGet, "/api/health", nil, stderr)
	if err != nil {
		return err
	}
	var h struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(res.body, &h); err != nil || h.Status != "ok" {
		return &CallError{Status: res.status, Code: "invalid_response", Message: "The service answered, but not with a health report: is the URL the Function App's?", RequestID: res.header.Get("x-request-id"), Attempts: n, Elapsed: elapsed, Reason: retry.ReasonNotRetryable}
	}
	fmt.Fprintf(stdout, "%s, version %s\n", h.Status, h.Version)
	fmt.Fprintf(stderr, "request id %s, %d attempt(s) in %s\n", res.header.Get("x-request-id"), n, elapsed.Round(time.Millisecond))
	return nil
}

// call sends method path with the rule and prints one line per attempt to
// stderr. It returns the 2xx result, the number of attempts and the time
// spent, or the *CallError of the attempt that ended it.
func call(ctx context.Context, c askConfig, client *http.Client, method, path string, body []byte, stderr io.Writer) (result, int, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(c.timeout)
	for n := 1; ; n++ {
		// The attempt may use no more than the time left, and tells the
		// server so: the server answers before x-client-timeout-ms runs out.
		attemptTimeout := max(min(c.attemptTimeout, time.Until(deadline)), time.Millisecond)
		res := attempt(ctx, c, client, method, path, body, attemptTimeout)
		if ctx.Err() != nil {
			return res, n, time.Since(start), fmt.Errorf("%s: %w", c.command, context.Cause(ctx))
		}
		if res.status >= 200 && res.status < 300 {
			fmt.Fprintf(stderr, "attempt %d: status %d in %s -> success\n", n, res.status, res.elapsed.Round(time.Millisecond))
			return res, n, time.Since(start), nil
		}
		now := time.Now()
		d := c.policy.Decide(retry.Attempt{Number: n, Elapsed: res.elapsed, Status: res.status, Header: res.header, Remaining: deadline.Sub(now), Now: now})
		fmt.Fprintf(stderr, "attempt %d: %s in %s -> %s\n", n, res.describe(), res.elapsed.Round(time.Millisecond), describe(d))
		if !d.Retry {
			printServerTiming(stderr, res.header)
			return res, n, time.Since(start), res.callError(n, time.Since(start), d, attemptTimeout)
		}
		t := time.NewTimer(d.Wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, n, time.Since(start), fmt.Errorf("%s: %w", c.command, context.Cause(ctx))
		}
	}
}

// printServerTiming prints where the server says the last attempt's time
// went (its Server-Timing header: "upstream;dur=812.0, total;dur=815.2"), so
// an operator sees at once whether Azure OpenAI or timebox was slow.
func printServerTiming(w io.Writer, h http.Header) {
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

// result is what one attempt brought back.
type result struct {
	status   int // 0: network error or attempt timeout
	header   http.Header
	body     []byte
	elapsed  time.Duration
	err      error
	timedOut bool
	errBody  errorBody
}

func attempt(ctx context.Context, c askConfig, client *http.Client, method, path string, body []byte, timeout time.Duration) result {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, c.baseURL+path, rd)
	if err != nil {
		return result{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "timebox-cli")
	req.Header.Set("x-client-timeout-ms", strconv.FormatInt(timeout.Milliseconds(), 10))
	if c.key != "" {
		req.Header.Set("x-functions-key", c.key)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	start := time.Now()
	resp, err := client.Do(req)
	var r result
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

func (r result) describe() string {
	switch {
	case r.timedOut:
		return "no answer (attempt timeout)"
	case r.status == 0:
		return fmt.Sprintf("network error (%v)", r.err)
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

func (r result) callError(attempts int, elapsed time.Duration, d retry.Decision, attemptTimeout time.Duration) *CallError {
	e := &CallError{
		Status:    r.status,
		Code:      r.errBody.Error.Code,
		Message:   r.errBody.Error.Message,
		RequestID: r.errBody.Error.RequestID,
		Attempts:  attempts,
		Elapsed:   elapsed,
		Timeout:   d.Timeout || r.timedOut || r.errBody.Error.Code == "deadline_exceeded",
		Reason:    d.Reason,
	}
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
