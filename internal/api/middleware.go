package api

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/cors"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/origin"
)

// Headers a browser may send and read. SPFx's AadHttpClient sends
// Authorization and JSON, so every call from a web part is preflighted.
var (
	allowedHeaders = []string{"Content-Type", "Authorization", "x-client-timeout-ms", "x-request-id", "x-functions-key"}
	exposedHeaders = []string{"Retry-After", "retry-after-ms", "x-should-retry", "x-request-id", "Server-Timing", "WWW-Authenticate"}
)

// newCORS answers preflights and sets CORS headers on every answer to an
// allowed origin, errors included. Which origins are allowed is decided by
// package origin (parsed, whole labels for a wildcard), not by rs/cors's
// string match. The settings were checked when they were loaded; one that
// does not parse allows nothing.
func newCORS(origins []string) *cors.Cors {
	set, _ := origin.NewSet(origins)
	o := cors.Options{
		AllowOriginFunc: set.Allows,
		// Every method, so that a 405 is readable too; the routes decide
		// what is served.
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: allowedHeaders,
		ExposedHeaders: exposedHeaders,
		MaxAge:         600,
	}
	return cors.New(o)
}

// record is what a request's log line says; handlers fill it in. Its
// first fields are what front keeps of the request until the line is
// written (on the heap, not in front's frame).
type record struct {
	w                *statusWriter      // notes the answer's status
	r                *http.Request      // with the budget, the id and the record in its context
	cancel           context.CancelFunc // ends the budget's context
	id               string             // the request id, the caller's or ours
	routing          *chi.Context       // chi's routing context while chi chooses the route (see requestContext)
	route            string             // the pattern chi chose, for the log line; "": none matched
	serve            http.Handler       // the route chi chose (see chosen); nil: chi answered
	body             *bodyConn          // nil: the request has no body
	phases           []phase
	attempts         int32 // int32s: the record fits 256 bytes (a size class)
	upstreamStatus   int32
	upstreamID       string        // Azure's apim-request-id of the last attempt
	promptTokens     int           // billed: Azure's usage (see billedPrompt)
	countedPrompt    int           // counted by prompt fitting; 0: not counted (small requests)
	completionTokens int           // delivered to the caller
	abandonedTokens  int           // generated, but the caller never got them
	firstTokenAt     time.Duration // since the request began; 0: no token came
	stream           bool          // answered as server-sent events
	truncated        bool
	cors             bool // applyCORS let the request through: its answer gets rs/cors's headers
	code             string
	// countPrompt counts the prompt sent upstream, for an answer cut short
	// before Azure's usage came when fitting skipped counting (small
	// requests); nil when the prompt was counted or none was sent.
	countPrompt func() int
	callerOID   string // the verified caller's object id and tenant id:
	callerTID   string // the only things about a caller that are logged
	err         error
}

type recordKey struct{}

// billedPrompt is the prompt tokens Azure billed: its usage, or, for an
// answer cut short after text came back but before the usage frame (a
// deadline, a reset, a caller gone mid-answer), the prompt that was sent,
// which Azure processed. A refused attempt (a fast 429 or 5xx) or a call
// never made bills nothing, however large the counted prompt.
func (rec *record) billedPrompt() int {
	if rec.promptTokens > 0 || rec.completionTokens+rec.abandonedTokens == 0 {
		return rec.promptTokens
	}
	if rec.countedPrompt > 0 {
		return rec.countedPrompt
	}
	if rec.countPrompt != nil {
		return rec.countPrompt()
	}
	return 0
}

// phase is one timed step of a request: "material" (fetching and extracting),
// "prompt" (fitting), "upstream" (the Azure OpenAI call, retries included).
type phase struct {
	name string
	dur  time.Duration
}

// firstToken notes when the answer's first piece arrived from upstream
// (an aoai.Request.OnDelta): the time to first token, the figure a slow
// model or region shows first.
func (rec *record) firstToken(string) {
	if rec.firstTokenAt == 0 && rec.r != nil {
		if b := budget.From(rec.r.Context()); b != nil {
			rec.firstTokenAt = time.Since(b.Started)
		}
	}
}

// since records a phase that began at start.
func (rec *record) since(name string, start time.Time) {
	rec.phases = append(rec.phases, phase{name, time.Since(start)})
}

// stampTiming sets Server-Timing (W3C Server Timing, shown by every browser's
// devtools and by PerformanceResourceTiming.serverTiming) with the phases
// and the total, so where the time went is visible from the web part (an
// allowed origin's page reads it with Timing-Allow-Origin, set with the CORS
// headers by statusWriter.stamp).
func stampTiming(w http.ResponseWriter, r *http.Request) {
	rec, b := recordFrom(r.Context()), budget.From(r.Context())
	if b == nil {
		return
	}
	var sb strings.Builder
	for _, p := range rec.phases {
		fmt.Fprintf(&sb, "%s;dur=%.1f, ", p.name, float64(p.dur.Microseconds())/1000)
	}
	fmt.Fprintf(&sb, "total;dur=%.1f", float64(time.Since(b.Started).Microseconds())/1000)
	w.Header().Set("Server-Timing", sb.String())
}

func recordFrom(ctx context.Context) *record {
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		return rec
	}
	return &record{}
}

// saneID accepts a caller's correlation id that is safe to echo and log:
// 1-128 characters of A-Za-z0-9._:- (a loop: the regexp for it compiled to
// 1,700 allocations at start-up and was the slowest step of begin).
func saneID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// front is the first line of every handler: it starts the budget, settles
// the request id, runs the Origin check and CORS, then the route (chi's
// mux) with panic recovery, and writes the request's one log line when it
// is done. They are steps of one handler, not four middlewares: each
// middleware is a frame on the stack of a request waiting on Azure OpenAI
// (see BenchmarkHeldRequests). It is a type of its own rather than an
// http.HandlerFunc, which would be one more frame.
type front struct{ s *server }

func (f front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := f.s.open(w, r)
	defer f.s.finish(rec)
	if f.s.checkOrigin(rec.w, rec.r) && f.s.applyCORS(rec.w, rec.r) {
		f.s.mux.ServeHTTP(rec.w, rec.r)
		f.s.chosen(rec)
		if rec.serve != nil {
			rec.serve.ServeHTTP(rec.w, rec.r)
		}
	}
}

// finish ends every request (deferred in front): it turns a panic into a
// 500 that still carries CORS headers (they were set on the way in),
// writes the log line and ends the budget's context. A handler that aborts
// (http.ErrAbortHandler) is let through to net/http, with no line.
func (s *server) finish(rec *record) {
	defer s.close(rec)
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.fail(rec.w, rec.r, panicError{v})
	}
	// An answer nothing was written to is net/http's empty 200: with the
	// headers of every answer too. stamp also ends the connection's read
	// of a body still unread (endRead): net/http would otherwise read it,
	// on a stalled body for ever, before it sends the answer.
	rec.w.stamp()
	sent := rec.w.send()
	s.logRequest(rec)
	// An answer sent before its body was in: the connection is closed
	// without a reset reaching a client still sending (see bodyConn).
	if sent {
		rec.body.linger(s.Lingering)
	}
}

// open starts the request's budget, settles its id, and returns its
// record, which holds the request with both (and the record, and chi's
// routing context) in its context, and the writer that notes the answer's
// status and stamps its headers (the request id, CORS) when it starts.
func (s *server) open(w http.ResponseWriter, r *http.Request) *record {
	ctx, cancel, b := budget.Start(r.Context(), s.Budget)
	rec := &record{cancel: cancel, body: watchBody(w, r, b.Deadline)}
	rec.id = r.Header.Get("x-request-id")
	if !saneID(rec.id) {
		rec.id = newID()
	}
	rec.routing = s.routing.Get().(*chi.Context)
	rec.routing.Reset()
	rec.routing.Routes = s.mux
	rec.w, rec.r = &statusWriter{ResponseWriter: w, s: s, rec: rec}, r.WithContext(&requestContext{ctx, rec})
	return rec
}

// chosen keeps the pattern chi chose, for the log line, and gives chi's
// routing context back before the route is served: no route reads it (none
// has URL parameters), and a request waiting on Azure OpenAI would
// otherwise hold it, 230 bytes.
func (s *server) chosen(rec *record) {
	// A 405 has set its route by path already (handleMethodNotAllowed):
	// chi notes none for it.
	rec.route = cmp.Or(rec.routing.RoutePattern(), rec.route)
	s.routing.Put(rec.routing)
	rec.routing = nil
}

// close ends the budget's context, and gives chi's routing context back if
// chi never chose (an Origin refused, a panic in chi).
func (s *server) close(rec *record) {
	rec.cancel()
	if rec.routing != nil {
		s.routing.Put(rec.routing)
	}
}

// requestContext is a request's context from its first line: the budget's,
// with the record, the request id and chi's routing context as its values.
// It is one allocation where a context.WithValue per value (and chi's
// own, with the copy of the request that chi makes when it finds no
// routing context) were five, all of them held while a request waits on
// Azure OpenAI.
type requestContext struct {
	context.Context // the budget's
	rec             *record
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case recordKey:
		return c.rec
	case idKey:
		return c.rec.id
	}
	if key == chi.RouteCtxKey && c.rec.routing != nil {
		return c.rec.routing
	}
	return c.Context.Value(key)
}

// logRequest writes the request's one log line.
func (s *server) logRequest(rec *record) {
	r, status, id, b := rec.r, rec.w.Status(), rec.id, budget.From(rec.r.Context())
	bodyUnread := rec.body.unread()
	if status == 0 {
		status = http.StatusOK
	}
	if rec.code == codeClientGone {
		status = 499 // the caller went away before an answer (nginx's code for it)
	}
	level := slog.LevelInfo
	if r.URL.Path == "/" {
		level = slog.LevelDebug // the host's readiness ping
	}
	attrs := []slog.Attr{
		slog.String("requestId", id),
		slog.String("method", r.Method),
		slog.String("route", cmp.Or(rec.route, "unmatched")),
		slog.Int("status", status),
		slog.Int64("elapsedMs", time.Since(b.Started).Milliseconds()),
		slog.Int64("budgetMs", b.Deadline.Sub(b.Started).Milliseconds()),
	}
	if b.ClientTimeout > 0 {
		attrs = append(attrs, slog.Int64("clientTimeoutMs", b.ClientTimeout.Milliseconds()))
	}
	if rec.attempts > 0 {
		attrs = append(attrs, slog.Int("upstreamAttempts", int(rec.attempts)), slog.Int("upstreamStatus", int(rec.upstreamStatus)))
	}
	if rec.upstreamID != "" {
		attrs = append(attrs, slog.String("upstreamRequestId", rec.upstreamID))
	}
	if billed := rec.billedPrompt(); billed > 0 || rec.completionTokens > 0 {
		attrs = append(attrs, slog.Int("promptTokens", billed), slog.Int("completionTokens", rec.completionTokens))
	}
	if rec.countedPrompt > 0 {
		attrs = append(attrs, slog.Int("promptTokensCounted", rec.countedPrompt))
	}
	if rec.promptTokens > 0 || rec.completionTokens > 0 || rec.countedPrompt > 0 {
		attrs = append(attrs, slog.Bool("truncated", rec.truncated))
	}
	if rec.abandonedTokens > 0 {
		attrs = append(attrs, slog.Int("abandonedTokens", rec.abandonedTokens))
	}
	if rec.stream {
		attrs = append(attrs, slog.Bool("stream", true))
	}
	if rec.firstTokenAt > 0 {
		attrs = append(attrs, slog.Int64("firstTokenMs", rec.firstTokenAt.Milliseconds()))
	}
	for _, p := range rec.phases {
		attrs = append(attrs, slog.Int64(p.name+"Ms", p.dur.Milliseconds()))
	}
	if rec.callerOID != "" {
		attrs = append(attrs, slog.String("callerOid", rec.callerOID), slog.String("callerTid", rec.callerTID))
	}
	if rec.code != "" {
		attrs = append(attrs, slog.String("code", rec.code))
	}
	if bodyUnread {
		// Answered before the body was in: the connection is closed
		// after the answer, not kept for another request.
		attrs = append(attrs, slog.Bool("bodyUnread", true))
	}
	if rec.err != nil {
		attrs = append(attrs, slog.String("error", rec.err.Error()))
	}
	s.Logger.LogAttrs(context.Background(), level, "request", attrs...)
}

type idKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkOrigin refuses a request whose Origin is present and not allowed,
// or that carries more than one Origin header (a browser sends one; with
// two, which one CORS would echo is anybody's guess), before anything else
// happens (no upstream call, no CORS headers). Callers that send no Origin,
// such as the CLI or another service, pass. It returns false when it
// answered.
func (s *server) checkOrigin(w http.ResponseWriter, r *http.Request) bool {
	if len(r.Header.Values("Origin")) > 1 {
		s.fail(w, r, errOriginAmbiguous)
		return false
	}
	if r.Header.Get("Origin") != "" && !s.cors.OriginAllowed(r) {
		s.fail(w, r, errOriginNotAllowed)
		return false
	}
	return true
}

// applyCORS sets the CORS headers on the answer to an allowed origin, and
// answers a preflight (rs/cors's Cors.Handler without the call of the next
// handler). It returns false when it answered.
func (s *server) applyCORS(w http.ResponseWriter, r *http.Request) bool {
	// rs/cors's own test of a preflight.
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		s.cors.HandlerFunc(w, r)
		return false
	}
	// Any other request gets its CORS headers when its answer starts
	// (statusWriter.stamp).
	recordFrom(r.Context()).cors = true
	return true
}

// checkCaller lets through only a caller the configured check verifies, and
// puts its object and tenant ids on the log line. Refusals (401, 403, 503
// auth_unavailable) go through the error table before anything is read or
// sent upstream. It is the chat handler's first step (prepareChat): only
// the route that spends tokens checks the caller; preflights end in CORS
// before any route, and the readiness ping and health need none.
func (s *server) checkCaller(r *http.Request) error {
	c, err := s.Caller.Check(r.Context(), r)
	if err != nil {
		return err
	}
	rec := recordFrom(r.Context())
	rec.callerOID, rec.callerTID = c.OID, c.TID
	return nil
}

// statusWriter notes the answer's status for the log line. It unwraps
// (http.ResponseController, innermost) to net/http's writer for flushes and
// deadlines. Only the first status goes through, as only the first counts
// (net/http logs the others as superfluous); 1xx are passed on unnoted.
// (chi's middleware.WrapResponseWriter did this; its package also links
// net/http/pprof and expvar, whose initialisation every cold start paid.)
//
// It also sets the headers every answer carries, the request id and, once
// applyCORS has let the request through, rs/cors's, when the answer starts
// (its status is written), not when the request arrives: a response header
// costs net/http's header map its first 350-byte block, which a request
// waiting on Azure OpenAI would hold for nothing (see BenchmarkHeldRequests).
type statusWriter struct {
	http.ResponseWriter
	s       *server
	rec     *record
	status  int
	stamped bool
}

// stamp sets the answer's own headers, once, before its status is written.
func (w *statusWriter) stamp() {
	if w.stamped {
		return
	}
	w.stamped = true
	h := w.ResponseWriter.Header()
	h.Set("x-request-id", w.rec.id)
	// An answer that starts before the body is in ends its connection
	// (bodyConn). endRead first reads what of the body has arrived (a body
	// all in keeps the connection), then ends the read: net/http's drain
	// of the rest then fails, and net/http itself says Connection: close
	// on the answer and closes the connection after it.
	w.rec.body.endRead()
	if w.rec.cors {
		w.s.cors.HandlerFunc(w.ResponseWriter, w.rec.r)
		// A cross-origin page reads Server-Timing only with this.
		if o := h.Get("Access-Control-Allow-Origin"); o != "" && h.Get("Server-Timing") != "" {
			h.Set("Timing-Allow-Origin", o)
		}
	}
}

// Status is the answer's status; 0 until a header or body is written.
func (w *statusWriter) Status() int { return w.status }

// send hands an answer of known length (Content-Length set, as writeJSON
// does) to the connection now, so the caller has it before the log line is
// written: net/http would send it only once the handler returns, after
// finish. An answer of unknown length is left to net/http, which can then
// still give it a length or close it; a flush now would make it chunked.
// It reports whether the answer has been sent.
func (w *statusWriter) send() bool {
	if w.status == 0 || w.ResponseWriter.Header().Get("Content-Length") == "" {
		return false
	}
	f, ok := w.ResponseWriter.(http.Flusher)
	if ok {
		f.Flush()
	}
	return ok
}

func (w *statusWriter) WriteHeader(code int) {
	w.stamp()
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.status == 0 {
		w.status = code
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns net/http's writer (http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
