package quota_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/quota"
)

// These tests run against a real Azurite (internal/azuritetest): they fail
// where it is not installed (make azurite), unless TIMEBOX_SKIP_AZURITE=1.

// clock is a settable clock shared by the stores of a test.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock(t time.Time) *clock    { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)     { c.t.Store(&t) }
func (c *clock) add(d time.Duration) { c.set(c.Now().Add(d)) }
func (c *clock) Now() time.Time      { return *c.t.Load() }

// shared is one Azurite for the package's tests, each on a table of its
// own; TestMain stops it.
var shared struct {
	once sync.Once
	s    *azuritetest.Server
	dir  string
	err  error
	n    atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		shared.s.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

type fixture struct {
	az    *azuritetest.Server
	clock *clock
	opts  quota.Options
}

// setup is a store's options on a table of the test's own, in the shared
// Azurite.
func setup(t testing.TB, user, tenant int64) *fixture {
	t.Helper()
	azuritetest.Need(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "azurite")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		shared.s, shared.err = azuritetest.Launch(dir)
	})
	require.NoError(t, shared.err)
	return setupOn(t, shared.s, user, tenant)
}

func setupOn(t testing.TB, az *azuritetest.Server, user, tenant int64) *fixture {
	t.Helper()
	u, err := url.Parse(az.Endpoint)
	require.NoError(t, err)
	f := &fixture{az: az, clock: newClock(time.Date(2026, 12, 1, 18, 48, 0, 0, time.UTC))}
	table := "usage" + strconv.FormatInt(shared.n.Add(1), 10)
	f.opts = quota.Options{Endpoint: u, Table: table, UserDailyTokens: user, TenantMonthlyTokens: tenant, Now: f.clock.Now}
	return f
}

// store is one instance's store: each has its own client and connections.
func (f *fixture) store(t testing.TB) *quota.Store {
	t.Helper()
	s, err := quota.New(f.opts)
	require.NoError(t, err)
	return s
}

func (f *fixture) request(id string, prompt, completion int) quota.Request {
	return quota.Request{ID: id, OID: "user-1", TID: "tenant-1", Deployment: "gpt-4o-mini", Prompt: prompt, MaxCompletion: completion, Deadline: f.clock.Now().Add(200 * time.Second)}
}

func TestReserveThenSettle(t *testing.T) {
	f := setup(t, 10_000, 1_000_000)
	s := f.store(t)
	ctx := t.Context()

	res, err := s.Reserve(ctx, f.request("r1", 300, 1024))
	require.NoError(t, err)
	assert.Equal(t, 1024, res.Completion)
	assert.EqualValues(t, 1324, res.Tokens)
	u, err := s.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	require.NotNil(t, u.UserDay)
	require.NotNil(t, u.TenantMonth)
	assert.Equal(t, quota.Window{Used: 0, Reserved: 1324, Limit: 10_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, *u.UserDay)
	assert.Equal(t, quota.Window{Used: 0, Reserved: 1324, Limit: 1_000_000, ResetsAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}, *u.TenantMonth)

	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 300, Completion: 200, Abandoned: 40, Status: 200}))
	u, err = s.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 540, u.UserDay.Used, "prompt, completion and abandoned tokens are charged")
	assert.EqualValues(t, 0, u.UserDay.Reserved, "the rest is released")
	assert.EqualValues(t, 540, u.TenantMonth.Used)

	// Settling again (a retried settlement) charges nothing more.
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 300, Completion: 200, Abandoned: 40, Status: 200}))
	u, err = s.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 540, u.UserDay.Used)

	// Another user of the tenant has a day of their own, and the tenant's month.
	u, err = s.Usage(ctx, "user-2", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 0, u.UserDay.Used)
	assert.EqualValues(t, 540, u.TenantMonth.Used)

	// A request id names one request.
	_, err = s.Reserve(ctx, f.request("r1", 10, 10))
	assert.ErrorIs(t, err, quota.ErrDuplicate)
}

// TestSettleAfterTheRequestEnded: a request cut by its deadline (or whose
// caller went away) was billed all the same: its settlement still runs.
func TestSettleAfterTheRequestEnded(t *testing.T) {
	f := setup(t, 10_000, 0)
	s := f.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	res, err := s.Reserve(ctx, f.request("cut", 100, 500))
	require.NoError(t, err)
	cancel()
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 100, Completion: 20, Abandoned: 80, Status: 500}))
	u, err := s.Usage(t.Context(), "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 200, u.UserDay.Used)
	assert.EqualValues(t, 0, u.UserDay.Reserved)
}

func TestLedgerRowPerRequest(t *testing.T) {
	f := setup(t, 10_000, 0)
	s := f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("req-42", 100, 500))
	require.NoError(t, err)
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 101, Completion: 77, Abandoned: 3, Status: 200, Backend: "swe"}))

	// What an admin's query reads: the tenant's month, one user's rows.
	table := f.az.Table(t, f.opts.Table)
	filter := "PartitionKey ge 'tenant-1_2026-12_' and PartitionKey lt 'tenant-1_2026-12`' and Oid eq 'user-1'"
	pager := table.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	var rows []map[string]any
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, e := range page.Entities {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e, &m))
			rows = append(rows, m)
		}
	}
	require.Len(t, rows, 1)
	row := rows[0]
	assert.Equal(t, "req_req-42", row["RowKey"])
	assert.Equal(t, "req-42", row["RequestId"])
	assert.Equal(t, "tenant-1", row["Tid"])
	assert.Equal(t, "gpt-4o-mini", row["Deployment"])
	assert.Equal(t, "settled", row["State"])
	assert.EqualValues(t, 101, row["PromptTokens"])
	assert.EqualValues(t, 77, row["CompletionTokens"])
	assert.EqualValues(t, 3, row["AbandonedTokens"])
	assert.EqualValues(t, 200, row["Status"])
	assert.Equal(t, "swe", row["Backend"], "the backend of the pool that answered")
	assert.Equal(t, "181", row["Charged"])
	assert.Equal(t, "2026-12-01T18:48:00Z", row["SettledAt"])
}

func TestLowerCompletionLimitWhenTheWholeDoesNotFit(t *testing.T) {
	f := setup(t, 1_000, 0)
	f.opts.MinAnswer = 100
	s := f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("a", 200, 500))
	require.NoError(t, err)
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 200, Completion: 500, Status: 200}))

	// 300 left: a 100-token prompt gets 200 of its 500, not a refusal.
	res, err = s.Reserve(ctx, f.request("b", 100, 500))
	require.NoError(t, err)
	assert.Equal(t, 200, res.Completion)
	assert.EqualValues(t, 300, res.Tokens)
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 100, Completion: 200, Status: 200}))

	// Nothing left: refused, naming the limit and its reset.
	_, err = s.Reserve(ctx, f.request("c", 100, 500))
	var exceeded *quota.ExceededError
	require.ErrorAs(t, err, &exceeded)
	assert.Equal(t, quota.UserDay, exceeded.Limit)
	assert.EqualValues(t, 1_000, exceeded.Size)
	assert.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), exceeded.ResetsAt)
	assert.Equal(t, 5*time.Hour+12*time.Minute, exceeded.RetryAfter())
	assert.Equal(t, "Your daily limit of 1,000 tokens is used up. It resets at 00:00 UTC, in 5 h 12 min.", exceeded.Message())
}

// TestConcurrentReservationsNeverExceedTheLimit: 50 requests of one user at
// once, through two stores that share nothing but the table (two
// instances): every one is granted or refused as exceeded, none is lost,
// and the settled usage never exceeds the limit.
func TestConcurrentReservationsNeverExceedTheLimit(t *testing.T) {
	const limit, prompt, completion = 3_000, 100, 200
	f := setup(t, limit, 1_000_000)
	f.opts.MinAnswer = completion // whole or nothing: each granted request holds 300
	instances := []*quota.Store{f.store(t), f.store(t)}
	ctx := t.Context()

	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			s := instances[i%2]
			res, err := s.Reserve(ctx, f.request("c"+string(rune('A'+i/26))+string(rune('a'+i%26)), prompt, completion))
			var exceeded *quota.ExceededError
			switch {
			case errors.As(err, &exceeded):
				refused.Add(1)
				return
			case err != nil:
				errs <- err
				return
			}
			granted.Add(1)
			// The other instance settles half of them.
			if i%4 < 2 {
				s = instances[(i+1)%2]
			}
			if err := s.Settle(ctx, res, quota.Billed{Prompt: prompt, Completion: completion, Status: 200}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	release(t, instances...)
	u, err := instances[0].Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 50, granted.Load()+refused.Load(), "every request is granted or refused")
	assert.LessOrEqual(t, u.UserDay.Used, int64(limit), "settled usage never exceeds the limit")
	assert.EqualValues(t, granted.Load()*(prompt+completion), u.UserDay.Used, "every granted request is charged")
	assert.EqualValues(t, u.UserDay.Used, u.TenantMonth.Used)
	assert.EqualValues(t, 0, u.UserDay.Reserved)
	assert.Positive(t, refused.Load())
	assert.EqualValues(t, limit/(prompt+completion), granted.Load(), "the limit is used to the full")
}

// TestCrashedReservationLapsesAtItsExpiry: a reservation never settled (its
// instance was killed) holds its tokens until its request's deadline plus
// the grace, then frees them by itself.
func TestCrashedReservationLapsesAtItsExpiry(t *testing.T) {
	f := setup(t, 1_000, 0)
	crashed, survivor := f.store(t), f.store(t)
	ctx := t.Context()
	req := f.request("crashed", 100, 900)
	_, err := crashed.Reserve(ctx, req)
	require.NoError(t, err)

	_, err = survivor.Reserve(ctx, f.request("while-held", 100, 900))
	var exceeded *quota.ExceededError
	require.ErrorAs(t, err, &exceeded, "the crashed request's hold counts until it lapses")
	// Refused because of the hold, not a day used up: the answer says so
	// and asks to wait until the hold ends, not until midnight.
	lapses := req.Deadline.Add(quota.Grace)
	assert.EqualValues(t, 0, exceeded.Used)
	assert.EqualValues(t, 1_000, exceeded.Held)
	assert.WithinRange(t, exceeded.FreesAt, lapses, lapses.Add(10*time.Second), "the hold's end, on its 10 s step")
	assert.Equal(t, exceeded.FreesAt.Sub(f.clock.Now()).Round(time.Second), exceeded.RetryAfter())
	assert.Contains(t, exceeded.Message(), "is held by answers under way (0 used, 1,000 held)")

	f.clock.set(req.Deadline.Add(quota.Grace).Add(10 * time.Second))
	u, err := survivor.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 0, u.UserDay.Reserved)
	assert.EqualValues(t, 0, u.UserDay.Used)
	res, err := survivor.Reserve(ctx, f.request("after", 100, 900))
	require.NoError(t, err)
	assert.Equal(t, 900, res.Completion)
}

// TestRefusalBecauseOfHoldsWaitsForEnoughOfThem: a window whose charges
// leave room but whose holds take it refuses until enough holds end (the
// one that frees enough, not merely the first), and a request that would
// not fit even then is refused until the reset.
func TestRefusalBecauseOfHoldsWaitsForEnoughOfThem(t *testing.T) {
	f := setup(t, 1_000, 0)
	f.opts.MinAnswer = 100
	s := f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("settled", 100, 200))
	require.NoError(t, err)
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 100, Completion: 200, Status: 200}))
	early := f.request("early", 100, 200) // holds 300, lapses first
	early.Deadline = f.clock.Now().Add(100 * time.Second)
	_, err = s.Reserve(ctx, early)
	require.NoError(t, err)
	late := f.request("late", 100, 300) // holds 400, lapses later
	late.Deadline = f.clock.Now().Add(300 * time.Second)
	_, err = s.Reserve(ctx, late)
	require.NoError(t, err)

	// 350 needed: the early hold's 300 is not enough; the late one's is.
	_, err = s.Reserve(ctx, f.request("waits", 250, 500))
	var exceeded *quota.ExceededError
	require.ErrorAs(t, err, &exceeded)
	assert.EqualValues(t, 300, exceeded.Used)
	assert.EqualValues(t, 700, exceeded.Held)
	lapses := late.Deadline.Add(quota.Grace)
	assert.WithinRange(t, exceeded.FreesAt, lapses, lapses.Add(10*time.Second))
	assert.Equal(t, exceeded.FreesAt.Sub(f.clock.Now()), exceeded.RetryAfter())
	assert.Equal(t, "Your daily limit of 1,000 tokens is held by answers under way (300 used, 700 held). Try again when they end, in 6 min at most.", exceeded.Message())

	// 850 needed: more than the charges leave, whatever ends.
	_, err = s.Reserve(ctx, f.request("never", 750, 500))
	require.ErrorAs(t, err, &exceeded)
	assert.True(t, exceeded.FreesAt.IsZero())
	assert.Equal(t, 5*time.Hour+12*time.Minute, exceeded.RetryAfter())
	assert.Equal(t, "Your daily limit of 1,000 tokens is used up. It resets at 00:00 UTC, in 5 h 12 min.", exceeded.Message())
}

// TestLateSettlementNeverExceedsTheLimit: a settlement that comes after its
// hold lapsed, when others have taken the window meanwhile, charges only
// what is left.
func TestLateSettlementNeverExceedsTheLimit(t *testing.T) {
	f := setup(t, 1_000, 0)
	s := f.store(t)
	ctx := t.Context()
	req := f.request("slow", 100, 900)
	slow, err := s.Reserve(ctx, req)
	require.NoError(t, err)
	f.clock.set(req.Deadline.Add(quota.Grace).Add(10 * time.Second))
	other, err := s.Reserve(ctx, f.request("other", 100, 600))
	require.NoError(t, err)
	require.NoError(t, s.Settle(ctx, other, quota.Billed{Prompt: 100, Completion: 600, Status: 200}))
	require.NoError(t, s.Settle(ctx, slow, quota.Billed{Prompt: 100, Completion: 900, Status: 200}))
	u, err := s.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 1_000, u.UserDay.Used)
}

// TestWindowRollsOverAtUTCMidnight: a day used up at 23:59:50 UTC is a new
// day ten seconds later; the tenant's month rolls over on the first.
func TestWindowRollsOverAtUTCMidnight(t *testing.T) {
	f := setup(t, 1_000, 5_000)
	f.clock.set(time.Date(2026, 12, 31, 23, 59, 50, 0, time.UTC))
	s := f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("late", 500, 500))
	require.NoError(t, err)
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 500, Completion: 500, Status: 200}))
	_, err = s.Reserve(ctx, f.request("refused", 10, 10))
	var exceeded *quota.ExceededError
	require.ErrorAs(t, err, &exceeded)
	assert.Equal(t, 10*time.Second, exceeded.RetryAfter())
	assert.Equal(t, "Your daily limit of 1,000 tokens is used up. It resets at 00:00 UTC, in 1 min.", exceeded.Message())

	f.clock.add(11 * time.Second) // 2027-01-01 00:00:01 UTC
	u, err := s.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.Equal(t, quota.Window{Limit: 1_000, ResetsAt: time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)}, *u.UserDay)
	assert.Equal(t, quota.Window{Limit: 5_000, ResetsAt: time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)}, *u.TenantMonth)
	_, err = s.Reserve(ctx, f.request("early", 500, 500))
	require.NoError(t, err)
}

// TestStoreStoppedIsUnavailableFast: a store that stops answering mid-run
// is an *UnavailableError at once, not a wait.
func TestStoreStoppedIsUnavailableFast(t *testing.T) {
	f := setupOn(t, azuritetest.Start(t), 1_000, 0)
	s := f.store(t)
	ctx := t.Context()
	_, err := s.Reserve(ctx, f.request("before", 10, 10))
	require.NoError(t, err)
	f.az.Stop()

	start := time.Now()
	_, err = s.Reserve(ctx, f.request("after", 10, 10))
	elapsed := time.Since(start)
	var unavailable *quota.UnavailableError
	require.ErrorAs(t, err, &unavailable)
	assert.Equal(t, "reserve", unavailable.Op)
	assert.Equal(t, quota.UnavailableRetryAfter, unavailable.RetryAfter())
	assert.Less(t, elapsed, 2*time.Second, "a refused connection is answered at once (an upper bound: a real socket)")
	_, err = s.Usage(ctx, "user-1", "tenant-1")
	assert.ErrorAs(t, err, &unavailable)
}

// TestSettleByRefOnAnotherInstance: a reservation named by its ref is
// settled by another instance that shares only the table (a long answer's
// later hop), once: the instance that took it settling too charges
// nothing more. A ref names the caller's own windows only: the same ref
// read for another caller settles nothing of the first's.
func TestSettleByRefOnAnotherInstance(t *testing.T) {
	f := setup(t, 10_000, 1_000_000)
	first, other := f.store(t), f.store(t)
	ctx := t.Context()
	req := f.request("long-1", 300, 1024)
	req.Deadline = f.clock.Now().Add(30 * time.Minute) // a generation's limit
	res, err := first.Reserve(ctx, req)
	require.NoError(t, err)

	for _, who := range [][2]string{{"user-2", "tenant-1"}, {"user-1", "tenant-2"}} {
		stranger, err := quota.ParseRef(res.Ref(), who[0], who[1])
		require.NoError(t, err)
		assert.Error(t, other.Settle(ctx, stranger, quota.Billed{Status: 200}), "not %s's reservation", who)
	}

	f.clock.add(25 * time.Minute) // long past a hop's budget: still held
	u, err := other.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.EqualValues(t, 1324, u.UserDay.Reserved)

	again, err := quota.ParseRef(res.Ref(), "user-1", "tenant-1")
	require.NoError(t, err)
	require.NoError(t, other.Settle(ctx, again, quota.Billed{Prompt: 300, Completion: 700, Status: 200, ResponseID: "resp_1", Hop: 3, Outcome: "completed"}))
	require.NoError(t, first.Settle(ctx, res, quota.Billed{Prompt: 300, Completion: 1024, Status: 200}))
	release(t, first, other)
	u, err = first.Usage(ctx, "user-1", "tenant-1")
	require.NoError(t, err)
	assert.Equal(t, quota.Window{Used: 1000, Limit: 10_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, *u.UserDay, "charged once")
	assert.EqualValues(t, 1000, u.TenantMonth.Used)

	m := ledgerRow(t, f, "long-1")
	assert.Equal(t, "resp_1", m["ResponseId"])
	assert.EqualValues(t, 3, m["Hop"])
	assert.Equal(t, "completed", m["Outcome"])
	assert.Equal(t, "1000", m["Charged"])
	assert.Nil(t, m["UsageUnreported"])

	for _, bad := range []string{"", "q1|1|2|3|d", "q2|1|2|3|d|x", "q1|a|2|3|d|x", "q1|1|2|3|z|x", "q1|1|2|-3|d|x"} {
		_, err := quota.ParseRef(bad, "user-1", "tenant-1")
		assert.ErrorIs(t, err, quota.ErrBadRef, bad)
	}
}

// release folds the stores' leases of tenant months into the table (a
// store's tick does it within seconds): what another instance reads of a
// tenant's month is then all that was settled.
func release(t *testing.T, stores ...*quota.Store) {
	t.Helper()
	for _, s := range stores {
		require.NoError(t, s.Release(t.Context()))
	}
}

// userDay is user-1's day in tenant-1, as s reads it now.
func userDay(t *testing.T, s *quota.Store) quota.Window {
	t.Helper()
	u, err := s.Usage(t.Context(), "user-1", "tenant-1")
	require.NoError(t, err)
	return *u.UserDay
}

// ledgerRow is the ledger row of id, as an admin reads it.
func ledgerRow(t *testing.T, f *fixture, id string) map[string]any {
	t.Helper()
	row, err := f.az.Table(t, f.opts.Table).GetEntity(t.Context(), "tenant-1_2026-12_user-1", "req_"+id, nil)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(row.Value, &m))
	return m
}

// A long answer's hops that hand out a cursor are charged what they
// received, the prompt with the first, on any instance, and the rest stays
// held: what is charged is the furthest into the answer a hop reached (its
// cursor's Before and what it received), so a retried or replayed hop
// charges only what it read past that. The end charges only what is left
// of Azure's usage, less than nothing when the hops were charged more.
func TestHopsChargedToTheFurthestReachThenTheRest(t *testing.T) {
	f := setup(t, 10_000, 0)
	s, other := f.store(t), f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("hops", 300, 1024))
	require.NoError(t, err)
	require.NoError(t, s.ChargeHop(ctx, res, 1, quota.Seen{Tokens: 100}))
	assert.EqualValues(t, 400, userDay(t, s).Used, "the prompt and hop 1's tokens")
	assert.EqualValues(t, 924, userDay(t, s).Reserved, "the rest held")

	ref, err := quota.ParseRef(res.Ref(), "user-1", "tenant-1")
	require.NoError(t, err)
	require.NoError(t, other.ChargeHop(ctx, ref, 2, quota.Seen{Before: 100, Tokens: 200}))
	require.NoError(t, s.ChargeHop(ctx, res, 2, quota.Seen{Before: 100, Tokens: 200}), "a retried hop 2")
	require.NoError(t, s.ChargeHop(ctx, res, 2, quota.Seen{Before: 100, Tokens: 150}), "a replayed hop 2 that stopped sooner")
	require.NoError(t, s.ChargeHop(ctx, res, 3, quota.Seen{Before: 300, Tokens: 350, Whole: true}), "read whole: 50 more")
	assert.Equal(t, quota.Window{Used: 650, Reserved: 674, Limit: 10_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, userDay(t, s))
	require.NoError(t, s.ChargeHop(ctx, res, 2, quota.Seen{Before: 100, Tokens: 300}), "hop 2's cursor replayed, reading 50 past hop 3")
	assert.Equal(t, quota.Window{Used: 700, Reserved: 624, Limit: 10_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, userDay(t, s))
	m := ledgerRow(t, f, "hops")
	assert.EqualValues(t, 3, m["ChargedHop"], "the latest hop charged")
	assert.Equal(t, "400", m["Received"])
	assert.Equal(t, "700", m["Charged"])
	assert.Equal(t, "reserved", m["State"])

	require.NoError(t, other.Settle(ctx, ref, quota.Billed{Prompt: 290, Completion: 340, Status: 200, ResponseID: "resp_1", Hop: 4, Outcome: "completed"}))
	assert.Equal(t, quota.Window{Used: 630, Limit: 10_000, ResetsAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, userDay(t, s), "Azure's usage, once")
	require.NoError(t, s.ChargeHop(ctx, res, 4, quota.Seen{Before: 400, Tokens: 10}))
	assert.EqualValues(t, 630, userDay(t, s).Used, "nothing after the end")
	assert.Equal(t, "630", ledgerRow(t, f, "hops")["Charged"])
}

// A long answer's hop charges and its settlement take from its own hold
// only: another request's hold that lapses in the same 10 s (the same
// property of the window's row) stays whole.
func TestHopsReleaseOnlyTheirOwnHold(t *testing.T) {
	f := setup(t, 10_000, 0)
	s := f.store(t)
	ctx := t.Context()
	res, err := s.Reserve(ctx, f.request("long", 300, 1024))
	require.NoError(t, err)
	beside, err := s.Reserve(ctx, f.request("beside", 100, 100))
	require.NoError(t, err)
	require.NoError(t, s.ChargeHop(ctx, res, 1, quota.Seen{Tokens: 100}))
	require.NoError(t, s.Settle(ctx, res, quota.Billed{Prompt: 300, Completion: 500, Status: 200}))
	day := userDay(t, s)
	assert.EqualValues(t, 800, day.Used)
	assert.Equal(t, beside.Tokens, day.Reserved, "the other request's hold, whole")
}

// A generation whose usage Azure did not report (cancelled) is charged
// what its hops saw: the prompt and the tokens received, plus, for the
// time it ran unwatched since the last hop, its pace until then; never
// more than the hold. Before any hop was charged there is no pace: the
// whole hold.
func TestUnreportedCostIsEstimated(t *testing.T) {
	f := setup(t, 100_000, 0)
	s := f.store(t)
	ctx := t.Context()
	cancelled := func(unseen bool, before, seen int) quota.Billed {
		return quota.Billed{Unreported: true, Seen: quota.Seen{Before: before, Tokens: seen}, RanUnseen: unseen, Status: 204, ResponseID: "resp_2", Hop: 2, Outcome: "cancelled"}
	}
	charged := func(id string) string { return ledgerRow(t, f, id)["Charged"].(string) }
	reserve := func(id string) *quota.Reservation {
		res, err := s.Reserve(ctx, f.request(id, 300, 1024))
		require.NoError(t, err)
		return res
	}

	between := reserve("between")
	f.clock.add(100 * time.Second)
	require.NoError(t, s.ChargeHop(ctx, between, 1, quota.Seen{Tokens: 200})) // 2 tokens a second
	f.clock.add(50 * time.Second)
	require.NoError(t, s.Settle(ctx, between, cancelled(true, 200, 0)))
	assert.Equal(t, "600", charged("between"), "300 + 200 + 2/s for 50 s")
	m := ledgerRow(t, f, "between")
	assert.Equal(t, true, m["UsageUnreported"])
	assert.Equal(t, "cancelled", m["Outcome"])

	midHop := reserve("midhop")
	f.clock.add(100 * time.Second)
	require.NoError(t, s.ChargeHop(ctx, midHop, 1, quota.Seen{Tokens: 200}))
	f.clock.add(50 * time.Second)
	require.NoError(t, s.Settle(ctx, midHop, cancelled(false, 200, 90)))
	assert.Equal(t, "590", charged("midhop"), "what the hops received: nothing unwatched")

	long := reserve("long")
	f.clock.add(100 * time.Second)
	require.NoError(t, s.ChargeHop(ctx, long, 1, quota.Seen{Tokens: 200}))
	f.clock.add(time.Hour)
	require.NoError(t, s.Settle(ctx, long, cancelled(true, 200, 0)))
	assert.Equal(t, "1324", charged("long"), "never more than the hold")

	unpaced := reserve("unpaced")
	f.clock.add(100 * time.Second)
	require.NoError(t, s.Settle(ctx, unpaced, cancelled(true, 0, 0)))
	assert.Equal(t, "1324", charged("unpaced"), "no pace seen: the whole hold")

	day := userDay(t, s)
	assert.EqualValues(t, 600+590+1324+1324, day.Used)
	assert.EqualValues(t, 0, day.Reserved)
}

// A long answer's hold (ChargeOnLapse) that lapses with no hop to settle
// it (its caller never came back) is charged, not released: the
// generation ran on at Azure and was billed, at most the hold. A late
// settlement with Azure's usage (through its ref, on another instance)
// charges that instead; a hop charge after the lapse, nothing.
func TestLapsedLongAnswerHoldIsCharged(t *testing.T) {
	f := setup(t, 10_000, 0)
	s, other := f.store(t), f.store(t)
	ctx := t.Context()
	req := f.request("abandoned", 300, 1024)
	req.ChargeOnLapse = true
	res, err := s.Reserve(ctx, req)
	require.NoError(t, err)
	crashed, err := s.Reserve(ctx, f.request("crashed", 100, 100))
	require.NoError(t, err)
	require.NoError(t, s.ChargeHop(ctx, res, 1, quota.Seen{Tokens: 100}))
	assert.EqualValues(t, 400, userDay(t, s).Used)
	assert.EqualValues(t, 924+200, userDay(t, s).Reserved)

	f.clock.set(res.Expires.Add(quota.Grace))
	assert.EqualValues(t, 1324, userDay(t, s).Used, "the long answer's whole hold; the crashed request's released")
	assert.EqualValues(t, 0, userDay(t, s).Reserved)
	_, err = s.Reserve(ctx, f.request("next", 100, 100))
	require.NoError(t, err, "a write drops the lapsed holds")
	assert.EqualValues(t, 1324, userDay(t, s).Used, "charged once")
	assert.EqualValues(t, 200, userDay(t, s).Reserved)

	require.NoError(t, s.ChargeHop(ctx, res, 2, quota.Seen{Before: 100, Tokens: 100}))
	assert.EqualValues(t, 1324, userDay(t, s).Used, "a hop after the lapse charges nothing")
	ref, err := quota.ParseRef(res.Ref(), "user-1", "tenant-1")
	require.NoError(t, err)
	require.NoError(t, other.Settle(ctx, ref, quota.Billed{Prompt: 300, Completion: 500, Status: 404, ResponseID: "resp_3", Hop: 5, Outcome: "completed"}))
	assert.EqualValues(t, 800, userDay(t, s).Used, "Azure's usage, when a hop learns it")
	assert.Equal(t, "800", ledgerRow(t, f, "abandoned")["Charged"])
	assert.Equal(t, true, ledgerRow(t, f, "abandoned")["ChargeOnLapse"])
	assert.Nil(t, ledgerRow(t, f, "crashed")["ChargeOnLapse"])
	require.NoError(t, s.Settle(ctx, crashed, quota.Billed{Prompt: 100, Completion: 100, Status: 200}))
	assert.EqualValues(t, 800+200, userDay(t, s).Used, "a late settlement of a released hold charges what fits")
}
