package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/budget"
)

// logLine writes the request's one log line once its answer has gone: an
// answer of known length is handed to the connection first (sendWhole), so
// the caller does not wait for the line. What the line says beyond the
// request and its answer (upstream attempts, tokens, phases, the caller)
// the handlers note in the request's record.
func (s *server) logLine(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &record{}
		if b := budget.From(r.Context()); b != nil {
			rec.started = b.Started
		}
		sw := &statusWriter{ResponseWriter: w, rec: rec}
		r = r.WithContext(context.WithValue(r.Context(), recordKey{}, rec))
		next.ServeHTTP(sw, r)
		if _, err := sendWhole(sw); err != nil {
			rec.noteWrite(err)
		}
		s.logRequest(r, rec, rec.status)
	})
}

// attemptLog is one upstream attempt as the log line lists it: the
// backend's name (never its URL), the status (0 for a network error) and
// how long it took.
type attemptLog struct {
	Backend string `json:"backend"`
	Status  int    `json:"status"`
	Ms      int64  `json:"ms"`
}

func attemptsLog(trail []aoai.Attempt) []attemptLog {
	out := make([]attemptLog, len(trail))
	for i, a := range trail {
		out[i] = attemptLog{Backend: a.Backend, Status: a.Status, Ms: a.Elapsed.Milliseconds()}
	}
	return out
}

// statusClientGone is the status logged for a caller that went away before
// an answer (nginx's code for it).
const statusClientGone = 499

// record is what a request's log line says beyond the request itself;
// handlers write it (recordFrom), and only the log line reads it: no
// decision is made by it.
type record struct {
	started        time.Time // the budget's start
	route          string    // the route's pattern when chi notes none (a 405)
	phases         []phase
	attempts       int
	upstreamStatus int
	backend        string         // the pool's backend that answered (or failed last)
	trail          []aoai.Attempt // every upstream attempt, over all backends
	upstreamID     string         // Azure's apim-request-id of the last attempt
	firstTokenAt   time.Duration  // since the request began; 0: no token came
	stream         bool           // answered as server-sent events
	truncated      bool
	code           string
	// bill is the request's tokens and quota hold (openBill); nil on a
	// route that spends none.
	bill *bill
	// writeErr is the first write of the answer the caller did not take:
	// it went away, or stopped reading (writeTimedOut).
	writeErr error
	// A long answer's hop: its response at Azure OpenAI, its number, and
	// whether it cancelled the generation.
	responseID        string
	hop               int
	cancelledUpstream bool
	callerOID         string // the verified caller's object id and tenant id:
	callerTID         string // the only things about a caller that are logged
	err               error
	status            int // the answer's, once written (statusWriter)
	// quota says what the caller's quota did (quotaReserved, ...); empty
	// without quotas.
	quota string
}

type recordKey struct{}

// recordFrom is the record of ctx's request; a record of its own, logged
// nowhere, outside logLine.
func recordFrom(ctx context.Context) *record {
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		return rec
	}
	return &record{}
}

// noteWrite keeps the first failed write of the answer.
func (rec *record) noteWrite(err error) {
	if rec.writeErr == nil {
		rec.writeErr = err
	}
}

// writeTimedOut reports whether err is a write that gave up at the
// answer's bound (boundWrites): the caller is connected but stopped
// reading, which a caller that went away (client_gone) is not.
func writeTimedOut(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
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
	if rec.firstTokenAt == 0 && !rec.started.IsZero() {
		rec.firstTokenAt = time.Since(rec.started)
	}
}

// since records a phase that began at start.
func (rec *record) since(name string, start time.Time) {
	rec.phases = append(rec.phases, phase{name, time.Since(start)})
}

// stampTiming sets Server-Timing (W3C Server Timing, shown by every browser's
// devtools and by PerformanceResourceTiming.serverTiming) with the phases
// and the total, so where the time went is visible from the web part, and
// Timing-Allow-Origin for an allowed origin, without which a cross-origin
// page cannot read it.
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
	h := w.Header()
	h.Set("Server-Timing", sb.String())
	if o := h.Get("Access-Control-Allow-Origin"); o != "" {
		h.Set("Timing-Allow-Origin", o)
	}
}

// logRequest writes the request's one log line.
func (s *server) logRequest(r *http.Request, rec *record, status int) {
	ctx := r.Context()
	b := budget.From(ctx)
	if status == 0 {
		status = http.StatusOK
	}
	if rec.code == codeClientGone {
		status = statusClientGone
	}
	level := slog.LevelInfo
	if r.URL.Path == "/" {
		level = slog.LevelDebug // the host's readiness ping
	}
	route := rec.route
	if rctx := chi.RouteContext(ctx); rctx != nil {
		route = cmp.Or(rctx.RoutePattern(), route)
	}
	attrs := []slog.Attr{
		slog.String("requestId", requestID(ctx)),
		slog.String("method", r.Method),
		slog.String("route", cmp.Or(route, "unmatched")),
		slog.Int("status", status),
		slog.Int64("elapsedMs", time.Since(b.Started).Milliseconds()),
		slog.Int64("budgetMs", b.Deadline.Sub(b.Started).Milliseconds()),
	}
	if b.ClientTimeout > 0 {
		attrs = append(attrs, slog.Int64("clientTimeoutMs", b.ClientTimeout.Milliseconds()))
	}
	if rec.attempts > 0 {
		attrs = append(attrs, slog.Int("upstreamAttempts", rec.attempts), slog.Int("upstreamStatus", rec.upstreamStatus))
	}
	if rec.backend != "" {
		attrs = append(attrs, slog.String("backend", rec.backend))
	}
	if len(rec.trail) > 0 {
		attrs = append(attrs, slog.Any("attempts", attemptsLog(rec.trail)))
	}
	if rec.upstreamID != "" {
		attrs = append(attrs, slog.String("upstreamRequestId", rec.upstreamID))
	}
	bl := rec.bill
	if bl == nil {
		bl = &bill{}
	}
	if billed := bl.billedPrompt(); billed > 0 || bl.completion > 0 {
		attrs = append(attrs, slog.Int("promptTokens", billed), slog.Int("completionTokens", bl.completion))
	}
	if bl.counted > 0 {
		attrs = append(attrs, slog.Int("promptTokensCounted", bl.counted))
	}
	if bl.prompt > 0 || bl.completion > 0 || bl.counted > 0 {
		attrs = append(attrs, slog.Bool("truncated", rec.truncated))
	}
	if bl.abandoned > 0 {
		attrs = append(attrs, slog.Int("abandonedTokens", bl.abandoned))
	}
	if bl.tally.estimated && bl.completion+bl.abandoned > 0 {
		attrs = append(attrs, slog.Bool("completionTokensEstimated", true))
	}
	if writeTimedOut(rec.writeErr) {
		// The caller stopped reading: the answer did not reach it whole.
		attrs = append(attrs, slog.Bool("writeTimedOut", true))
	}
	if rec.stream {
		attrs = append(attrs, slog.Bool("stream", true))
	}
	if rec.responseID != "" {
		attrs = append(attrs, slog.String("responseId", rec.responseID), slog.Int("hop", rec.hop), slog.Int("hopTokens", bl.hopTokens))
	}
	if rec.cancelledUpstream {
		attrs = append(attrs, slog.Bool("cancelledUpstream", true))
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
	if rec.quota != "" {
		attrs = append(attrs, slog.String("quota", rec.quota))
		if bl.hold != nil {
			attrs = append(attrs, slog.Int64("quotaReserved", bl.hold.res.Tokens))
			if n := bl.hold.res.Retries(); n > 0 {
				attrs = append(attrs, slog.Int64("quotaRetries", n))
			}
		}
	}
	if bodyFrom(ctx).unread() {
		// Answered before the body was in: the connection is closed
		// after the answer, not kept for another request.
		attrs = append(attrs, slog.Bool("bodyUnread", true))
	}
	if rec.err != nil {
		attrs = append(attrs, slog.String("error", rec.err.Error()))
	}
	s.Logger.LogAttrs(context.Background(), level, "request", attrs...)
}

// statusWriter notes the answer's status for the log line. Only the first
// status goes through, as only the first counts (net/http logs the others
// as superfluous); 1xx are passed on unnoted. It unwraps
// (http.ResponseController) to net/http's writer for flushes, deadlines
// and hijacking.
type statusWriter struct {
	http.ResponseWriter
	rec *record // notes the status, and a write the caller did not take
}

func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.rec.status == 0 {
		w.rec.status = code
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.rec.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.rec.noteWrite(err)
	}
	return n, err
}

// Unwrap returns the writer it wraps (http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
