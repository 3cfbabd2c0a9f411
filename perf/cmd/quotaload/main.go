// Command quotaload is the driver of make bench-quota: N quota stores (N
// instances of the app) with C callers each reserve and settle in a loop
// against one Azurite on loopback, with a latency added to every store call
// as a stand-in for Azure Table Storage's round trip within a region, for
// one tenant and for many. It prints reservations a second, reserve and
// settle p50/p99, store calls and ETag conflicts per reservation, the
// hottest partition's entity operations a second (Table Storage's target
// is 2,000 a partition), errors, and each tenant's final usage against its
// limit.
//
// Every run is bounded: each phase runs -duration, and the whole run stops
// at -timeout. Its only target is the Azurite it starts on 127.0.0.1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/quota"
)

type config struct {
	stores, callers    int
	tenants            []int
	latency, duration  time.Duration
	timeout            time.Duration
	tenantLimit        int64
	userLimit          int64
	prompt, completion int
	billed             int
}

func main() {
	var c config
	var tenants string
	flag.IntVar(&c.stores, "stores", 40, "stores (instances), each with its own client and connections")
	flag.IntVar(&c.callers, "callers", 4, "callers per store, each reserving then settling in a loop")
	flag.StringVar(&tenants, "tenants", "1,40", "the phases' tenant counts, comma-separated (1: every caller of one tenant)")
	flag.DurationVar(&c.latency, "latency", 8*time.Millisecond, "added to every store call")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of a phase")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Minute, "the whole run's limit")
	flag.Int64Var(&c.tenantLimit, "tenant-limit", 0, "each tenant's month limit in tokens; 0: reached a little before a phase's end at the target rate")
	flag.Int64Var(&c.userLimit, "user-limit", 1_000_000, "each user's day limit in tokens (a caller is a user)")
	flag.IntVar(&c.prompt, "prompt", 100, "each request's counted prompt")
	flag.IntVar(&c.completion, "completion", 400, "each request's completion limit")
	flag.IntVar(&c.billed, "billed", 300, "the completion tokens each settlement is billed")
	flag.Parse()
	for _, t := range strings.Split(tenants, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "quotaload: -tenants: not a count:", t)
			os.Exit(2)
		}
		c.tenants = append(c.tenants, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "quotaload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "quotaload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	az, err := azuritetest.Launch(dir)
	if err != nil {
		return fmt.Errorf("azurite: %w", err)
	}
	defer az.Stop()
	endpoint, err := url.Parse(az.Endpoint)
	if err != nil {
		return err
	}
	fmt.Printf("%d stores x %d callers, %s added per store call, %s a phase; a request: prompt %d, completion limit %d, billed %d\n",
		c.stores, c.callers, c.latency, c.duration, c.prompt, c.completion, c.billed)
	for i, tenants := range c.tenants {
		if err := phase(ctx, c, endpoint, "load"+strconv.Itoa(i), tenants); err != nil {
			return err
		}
	}
	return nil
}

// tally is what the callers of a phase saw.
type tally struct {
	mu              sync.Mutex
	reserve, settle []time.Duration
	calls           []int64 // store calls on each question's path
	granted         int64
	refused         int64
	errs            map[string]int
	settled         map[string]int64 // tokens settled per tenant, as the callers billed them
}

func (t *tally) fail(op string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var u *quota.UnavailableError
	kind := "other"
	if errors.As(err, &u) {
		kind = "unavailable"
	}
	t.errs[op+" "+kind]++
}

func phase(ctx context.Context, c config, endpoint *url.URL, table string, tenants int) error {
	limit := c.tenantLimit
	if limit == 0 {
		// At 500 reservations a second the tenants together spend
		// 500 x (prompt + billed) a second: the limits are reached at
		// about 80 % of the phase at that rate.
		limit = int64(float64(500*(c.prompt+c.billed)) * c.duration.Seconds() * 0.8 / float64(tenants))
	}
	ops := &partitionOps{n: map[string]int64{}}
	opts := quota.Options{Endpoint: endpoint, Table: table, UserDailyTokens: c.userLimit, TenantMonthlyTokens: limit}
	stores := make([]*quota.Store, c.stores)
	for i := range stores {
		o := opts
		o.Transport = &slow{next: &http.Client{Transport: newTransport()}, latency: c.latency, ops: ops}
		s, err := quota.New(o)
		if err != nil {
			return err
		}
		stores[i] = s
	}
	// The table exists before the clock starts.
	if _, err := stores[0].Usage(ctx, "warm", "warm"); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	ops.reset()
	calls0, conflicts0, retries0 := sum(stores, (*quota.Store).Calls), sum(stores, (*quota.Store).Conflicts), sum(stores, (*quota.Store).Retries)

	t := &tally{errs: map[string]int{}, settled: map[string]int64{}}
	start := time.Now()
	// The calls run under ctx, the run's: a deadline of the phase's own
	// would cut the step deadlines of its last calls short (budget.Step).
	end := start.Add(c.duration)
	var wg sync.WaitGroup
	var seq atomic.Int64
	for i, s := range stores {
		for j := range c.callers {
			caller := i*c.callers + j
			tid := "tenant-" + strconv.Itoa(caller%tenants)
			oid := "user-" + strconv.Itoa(caller)
			wg.Go(func() { loop(ctx, end, c, s, t, &seq, oid, tid) })
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	calls, conflicts := sum(stores, (*quota.Store).Calls)-calls0, sum(stores, (*quota.Store).Conflicts)-conflicts0
	retries := sum(stores, (*quota.Store).Retries) - retries0
	hot, all := ops.hottest()

	label := "one tenant"
	if tenants > 1 {
		label = strconv.Itoa(tenants) + " tenants"
	}
	fmt.Printf("\n%s, %d stores x %d callers:\n", label, c.stores, c.callers)
	per := func(n int64) float64 { return float64(n) / float64(max(1, t.granted)) }
	fmt.Printf("  reservations/s   %.0f (%d granted, %d refused as exceeded, in %.1f s)\n", float64(t.granted)/elapsed.Seconds(), t.granted, t.refused, elapsed.Seconds())
	fmt.Printf("  reserve p50/p99  %s / %s\n", pct(t.reserve, 50), pct(t.reserve, 99))
	fmt.Printf("  settle p50/p99   %s / %s\n", pct(t.settle, 50), pct(t.settle, 99))
	fmt.Printf("  store calls      %.1f per reservation (p50: %d); ETag conflicts %.2f, retries %.2f per reservation\n", per(calls), pctInt(t.calls, 50), per(conflicts), per(retries))
	fmt.Printf("  entity ops/s     %.0f in the hottest partition (target 2,000), %.0f in all (target 20,000)\n", float64(hot)/elapsed.Seconds(), float64(all)/elapsed.Seconds())
	errs := "0"
	if len(t.errs) > 0 {
		errs = fmt.Sprint(t.errs)
	}
	fmt.Printf("  errors           %s\n", errs)

	// Final usage, once every store has folded its leases in (as an
	// instance that stops does): what each tenant's window says against
	// its limit and against what the callers settled.
	for _, s := range stores {
		if err := s.Release(ctx); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	check, err := quota.New(opts)
	if err != nil {
		return err
	}
	var over, worst int64
	var settledAll, usedAll int64
	for k := range tenants {
		tid := "tenant-" + strconv.Itoa(k)
		u, err := check.Usage(ctx, "check", tid)
		if err != nil {
			return fmt.Errorf("usage of %s: %w", tid, err)
		}
		used := u.TenantMonth.Used
		settledAll += t.settled[tid]
		usedAll += used
		over = max(over, used-limit)
		worst = max(worst, used)
	}
	fmt.Printf("  tenant month     limit %d each; most used %d (over the limit by %d at most); used %d in all against %d settled by the callers\n",
		limit, worst, max(0, over), usedAll, settledAll)
	return nil
}

// loop reserves and settles as one caller until end, or ctx's end.
func loop(ctx context.Context, end time.Time, c config, s *quota.Store, t *tally, seq *atomic.Int64, oid, tid string) {
	for ctx.Err() == nil && time.Now().Before(end) {
		id := "q" + strconv.FormatInt(seq.Add(1), 10)
		var calls atomic.Int64
		qctx := context.WithValue(ctx, pathKey{}, &calls)
		began := time.Now()
		res, err := s.Reserve(qctx, quota.Request{ID: id, OID: oid, TID: tid, Deployment: "gpt-4o-mini",
			Prompt: c.prompt, MaxCompletion: c.completion, Deadline: began.Add(200 * time.Second)})
		took := time.Since(began)
		var exceeded *quota.ExceededError
		switch {
		case errors.As(err, &exceeded):
			t.mu.Lock()
			t.refused++
			t.mu.Unlock()
			// A refused caller asks again a little later, as a person
			// would, rather than spinning on the store.
			wait(ctx, min(100*time.Millisecond, time.Until(end)))
			continue
		case ctx.Err() != nil:
			return
		case err != nil:
			t.fail("reserve", err)
			continue
		}
		billed := quota.Billed{Prompt: c.prompt, Completion: min(c.billed, res.Completion), Status: 200}
		began = time.Now()
		err = s.Settle(qctx, res, billed)
		settled := time.Since(began)
		t.mu.Lock()
		t.reserve = append(t.reserve, took)
		t.calls = append(t.calls, calls.Load())
		t.granted++
		if err == nil {
			t.settle = append(t.settle, settled)
			t.settled[tid] += billed.Total()
		}
		t.mu.Unlock()
		if err != nil {
			t.fail("settle", err)
		}
	}
}

func wait(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

func sum(stores []*quota.Store, f func(*quota.Store) int64) int64 {
	var n int64
	for _, s := range stores {
		n += f(s)
	}
	return n
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	slices.Sort(d)
	v := d[min(len(d)-1, len(d)*p/100)]
	return strconv.FormatFloat(float64(v.Microseconds())/1000, 'f', 1, 64) + " ms"
}

func pctInt(n []int64, p int) int64 {
	if len(n) == 0 {
		return 0
	}
	slices.Sort(n)
	return n[min(len(n)-1, len(n)*p/100)]
}

// slow adds latency to every store call and counts the entity operations
// each partition is asked for (a read is one, a batch one per entity).
type slow struct {
	next    *http.Client
	latency time.Duration
	ops     *partitionOps
}

// pathKey is the context key of a question's count of store calls: the
// calls made on its path, not a store's background lease writes.
type pathKey struct{}

func (s *slow) Do(r *http.Request) (*http.Response, error) {
	if n, ok := r.Context().Value(pathKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	if err := s.ops.count(r); err != nil {
		return nil, err
	}
	wait(r.Context(), s.latency)
	return s.next.Do(r)
}

// newTransport keeps as many idle connections as a store's callers use at
// once.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

type partitionOps struct {
	mu sync.Mutex
	n  map[string]int64
}

func (p *partitionOps) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.n)
}

// count reads which partitions r touches: a row's address names one; a
// batch's body names its entities' partition, once an entity (every
// action of a batch carries its entity).
func (p *partitionOps) count(r *http.Request) error {
	path, _ := url.PathUnescape(r.URL.EscapedPath())
	var keys []string
	if i := strings.Index(path, "PartitionKey='"); i >= 0 {
		rest := path[i+len("PartitionKey='"):]
		if j := strings.IndexByte(rest, '\''); j >= 0 {
			keys = append(keys, rest[:j])
		}
	}
	if strings.HasSuffix(path, "$batch") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body.Close()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		text := string(body)
		for {
			i := strings.Index(text, `"PartitionKey":"`)
			if i < 0 {
				break
			}
			text = text[i+len(`"PartitionKey":"`):]
			if j := strings.IndexByte(text, '"'); j >= 0 {
				keys = append(keys, text[:j])
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.n[k]++
	}
	return nil
}

func (p *partitionOps) hottest() (hot, all int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.n {
		hot = max(hot, n)
		all += n
	}
	return hot, all
}
