package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/client"
	"github.com/timebox-dev/timebox/internal/retry"
)

// usage is the synopsis, printed once: to stdout for --help, to stderr
// above the error of a command line that cannot run.
const usage = `usage: timebox ask --url URL [--key K | --token T] [--stream] [--timeout D] [--attempt-timeout D] [--attempts N] [--threshold D] QUESTION
       timebox health --url URL [--key K | --token T] [--timeout D] [--attempts N] [--threshold D]
       timebox usage --url URL [--key K | --token T] [--timeout D] [--attempts N] [--threshold D]
Flags may come before or after the question; every word after -- is the question's.`

// errHelp is the outcome of --help: the usage was printed to stdout, and
// the command succeeds.
var errHelp = errors.New("help printed")

// run is the composition root: it parses args (without the program name,
// like the other commands), reads TIMEBOX_URL, TIMEBOX_KEY and TIMEBOX_TOKEN from getenv as
// defaults for the flags, and runs the subcommand with a plain http.Client.
// --help (or -h, or help) prints the usage to stdout and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdout, stderr, &http.Client{})
}

// runWith is run with the HTTP client given, so that tests can use an
// in-memory network inside a synctest bubble.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, hc *http.Client) error {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, usage)
		return nil
	}
	if len(args) < 1 || (args[0] != "ask" && args[0] != "health" && args[0] != "usage") {
		fmt.Fprintln(stderr, usage)
		return errors.New("the first word must be a command: ask, health or usage")
	}
	cfg, err := parse(args[0], args[1:], getenv, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	switch cfg.command {
	case "health":
		return health(ctx, cfg, hc, stdout, stderr)
	case "usage":
		return showUsage(ctx, cfg, hc, stdout, stderr)
	}
	return ask(ctx, cfg, hc, stdout, stderr)
}

// askConfig is the parsed command line of timebox ask, health or usage.
type askConfig struct {
	command        string // "ask", "health" or "usage"
	baseURL        string
	key, token     string
	timeout        time.Duration // whole command, attempts and waits included
	attemptTimeout time.Duration // one attempt, sent as x-client-timeout-ms
	policy         retry.Policy
	question       string
	stream         bool // ask: print the answer as it arrives
}

// client returns the API client the command line asks for, over hc.
func (c askConfig) client(hc *http.Client, stderr io.Writer) *client.Client {
	return &client.Client{
		BaseURL: c.baseURL, Key: c.key, Token: c.token, HTTP: hc,
		Policy: c.policy, Timeout: c.timeout, AttemptTimeout: c.attemptTimeout, Log: stderr,
	}
}

// parse reads a command line whose flags may come before, between or after
// the words of the question: "ask hi --attempts 1" asks "hi" once.
func parse(command string, args []string, getenv func(string) string, stdout, stderr io.Writer) (askConfig, error) {
	c := askConfig{command: command}
	// A health check is quick or it is not healthy; a question may take the
	// whole budget, and retries on top.
	timeout, attemptTimeout := 5*time.Minute, 230*time.Second
	if command != "ask" {
		timeout, attemptTimeout = time.Minute, 30*time.Second
	}
	fs := flag.NewFlagSet("timebox "+command, flag.ContinueOnError)
	// The usage and the error are printed below, once each.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.baseURL, "url", getenv("TIMEBOX_URL"), "Function App base `URL`, e.g. https://app.azurewebsites.net or http://127.0.0.1:7071 (env TIMEBOX_URL)")
	fs.StringVar(&c.key, "key", getenv("TIMEBOX_KEY"), "function `key`, sent as x-functions-key (env TIMEBOX_KEY)")
	fs.StringVar(&c.token, "token", getenv("TIMEBOX_TOKEN"), "bearer `token`: an Entra ID access token for the API (AUTH_MODE=entra, or App Service Authentication) (env TIMEBOX_TOKEN)")
	fs.DurationVar(&c.timeout, "timeout", timeout, "overall deadline: every attempt and wait included")
	fs.DurationVar(&c.attemptTimeout, "attempt-timeout", attemptTimeout, "one attempt's timeout, sent as x-client-timeout-ms (shrunk to the time left)")
	fs.IntVar(&c.policy.MaxAttempts, "attempts", retry.DefaultMaxAttempts, "attempts in all, the first included")
	fs.DurationVar(&c.policy.FastFailure, "threshold", retry.DefaultFastFailure, "a failed attempt that took at least this long is a timeout and is not retried")
	if command == "ask" {
		fs.BoolVar(&c.stream, "stream", false, "print the answer as it arrives (server-sent events); retried by the rule only until the first piece")
	}
	words, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return c, errHelp
	}
	if err != nil {
		fmt.Fprintln(stderr, usage)
		return c, err
	}
	c.question = strings.TrimSpace(strings.Join(words, " "))
	var problems []error
	if u, err := url.Parse(c.baseURL); c.baseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, errors.New("--url must be an http or https base URL"))
	}
	switch {
	case command == "ask" && c.question == "":
		problems = append(problems, errors.New("a question is required"))
	case command != "ask" && c.question != "":
		problems = append(problems, errors.New(command+" takes no question"))
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
		fmt.Fprintln(stderr, usage)
		return c, err
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	return c, nil
}

// parseInterleaved parses args with fs, flags anywhere, and returns the
// other words in order. flag.FlagSet.Parse stops at the first word that is
// not a flag, so parsing goes on after each one; it also stops after "--",
// and every word after that one is the question's, even one that begins
// with a dash.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return words, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(words, rest...), nil
		}
		words, args = append(words, rest[0]), rest[1:]
	}
}

// ask sends the question with the rule and prints one line per attempt to
// stderr and the answer to stdout.
func ask(ctx context.Context, c askConfig, hc *http.Client, stdout, stderr io.Writer) error {
	body, err := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": c.question}}})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	// A long answer comes in hops: each attempt's line on stderr says which
	// part it was; the answer on stdout is one text, printed as it
	// arrives: piece by piece streamed, else hop by hop.
	printed := false
	onText := func(text string) {
		printed = true
		fmt.Fprint(stdout, text)
	}
	res, err := c.client(hc, stderr).Follow(ctx, body, c.stream, onText)
	if printed {
		fmt.Fprintln(stdout) // the answer's line ends, whatever came after it
	}
	if err != nil {
		return commandError(c.command, err)
	}
	var r client.ChatResponse
	if err := json.Unmarshal(res.Body, &r); err != nil {
		return &client.CallError{Status: res.Status, Code: "invalid_response", Message: "The service sent an answer that could not be read.", RequestID: res.Header.Get("x-request-id"), Attempts: res.Attempts, Elapsed: res.Elapsed, Reason: retry.ReasonNotRetryable}
	}
	fmt.Fprintf(stderr, "request id %s, finish %s, upstream attempts %d, server time %s, tokens %d prompt + %d completion\n",
		r.RequestID, r.FinishReason, r.UpstreamAttempts, time.Duration(r.ElapsedMs)*time.Millisecond, r.Usage.PromptTokens, r.Usage.CompletionTokens)
	client.PrintServerTiming(stderr, res.Header)
	return nil
}

// health checks GET /api/health with the rule: the deployment answers, from
// behind its front end and authentication, with status ok. It prints the
// version deployed; no Azure OpenAI call is made.
func health(ctx context.Context, c askConfig, hc *http.Client, stdout, stderr io.Writer) error {
	res, err := c.client(hc, stderr).Call(ctx, http.MethodGet, "/api/health", nil)
	if err != nil {
		return commandError(c.command, err)
	}
	var h client.Health
	if err := json.Unmarshal(res.Body, &h); err != nil || h.Status != "ok" {
		return &client.CallError{Status: res.Status, Code: "invalid_response", Message: "The service answered, but not with a health report: is the URL the Function App's?", RequestID: res.Header.Get("x-request-id"), Attempts: res.Attempts, Elapsed: res.Elapsed, Reason: retry.ReasonNotRetryable}
	}
	fmt.Fprintf(stdout, "%s, version %s\n", h.Status, h.Version)
	fmt.Fprintf(stderr, "request id %s, %d attempt(s) in %s\n", res.Header.Get("x-request-id"), res.Attempts, res.Elapsed.Round(time.Millisecond))
	return nil
}

// showUsage reads GET /api/usage and prints each window of the caller's
// quota: "today: 12,340 of 200,000 tokens used (resets at 00:00 UTC)".
func showUsage(ctx context.Context, c askConfig, hc *http.Client, stdout, stderr io.Writer) error {
	res, err := c.client(hc, stderr).Call(ctx, http.MethodGet, "/api/usage", nil)
	if err != nil {
		return commandError(c.command, err)
	}
	var u client.Usage
	if err := json.Unmarshal(res.Body, &u); err != nil {
		return &client.CallError{Status: res.Status, Code: "invalid_response", Message: "The service sent a usage report that could not be read.", RequestID: res.Header.Get("x-request-id"), Attempts: res.Attempts, Elapsed: res.Elapsed, Reason: retry.ReasonNotRetryable}
	}
	line := func(name string, w *client.UsageWindow) {
		fmt.Fprintf(stdout, "%s: %s of %s tokens used, %s held by requests under way (resets %s)\n",
			name, thousands(w.Used), thousands(w.Limit), thousands(w.Reserved), w.ResetsAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if u.User.Day != nil {
		line("today (you)", u.User.Day)
	}
	if u.Tenant.Month != nil {
		line("this month (your organization)", u.Tenant.Month)
	}
	if u.User.Day == nil && u.Tenant.Month == nil {
		fmt.Fprintln(stdout, "no quota: this deployment sets no token limit")
	}
	return nil
}

// thousands writes n with a comma between each group of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// commandError names the command in an error that is not the call's own
// (the command was interrupted); a *client.CallError reads well alone.
func commandError(command string, err error) error {
	var ce *client.CallError
	if errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%s: %w", command, err)
}
