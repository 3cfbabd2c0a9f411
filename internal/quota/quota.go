// Package quota limits the tokens callers spend, across every instance of
// the app: each user's UTC day and each tenant's UTC month, counted in a
// table of Azure Table Storage (Azurite locally), the store the deployment's
// storage account already has.
//
// A request reserves, before its upstream call, what it can at most cost
// (its counted prompt and its completion limit) against every limit that
// applies to it, and settles, after the call, to what was billed; the rest
// is released. A reservation that does not fit whole, but whose prompt and a
// useful answer do, is granted with a lower completion limit. A reservation
// carries an expiry a little past its request's deadline, so one whose
// instance crashed before settling frees itself.
//
// Counters are updated optimistically: read with their ETags, written back
// in one batch (atomic within a partition) that fails if another writer got
// there first, and then read and tried again. A reservation is written only
// when the window's settled and live reserved tokens plus it fit the limit,
// and a settlement never charges more than its reservation held, so the
// settled tokens of a window never exceed its limit, whatever the
// interleaving of requests and instances.
package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/timebox-dev/timebox/internal/budget"
)

// DevelopmentAccount and DevelopmentKey are Azurite's published development
// account and key (Learn: "Use the Azurite emulator for local Azure Storage
// development", "Well-known storage account and key"): the same in every
// installation, and accepted by nothing but the emulator. They are used
// only for a loopback endpoint.
const (
	DevelopmentAccount = "devstoreaccount1"
	DevelopmentKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Defaults of Options.
const (
	// DefaultStepTimeout bounds each of the store's calls (a reservation or
	// a settlement, its retries included): a store call takes milliseconds.
	DefaultStepTimeout = 5 * time.Second
	// DefaultMinAnswer is the least completion limit a reservation is
	// lowered to when the whole does not fit.
	DefaultMinAnswer = 256
	// Grace is how long after its request's deadline a reservation lapses:
	// the settlement of a request that ran to its deadline comes in well
	// before it.
	Grace = 30 * time.Second
)

// Options configures a Store.
type Options struct {
	// Endpoint is the Table service URL (config's QUOTA_TABLE_ENDPOINT).
	Endpoint *url.URL
	// Table is the table's name.
	Table string
	// UserDailyTokens and TenantMonthlyTokens are the limits; 0 means no
	// limit of that kind (its counter is not kept).
	UserDailyTokens, TenantMonthlyTokens int64
	// Credential signs the calls to a non-loopback endpoint: the app's
	// managed identity. A loopback endpoint (Azurite) is signed with
	// Azurite's development key instead, and Credential is not used.
	Credential azcore.TokenCredential
	// Transport carries the store's requests; nil means azcore's default.
	Transport policy.Transporter
	// StepTimeout bounds each store operation; 0 means DefaultStepTimeout.
	StepTimeout time.Duration
	// MinAnswer is the least completion limit worth granting; 0 means
	// DefaultMinAnswer (or the request's own limit, when that is smaller).
	MinAnswer int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store reserves and settles requests' tokens. It is safe for concurrent use.
type Store struct {
	table     *aztables.Client
	service   *aztables.ServiceClient
	name      string
	userDay   int64
	tenantMon int64
	step      time.Duration
	minAnswer int
	now       func() time.Time
	// local is a loopback endpoint (Azurite), where the table is created
	// when missing; in Azure the deployment template creates it.
	local bool
	// calls counts the store's HTTP requests, conflicts the writes
	// refused because another writer came first, retries the calls tried
	// again (benchmarks report them).
	calls, conflicts, retries atomic.Int64
	// tryTimeout bounds one try of a store call, within the step's
	// deadline: a call that hangs is tried again.
	tryTimeout time.Duration
	// instance names this store's leases of tenant months.
	instance string
	leases   leases
	// turns lets one write of a partition at a time out of this instance.
	turns turns
}

// New returns a Store for o. It makes no call: the first reservation does.
func New(o Options) (*Store, error) {
	if o.Endpoint == nil {
		return nil, errors.New("quota: no endpoint")
	}
	s := &Store{
		name:      o.Table,
		userDay:   o.UserDailyTokens,
		tenantMon: o.TenantMonthlyTokens,
		step:      o.StepTimeout,
		minAnswer: o.MinAnswer,
		now:       o.Now,
		local:     isLoopback(o.Endpoint.Hostname()),
	}
	if s.step <= 0 {
		s.step = DefaultStepTimeout
	}
	if s.minAnswer <= 0 {
		s.minAnswer = DefaultMinAnswer
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.tryTimeout = s.step / 4
	s.instance = newTag()
	opts := &aztables.ClientOptions{}
	// Table Storage asks for a retry with 503 ServerBusy (a partition or
	// account past its scalability target) and 500 OperationTimedOut
	// (Learn: "Table Storage error codes"): a read is tried again with
	// azcore's backoff, each try bounded, within the step's deadline. A
	// write is tried again by the store's own loop, which first reads
	// whether it went in (try, retryAfter).
	opts.Retry = policy.RetryOptions{
		MaxRetries:    8,
		TryTimeout:    s.tryTimeout,
		RetryDelay:    20 * time.Millisecond,
		MaxRetryDelay: 500 * time.Millisecond,
		StatusCodes:   []int{http.StatusInternalServerError, http.StatusServiceUnavailable},
	}
	opts.PerCallPolicies = []policy.Policy{markTries{}}
	opts.PerRetryPolicies = []policy.Policy{countTries{s: s}}
	next := o.Transport
	if next == nil {
		next = newTransport()
	}
	opts.Transport = counting{next: next, n: &s.calls}
	endpoint := o.Endpoint.String()
	var err error
	switch {
	case s.local:
		var cred *aztables.SharedKeyCredential
		cred, err = aztables.NewSharedKeyCredential(DevelopmentAccount, DevelopmentKey)
		if err == nil {
			s.service, err = aztables.NewServiceClientWithSharedKey(endpoint, cred, opts)
		}
	case o.Credential == nil:
		return nil, errors.New("quota: a credential is needed for " + o.Endpoint.Host)
	default:
		s.service, err = aztables.NewServiceClient(endpoint, o.Credential, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("quota: %w", err)
	}
	s.table = s.service.NewClient(o.Table)
	return s, nil
}

// Calls is how many HTTP requests the store has made.
func (s *Store) Calls() int64 { return s.calls.Load() }

// Retries is how many of the store's calls were tried again (Reservation.Retries).
func (s *Store) Retries() int64 { return s.retries.Load() }

// Conflicts is how many of the store's batches were refused because
// another writer had changed a row since it was read.
func (s *Store) Conflicts() int64 { return s.conflicts.Load() }

// Request is what a request asks to reserve.
type Request struct {
	// ID is the request's id, the key of its ledger row: unique per
	// request (Reserve refuses a second with ErrDuplicate).
	ID string
	// OID and TID are the caller's object and tenant ids; empty for the
	// anonymous caller.
	OID, TID string
	// Deployment is the model deployment called, for the ledger.
	Deployment string
	// Prompt is the counted prompt, in tokens.
	Prompt int
	// MaxCompletion is the completion limit the request would send.
	MaxCompletion int
	// Deadline is the request's deadline: its reservation lapses Grace
	// after it.
	Deadline time.Time
	// ChargeOnLapse is true for work Azure OpenAI bills whether or not
	// it is settled (a request reserved just before its upstream call; a
	// long answer's generation, which runs on after its request): a hold
	// still there when it lapses is charged whole, not released. Else a
	// lapsed hold is released.
	ChargeOnLapse bool
}

// Reservation is what Reserve granted; Settle takes it back.
type Reservation struct {
	// ID is the request's id.
	ID string
	// Completion is the completion limit granted: the request's, or lower
	// when the whole did not fit.
	Completion int
	// Tokens is what is held: the prompt plus Completion.
	Tokens int64
	// Expires is when the hold lapses by itself.
	Expires time.Time

	at        time.Time // when it was taken: its windows' time
	oid       string    // whose it is, as its ledger row says
	partition string    // the user's
	ledger    string
	counters  []string // row keys
	hold      string   // the counters' property that holds it
	tenant    string   // the tenant month's partition; "" without a month limit
	tag       string   // its ledger row's Tag, written by its reservation
	leased    int64    // the tokens its hold took from this instance's lease (0: another's)
	// written is its rows as its last write left them, with their ETags:
	// the next write of it needs no read while they are current.
	written atomic.Pointer[written]
	// retries counts the store calls of it tried again.
	retries atomic.Int64
}

// Retries is how many of the store's calls for the reservation, its
// reservation and its settlement so far, were tried again because the
// store answered 503 ServerBusy or 500 OperationTimedOut, or did not
// answer in time.
func (r *Reservation) Retries() int64 { return r.retries.Load() }

// written is a reservation's rows as a write left them.
type written struct {
	counters []*counter
	ledger   ledger
}

// remember keeps the rows as a write left them, when the store's answer
// gave their new ETags (etags: one per row, counters then the ledger).
func (r *Reservation) remember(counters []*counter, l ledger, etags []azcore.ETag) {
	if len(etags) != len(counters)+1 {
		r.written.Store(nil)
		return
	}
	w := &written{ledger: l}
	for i, c := range counters {
		c = c.clone()
		c.found, c.etag = true, etags[i]
		w.counters = append(w.counters, c)
	}
	w.ledger.found, w.ledger.etag = true, etags[len(counters)]
	r.written.Store(w)
}

// recall is the reservation's rows as its last write left them (copies
// to change), and whether they are known; once: a write that fails
// reads them again.
func (r *Reservation) recall() ([]*counter, ledger, bool) {
	w := r.written.Swap(nil)
	if w == nil {
		return make([]*counter, len(r.counters)), ledger{}, false
	}
	out := make([]*counter, len(w.counters))
	for i, c := range w.counters {
		out[i] = c.clone()
	}
	return out, w.ledger, true
}

// Billed is what a request cost, as Azure OpenAI billed it.
type Billed struct {
	Prompt, Completion int
	// Abandoned are the tokens generated that the caller never got: billed all the same.
	Abandoned int
	// Unreported is true when Azure OpenAI billed tokens it does not
	// report (a cancelled generation's usage is null): the charge is then
	// an estimate of what was generated (Billed.estimate), and the
	// ledger says so.
	Unreported bool
	// Seen is what the settling hop received itself, for an estimate.
	Seen Seen
	// RanUnseen is true when the generation ran on unwatched since its
	// last hop ended (a cancel between hops): the estimate adds what it
	// generated meanwhile at its observed pace.
	RanUnseen bool
	// Status is the HTTP status the request was answered with.
	Status int
	// Backend names the backend of the pool that answered (the last
	// attempt's), for the ledger; empty when no attempt was made.
	Backend string
	// ResponseID, Hop and Outcome are a long answer's, for the ledger:
	// its response at Azure OpenAI, the hop that settled it, and how the
	// generation ended (completed, cancelled, caller_gone, limit, failed).
	// Empty for a request of one hop.
	ResponseID string
	Hop        int
	Outcome    string
}

// Seen is the completion tokens a hop of a long answer received from Azure
// OpenAI.
type Seen struct {
	Tokens int
	// Whole is true when Tokens counts the answer from its start (a hop
	// read whole), not from where the hop's cursor stood.
	Whole bool
	// Before is what the hops before this one received, as the hop's
	// sealed cursor says (0 for the first hop): where Tokens start.
	Before int
}

// Through is the tokens of the answer received through this hop, from its
// start.
func (sn Seen) Through() int64 {
	if sn.Whole {
		return int64(max(sn.Before, sn.Tokens))
	}
	return int64(sn.Before) + int64(sn.Tokens)
}

// through is the tokens received through this hop, when the hops charged
// before it received before: the furthest either reached. A hop read
// again from an older cursor (a retry, a replay) reaches no further than
// the hops charged already, unless it reads past them.
func (sn Seen) through(before int64) int64 { return max(before, sn.Through()) }

// Total is every billed token.
func (b Billed) Total() int64 { return int64(b.Prompt) + int64(b.Completion) + int64(b.Abandoned) }

// charge is what b costs in all, its ledger row l as read at now: what
// was billed, or an estimate when the cost was not reported. What is
// charged is never more than the reservation held (apply).
func (b Billed) charge(l *ledger, now time.Time) int64 {
	if b.Unreported {
		return b.estimate(l, now)
	}
	return b.Total()
}

// estimate is what a generation whose usage Azure OpenAI did not report
// generated, as far as its hops saw: the prompt, every token its hops
// received, and, for the time it ran on unwatched since its last hop
// ended, its pace until then (the tokens received over the time since its
// reservation) times that time. A generation run unwatched before any hop
// was charged has no pace to go by: its estimate is the whole hold.
func (b Billed) estimate(l *ledger, now time.Time) int64 {
	received := b.Seen.through(l.received)
	est := l.prompt + received
	if !b.RanUnseen {
		return est
	}
	ran := l.receivedAt.Sub(l.reservedAt)
	if l.receivedAt.IsZero() || l.reservedAt.IsZero() || ran <= 0 {
		return math.MaxInt64
	}
	unseen := max(0, now.Sub(l.receivedAt))
	return est + int64(float64(l.received)*unseen.Seconds()/ran.Seconds())
}

// Reserve holds what req can at most cost against every limit that
// applies. It fails with an *ExceededError when even req's prompt and a
// useful answer do not fit, an *UnavailableError when the store cannot be
// reached within the step deadline, ErrDuplicate for an id already
// reserved, or ctx's cause when the request's own deadline came first.
func (s *Store) Reserve(ctx context.Context, req Request) (*Reservation, error) {
	step, cancel := budget.Step(ctx, StepName, OpReserve, s.step)
	defer cancel()
	var retries atomic.Int64
	res, err := s.reserve(context.WithValue(step, retriesKey{}, &retries), req)
	if res != nil {
		res.retries.Add(retries.Load())
	}
	return res, classify(ctx, step, OpReserve, err)
}

// Settle charges res's windows what b cost in all (at most what res held),
// less what ChargeHop charged already, releases the rest, and writes the
// ledger row. Settling a reservation
// again does nothing. It runs even when ctx has ended (a request cut by its
// deadline was still billed): with ctx's values but not its cancellation,
// under a step deadline of its own. A reservation that cannot be settled
// lapses at its expiry.
func (s *Store) Settle(ctx context.Context, res *Reservation, b Billed) error {
	step, cancel := budget.Step(context.WithoutCancel(ctx), StepName, OpSettle, s.step)
	defer cancel()
	return classify(step, step, OpSettle, s.settle(context.WithValue(step, retriesKey{}, &res.retries), res, b))
}

// ChargeHop charges res's windows what a long answer's hop that handed out
// a cursor received (seen; the counted prompt too, on the first hop
// charged) and keeps the rest held, so that a generation whose caller
// never comes back has paid for what it was given. What is charged is
// the furthest into the answer any hop reached (seen.Through, from the
// hop's sealed cursor), so charging a hop again, or one read again from
// an older cursor, charges only what it received past that. Like Settle,
// it runs under a step deadline of its own.
func (s *Store) ChargeHop(ctx context.Context, res *Reservation, hop int, seen Seen) error {
	step, cancel := budget.Step(context.WithoutCancel(ctx), StepName, OpCharge, s.step)
	defer cancel()
	return classify(step, step, OpCharge, s.chargeHop(context.WithValue(step, retriesKey{}, &res.retries), res, hop, seen))
}

// Window is one window's tokens.
type Window struct {
	// Used is what was settled in the window.
	Used int64
	// Reserved is what requests under way hold.
	Reserved int64
	// Limit is the window's limit.
	Limit int64
	// ResetsAt is when the window ends.
	ResetsAt time.Time
}

// Usage is a caller's windows: nil for a limit that is not set.
type Usage struct {
	UserDay     *Window
	TenantMonth *Window
}

// Usage reads the caller's windows as they are now. Its errors are Reserve's.
func (s *Store) Usage(ctx context.Context, oid, tid string) (Usage, error) {
	step, cancel := budget.Step(ctx, StepName, OpUsage, s.step)
	defer cancel()
	u, err := s.usage(step, oid, tid)
	return u, classify(ctx, step, OpUsage, err)
}

// classify returns err as the package's contract says: nil, an error of
// the package, the request's own clock when that is what ended the call
// (parent's cause, or the step's cut to the request's deadline), or else an
// *UnavailableError.
func classify(parent, step context.Context, op string, err error) error {
	var exceeded *ExceededError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exceeded), errors.Is(err, ErrDuplicate), errors.Is(err, errUnknownReservation):
		return err
	case parent.Err() != nil:
		return fmt.Errorf("quota %s: %w", op, context.Cause(parent))
	}
	if st, ok := budget.StepCause(step); ok && st.Request > 0 {
		return fmt.Errorf("quota %s: %w", op, st)
	}
	return &UnavailableError{Op: op, Err: err}
}

// turns queues an instance's writes to one partition, so that its own
// requests never collide on a counter's ETag (each collision costs every
// loser a read and a batch): the writers that still collide are other
// instances, a few, not every request under way. A partition's queue exists
// while someone waits in it.
type turns struct {
	mu    sync.Mutex
	queue map[string]*turn
}

type turn struct {
	ch      chan struct{}
	waiting int
}

// take waits for partition's turn, or for ctx; release gives it back.
func (t *turns) take(ctx context.Context, partition string) (release func(), err error) {
	t.mu.Lock()
	if t.queue == nil {
		t.queue = map[string]*turn{}
	}
	q := t.queue[partition]
	if q == nil {
		q = &turn{ch: make(chan struct{}, 1)}
		t.queue[partition] = q
	}
	q.waiting++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		if q.waiting--; q.waiting == 0 {
			delete(t.queue, partition)
		}
		t.mu.Unlock()
	}
	select {
	case q.ch <- struct{}{}:
		return func() { <-q.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, context.Cause(ctx)
	}
}

// errUnknownReservation is a settlement whose ledger row is not there.
var errUnknownReservation = errors.New("quota: no such reservation in the ledger")

// Loopback says whether endpoint is on a loopback host (Azurite), the only
// kind New signs with the development key.
func Loopback(endpoint *url.URL) bool { return endpoint != nil && isLoopback(endpoint.Hostname()) }

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
