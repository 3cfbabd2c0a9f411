package api

import (
	"context"
	"net/http"

	"github.com/timebox-dev/timebox/internal/quota"
)

// bill is what a request that spends tokens owes, as it becomes known: the
// prompt as counted and as Azure OpenAI billed it, the answer's tokens as
// they arrive (its tally) and as they reached the caller or did not, and
// its hold on the caller's quota. The request decides by it (what an
// answer cut short says of its tokens, what the quota is charged); its log
// line reports it. The routes that spend tokens open it (openBill);
// elsewhere billOf gives a bill of its own, owed by nobody.
type bill struct {
	// prompt is Azure's usage; counted, the prompt as fitting counted it
	// (0: not counted, small requests); countPrompt counts the prompt sent
	// upstream when fitting did not (nil when it did, or none was sent).
	prompt, counted int
	countPrompt     func() int
	// completion is the tokens the caller was sent; abandoned, those
	// generated that it never got.
	completion, abandoned int
	// hopTokens is the tokens a long answer's hop delivered (counted as
	// its pieces came).
	hopTokens int
	// tally counts the answer's completion tokens as its pieces arrive.
	tally tally
	// status is the answer's, once written; gone: the caller went away
	// before its answer (logged 499).
	status int
	gone   bool
	// backend is the pool's backend that answered (or failed last), for
	// the ledger.
	backend string
	// hold is the request's hold on the caller's quota; nil without one.
	hold *hold
}

type billKey struct{}

// openBill opens the bill of a request that spends tokens and, once the
// handler is done, settles its quota hold if no answer settled it before
// it was written (settleAnswered): a failure, a caller gone, a stream cut
// short. Its answer is handed to the connection first, so the caller does
// not wait for the store. The settlement charges the tokens the bill says
// were billed (prompt, completion, abandoned), whatever the outcome.
func (s *server) openBill(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := &bill{}
		recordFrom(r.Context()).bill = b
		r = r.WithContext(context.WithValue(r.Context(), billKey{}, b))
		next.ServeHTTP(&billWriter{ResponseWriter: w, b: b}, r)
		if !b.hold.open() {
			return
		}
		sendWhole(w)
		s.settle(r.Context(), b.charged(b.answered()))
	})
}

// billOf is the bill of ctx's request (openBill); a bill of its own, owed
// by nobody, outside the routes that spend tokens.
func billOf(ctx context.Context) *bill {
	if b, ok := ctx.Value(billKey{}).(*bill); ok {
		return b
	}
	return &bill{}
}

// billedPrompt is the prompt tokens Azure billed: its usage, or, for an
// answer cut short after text came back but before the usage frame (a
// deadline, a reset, a caller gone mid-answer), the prompt that was sent,
// which Azure processed. A refused attempt (a fast 429 or 5xx) or a call
// never made bills nothing, however large the counted prompt.
func (b *bill) billedPrompt() int {
	if b.prompt > 0 || b.completion+b.abandoned == 0 {
		return b.prompt
	}
	if b.counted > 0 {
		return b.counted
	}
	if b.countPrompt != nil {
		return b.countPrompt()
	}
	return 0
}

// answered is the status the request was answered with, for the ledger:
// 499 for a caller that went away first.
func (b *bill) answered() int {
	if b.gone {
		return statusClientGone
	}
	return b.status
}

// charged is what the request was billed, answered with status.
func (b *bill) charged(status int) quota.Billed {
	return quota.Billed{Prompt: b.billedPrompt(), Completion: b.completion, Abandoned: b.abandoned, Status: status,
		Backend: b.backend}
}

// billWriter notes the answer's status on the bill. Only the first status
// counts; 1xx are informational.
type billWriter struct {
	http.ResponseWriter
	b *bill
}

func (w *billWriter) WriteHeader(code int) {
	if w.b.status == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		w.b.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *billWriter) Write(p []byte) (int, error) {
	if w.b.status == 0 {
		w.b.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the writer it wraps (http.ResponseController).
func (w *billWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
