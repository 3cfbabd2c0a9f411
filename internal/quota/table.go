package quota

// The Table service's calls, apart from what the rows mean: a read of one
// row, the table's creation, a transactional batch with the conflict it may
// meet and the wait before it is tried again, and the values of a row.

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// get reads one row; found is false for a row not there.
func (s *Store) get(ctx context.Context, partition, row string) (e aztables.EDMEntity, etag azcore.ETag, found bool, err error) {
	resp, err := s.table.GetEntity(ctx, partition, row, nil)
	if isCode(err, aztables.ResourceNotFound) || isCode(err, aztables.EntityNotFound) {
		return e, "", false, nil
	}
	if err != nil {
		return e, "", false, fmt.Errorf("read %s: %w", row, err)
	}
	if err := json.Unmarshal(resp.Value, &e); err != nil {
		return e, "", false, fmt.Errorf("read %s: %w", row, err)
	}
	return e, resp.ETag, true, nil
}

func (s *Store) createTable(ctx context.Context) error {
	_, err := s.service.CreateTable(ctx, s.name, nil)
	if err != nil && !isCode(err, aztables.TableAlreadyExists) {
		return fmt.Errorf("create table %s: %w", s.name, err)
	}
	return nil
}

// conflict is a batch refused because one of its rows changed since it was
// read (412) or was inserted by another writer (409): read again, try again.
type conflict struct {
	status int
	index  int // the refused action
}

func (c *conflict) Error() string {
	return fmt.Sprintf("batch refused: action %d answered %d", c.index, c.status)
}

// submit sends actions as one batch and returns the ETags the rows got,
// in the order of actions (nil when the answer did not say them all). A
// batch the store refused as a whole for one of its actions is a
// *conflict when that action's answer was 409 or 412.
func (s *Store) submit(ctx context.Context, actions []aztables.TransactionAction) ([]azcore.ETag, error) {
	var resp *http.Response
	tctx, cancel := s.try(policy.WithCaptureResponse(ctx, &resp))
	defer cancel()
	_, err := s.table.SubmitTransaction(tctx, actions, nil)
	if s.local && isCode(err, aztables.TableNotFound) {
		// Azurite, with no table yet (in Azure the template creates it).
		if err := s.createTable(ctx); err != nil {
			return nil, err
		}
		_, err = s.table.SubmitTransaction(tctx, actions, nil)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusAccepted && re.RawResponse != nil {
		if status, index, ok := refusedAction(re.RawResponse); ok && (status == http.StatusConflict || status == http.StatusPreconditionFailed) {
			s.conflicts.Add(1)
			return nil, &conflict{status: status, index: index}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	etags := batchETags(resp)
	if len(etags) != len(actions) {
		return nil, nil
	}
	return etags, nil
}

// batchETags reads the ETag of each inner answer of a batch's answer, in
// order (Learn: "Performing entity group transactions", "Sample
// response": each inner answer carries its entity's ETag header).
func batchETags(resp *http.Response) []azcore.ETag {
	if resp == nil {
		return nil
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil
	}
	var etags []azcore.ETag
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && strings.EqualFold(name, "ETag") {
			etags = append(etags, azcore.ETag(strings.TrimSpace(value)))
		}
	}
	return etags
}

// try bounds one try of a write, with azcore's retries off: a write whose
// answer was lost may have gone in, which only a read of its rows can
// tell, so the store's own loop reads them before it tries again
// (retryAfter).
func (s *Store) try(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1}), s.tryTimeout)
}

// retryAfter waits before a write is tried again after it failed with
// err, when the store asks for that (503 ServerBusy, 500
// OperationTimedOut or another 500) or its answer did not come within its
// try's time; else, or when ctx ends first, it returns err.
func (s *Store) retryAfter(ctx context.Context, err error, attempt int) error {
	var re *azcore.ResponseError
	var no refused
	if ctx.Err() != nil || errors.As(err, &no) || (errors.As(err, &re) && re.StatusCode != http.StatusInternalServerError && re.StatusCode != http.StatusServiceUnavailable) {
		return err
	}
	s.retried(ctx)
	// 8 to 64 ms, random: a busy partition is given a moment.
	return backoff(ctx, attempt+3)
}

// retried counts a store call tried again, for the store and for the
// operation of ctx (Reservation.Retries).
func (s *Store) retried(ctx context.Context) {
	s.retries.Add(1)
	if n, ok := ctx.Value(retriesKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

// retriesKey is the context key of an operation's count of retries.
type retriesKey struct{}

// tries is one store call's count of tries, kept by countTries.
type tries struct{ n int }

// markTries starts a store call's count of tries (a per-call policy,
// ahead of azcore's retry policy, so that every try shares it).
type markTries struct{}

func (markTries) Do(req *policy.Request) (*http.Response, error) {
	req.SetOperationValue(&tries{})
	return req.Next()
}

// countTries counts the tries of a store call, and each after its first
// as a retry (a per-retry policy: azcore's retry policy runs it on every
// try).
type countTries struct{ s *Store }

func (p countTries) Do(req *policy.Request) (*http.Response, error) {
	var t *tries
	if req.OperationValue(&t) {
		if t.n++; t.n > 1 {
			p.s.retried(req.Raw().Context())
		}
	}
	return req.Next()
}

// refusedAction reads which action refused a batch, and how. The store
// answers a refused batch 202 with one inner response, the failed action's:
// its status line, and an error whose message starts with the action's
// index ("0:The specified entity already exists.") (Learn: "Performing
// entity group transactions", "Sample error response").
func refusedAction(resp *http.Response) (status, index int, ok bool) {
	body, err := runtime.Payload(resp)
	if err != nil {
		return 0, 0, false
	}
	text := string(body)
	i := strings.Index(text, "\nHTTP/1.1 ")
	if i < 0 || len(text) < i+13 {
		return 0, 0, false
	}
	status, err = strconv.Atoi(text[i+10 : i+13])
	if err != nil {
		return 0, 0, false
	}
	j := strings.Index(text[i:], `"value":"`)
	if j < 0 {
		return status, 0, true
	}
	rest := text[i+j+len(`"value":"`):]
	n := strings.IndexByte(rest, ':')
	if n <= 0 {
		return status, 0, true
	}
	index, err = strconv.Atoi(rest[:n])
	if err != nil {
		return status, 0, true
	}
	return status, index, true
}

// backoff waits before trying a refused batch again: a random wait, longer
// with each attempt up to 64 ms (256 ms from attempt 8), so that writers
// who collided do not collide again in step.
func backoff(ctx context.Context, attempt int) error {
	ceiling := time.Millisecond << min(attempt, 6)
	if attempt >= 8 {
		ceiling = 256 * time.Millisecond
	}
	t := time.NewTimer(rand.N(ceiling) + time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func isCode(err error, code aztables.TableErrorCode) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == string(code)
}

func integer(v any) int64 {
	switch v := v.(type) {
	case aztables.EDMInt64:
		return int64(v)
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}

func instant(v any) time.Time {
	if v, ok := v.(aztables.EDMDateTime); ok {
		return time.Time(v)
	}
	return time.Time{}
}

func marshal(partition, row string, props map[string]any) []byte {
	b, err := json.Marshal(aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: partition, RowKey: row}, Properties: props})
	if err != nil {
		// Only the types above are marshalled: a failure is a bug.
		panic(fmt.Sprintf("quota: marshal %s: %v", row, err))
	}
	return b
}

// counting carries the store's requests and counts them.
type counting struct {
	next policy.Transporter
	n    *atomic.Int64
}

// newTransport keeps enough idle connections for the requests under way
// on an instance (net/http keeps 2 per host by default, and each
// reservation makes up to three requests at once).
func newTransport() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

func (c counting) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := c.next.Do(r)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Nothing listens: no store to wait for. Answered at once, not
		// tried again.
		err = refused{err}
	}
	return resp, err
}

// refused is a connection refused, which azcore's retry policy does not
// try again (errorinfo.NonRetriable) and neither does retryAfter.
type refused struct{ error }

func (refused) NonRetriable() {}

func (r refused) Unwrap() error { return r.error }

// newTag is a random mark of 16 hex digits: a reservation's in its ledger
// row, an instance's in its leases' names.
func newTag() string {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
