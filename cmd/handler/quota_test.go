package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/azuritetest"
	"github.com/timebox-dev/timebox/internal/quota"
)

// The quota across instances, end to end: the real run, on real sockets,
// against the simulator, with a real Azurite table shared by every
// instance. These tests fail where Azurite is not installed (make azurite),
// unless TIMEBOX_SKIP_AZURITE=1 skips them.

// quotaEnv is the settings of an instance counting in az's table.
func quotaEnv(az *azuritetest.Server, table string, userDaily int) map[string]string {
	return map[string]string{
		"QUOTA_TABLE_ENDPOINT":    az.Endpoint,
		"QUOTA_TABLE":             table,
		"QUOTA_USER_DAILY_TOKENS": strconv.Itoa(userDaily),
	}
}

// reader is a store on the same table, for the test to read the windows.
func reader(t *testing.T, az *azuritetest.Server, table string, userDaily int64, now func() time.Time) *quota.Store {
	t.Helper()
	u, err := url.Parse(az.Endpoint)
	require.NoError(t, err)
	s, err := quota.New(quota.Options{Endpoint: u, Table: table, UserDailyTokens: userDaily, Now: now})
	require.NoError(t, err)
	return s
}

type answer struct {
	status     int
	header     http.Header
	code, msg  string
	totalTokes int
}

func post(t *testing.T, addr, content string) answer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}})
	resp, err := http.Post("http://"+addr+"/api/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return answer{code: err.Error()}
	}
	defer resp.Body.Close()
	var b struct {
		Error struct{ Code, Message string }
		Usage struct{ TotalTokens int }
	}
	_ = json.NewDecoder(resp.Body).Decode(&b)
	return answer{status: resp.StatusCode, header: resp.Header, code: b.Error.Code, msg: b.Error.Message, totalTokes: b.Usage.TotalTokens}
}

// TestTwoInstancesShareOneUserLimit: 50 questions of one user at once, to
// two handlers that share only the table: every one is answered (200) or
// refused with 429 quota_exceeded and the wait until the holds of the
// others end (or midnight UTC, once the day is used up), none is
// lost, and the tokens settled never exceed the limit and are the tokens
// the answers say they cost.
func TestTwoInstancesShareOneUserLimit(t *testing.T) {
	az := azuritetest.Start(t)
	const limit = 6_000 // the simulator's answer to "hi" costs about 30 tokens; each reservation holds its 1024-token limit
	env := quotaEnv(az, "twoinstances", limit)
	env["MAX_TOKENS"] = "200"
	instances := []*running{startRun(t, env), startRun(t, env)}

	answers := make([]answer, 50)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = post(t, instances[i%2].addr, "hi, number "+strconv.Itoa(i)) })
	}
	wg.Wait()
	// A request's line is written once its reservation is settled, after
	// its answer has gone.
	settled := map[any]int{}
	for i := range answers {
		line := <-instances[i%2].logs
		settled[line["quota"]]++
	}
	assert.Equal(t, map[any]int{"settled": settled["settled"], "exceeded": settled["exceeded"]}, settled)

	var served, refused, billed int
	for i, a := range answers {
		switch a.status {
		case http.StatusOK:
			served++
			billed += a.totalTokes
		case http.StatusTooManyRequests:
			refused++
			assert.Equal(t, "quota_exceeded", a.code, "answer %d", i)
			assert.Equal(t, "false", a.header.Get("x-should-retry"))
			wait, err := strconv.Atoi(a.header.Get("Retry-After"))
			require.NoError(t, err)
			if strings.Contains(a.msg, "held by answers under way") {
				// Refused while the others' holds took the day: the wait
				// is until they end, a request's budget and grace at most.
				assert.Regexp(t, `^Your daily limit of 6,000 tokens is held by answers under way \([\d,]+ used, [\d,]+ held\)\. Try again when they end, in [1-4] min at most\.$`, a.msg)
				assert.LessOrEqual(t, wait, 240, "Retry-After is the time to the holds' end")
				break
			}
			toMidnight := time.Until(time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour))
			assert.InDelta(t, toMidnight.Seconds(), wait, 5, "Retry-After is the time to the window's reset")
			assert.Regexp(t, `^Your daily limit of 6,000 tokens is used up\. It resets at 00:00 UTC, in `, a.msg)
		default:
			t.Errorf("answer %d: %d %s %s", i, a.status, a.code, a.msg)
		}
	}
	assert.Equal(t, 50, served+refused, "no request is lost")
	assert.Positive(t, served)
	assert.Positive(t, refused)
	assert.Equal(t, served, settled["settled"])
	assert.Equal(t, refused, settled["exceeded"])
	u, err := reader(t, az, "twoinstances", limit, nil).Usage(t.Context(), "", "")
	require.NoError(t, err)
	assert.LessOrEqual(t, u.UserDay.Used, int64(limit), "settled usage never exceeds the limit")
	assert.EqualValues(t, billed, u.UserDay.Used, "every answer is charged what it cost")
	assert.Zero(t, u.UserDay.Reserved, "nothing is held once every answer has gone")
}

// TestStoreStoppedMidRunIsAFastRetryable503: a store that stops answering
// refuses the next question at once with 503 quota_unavailable and a wait,
// without asking Azure OpenAI; with QUOTA_FAIL_OPEN=true it is answered,
// and its log line says the quota was skipped.
func TestStoreStoppedMidRunIsAFastRetryable503(t *testing.T) {
	az := azuritetest.Start(t)
	closed := startRun(t, quotaEnv(az, "stopped", 100_000))
	openEnv := quotaEnv(az, "stopped", 100_000)
	openEnv["QUOTA_FAIL_OPEN"] = "true"
	open := startRun(t, openEnv)
	require.Equal(t, http.StatusOK, post(t, closed.addr, "hi").status)
	<-closed.upstream
	<-closed.logs

	az.Stop()
	start := time.Now()
	a := post(t, closed.addr, "hi")
	elapsed := time.Since(start)
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Equal(t, "quota_unavailable", a.code)
	assert.NotEmpty(t, a.header.Get("Retry-After"))
	assert.NotEqual(t, "false", a.header.Get("x-should-retry"), "retryable")
	assert.Less(t, elapsed, 3*time.Second, "fast (an upper bound: real sockets)")
	assert.Empty(t, closed.upstream, "no upstream call unaccounted")
	line := <-closed.logs
	assert.Equal(t, "unavailable", line["quota"])

	a = post(t, open.addr, "hi")
	assert.Equal(t, http.StatusOK, a.status, "fail open: served")
	line = <-open.logs
	assert.Equal(t, "skipped", line["quota"])
}

// TestHandlerProcess is not a test: it is the child process of
// TestKilledInstanceHoldIsChargedWhenItLapses, the real run in a process of its own that
// the test kills.
func TestHandlerProcess(t *testing.T) {
	if os.Getenv("TIMEBOX_TEST_HANDLER_PROCESS") != "1" {
		t.Skip("the child process of TestKilledInstanceHoldIsChargedWhenItLapses")
	}
	if err := run(context.Background(), nil, os.Getenv, os.Stdout, os.Stderr); err != nil {
		t.Fatal(err)
	}
}

// TestKilledInstanceHoldIsChargedWhenItLapses: an instance killed
// (SIGKILL) with requests in flight, each reserved and its call at Azure
// OpenAI, leaves their holds in the table; the holds count until each
// request's deadline plus the grace, and are then charged whole, the
// documented bound (docs/operations.md, "What is charged, and when"): the
// requests reached Azure, which bills them, and nobody is left to settle.
func TestKilledInstanceHoldIsChargedWhenItLapses(t *testing.T) {
	az := azuritetest.Start(t)
	simURL, arrived := simulator(t)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHandlerProcess$")
	cmd.Env = append(os.Environ(), "TIMEBOX_TEST_HANDLER_PROCESS=1", "FUNCTIONS_CUSTOMHANDLER_PORT=0",
		"AZURE_OPENAI_ENDPOINT="+simURL, "AZURE_OPENAI_DEPLOYMENT=gpt-4o-mini", "AZURE_OPENAI_API_KEY=k",
		"REQUEST_BUDGET=20s", "FAST_FAILURE_THRESHOLD=5s", "QUOTA_TABLE_ENDPOINT="+az.Endpoint, "QUOTA_TABLE=killed", "QUOTA_USER_DAILY_TOKENS=100000")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	require.True(t, lines.Scan())
	var listening struct{ Msg, Addr string }
	require.NoError(t, json.Unmarshal(lines.Bytes(), &listening))
	require.Equal(t, "listening", listening.Msg)
	go func() { _, _ = io.Copy(io.Discard, out) }()

	const inFlight = 3
	sent := time.Now()
	for range inFlight {
		go post(t, listening.Addr, "[[sim:hang]] hi") // held upstream: reserved, never settled
	}
	for range inFlight {
		<-arrived
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	u, err := reader(t, az, "killed", 100_000, nil).Usage(t.Context(), "", "")
	require.NoError(t, err)
	held := u.UserDay.Reserved
	assert.Positive(t, held, "the killed requests' holds are in the table")
	assert.Zero(t, u.UserDay.Used)
	lapsed := func() time.Time { return sent.Add(20*time.Second + quota.Grace + 20*time.Second) }
	u, err = reader(t, az, "killed", 100_000, lapsed).Usage(t.Context(), "", "")
	require.NoError(t, err)
	assert.Zero(t, u.UserDay.Reserved, "past each request's deadline and the grace, the holds no longer count")
	assert.Equal(t, held, u.UserDay.Used, "they are charged whole: prompt and completion limit, each")
	assert.Zero(t, u.UserDay.Used%inFlight, "three holds alike")
	assert.Greater(t, u.UserDay.Used/inFlight, int64(1024), "each its prompt and MAX_TOKENS")
}
