package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/timebox-dev/timebox/perf/internal/proc"
)

// The rows of callers that stop reading: each caller's answer is 7 MB of
// text from an upstream that sends it as fast as it is taken, more than a
// loopback connection buffers, so that the handler's writes to a caller
// that does not read block, as they do on a real network to a caller that
// vanished (whose socket buffer is far smaller).
const (
	answerBytes = 7 << 20
	pieceBytes  = 16 << 10
	// stallMark in the question makes the upstream hang after the answer's
	// text, so the budget runs out with 7 MB in hand.
	stallMark = "[[stall]]"
	// giveUp is when the driver closes a caller that the handler has not
	// let go of: the figures then show the driver's bound, not the handler's.
	giveUp = 40 * time.Second
)

// readerRow is one probe of callers that stop reading.
type readerRow struct {
	name     string
	issueNow string // what the issue measured before the fix
	json     int    // callers asking for JSON that never read
	streams  int    // callers asking for a stream that never read
	reading  int    // callers that read their whole answer
	stall    bool   // the upstream hangs after the text: the budget cuts the answer
	sigterm  bool   // SIGTERM once every call is upstream; the row measures the exit
}

var readerRows = []readerRow{
	{name: "10 callers that never read, 7 MB JSON answers", json: 10,
		issueNow: "each held 30-40 s (200, elapsedMs 30,011-40,073); 292 MB held 30 s"},
	{name: "10 callers that never read, 7 MB streams", streams: 10,
		issueNow: "ended at 39-40 s, both cores busy counting tokens after the write gave up"},
	{name: "10 reading callers, 7 MB answers cut by the budget", reading: 10, stall: true,
		issueNow: "500 deadline_exceeded at 14.7-15.7 s (tokens counted before the 500 was written)"},
	{name: "SIGTERM with 10 callers that never read (5 JSON, 5 streams)", json: 5, streams: 5, sigterm: true,
		issueNow: "one non-reading stream: exit 1 after 6.04 s, its log line never written"},
}

// bigUpstream answers every chat call, streamed as Azure OpenAI streams,
// with answerBytes of words in pieces of pieceBytes; with stallMark in the
// question it then hangs until the call is cancelled. calls receives one
// value per call.
func bigUpstream(calls chan<- struct{}) http.Handler {
	words := strings.Fields("budget forecast figures quarter revenue travel policy approval manager report deadline contract")
	var b strings.Builder
	for i := 0; b.Len() < pieceBytes; i++ {
		b.WriteString(words[i%len(words)])
		b.WriteByte(' ')
	}
	piece, _ := json.Marshal(b.String()[:pieceBytes])
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case calls <- struct{}{}:
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		}
		chunk(`{"role":"assistant","content":""}`, "null")
		for sent := 0; sent < answerBytes; sent += pieceBytes {
			chunk(`{"content":`+string(piece)+`}`, "null")
		}
		if strings.Contains(string(body), stallMark) {
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		chunk(`{}`, `"stop"`)
		fmt.Fprintf(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", answerBytes/6, answerBytes/6+20)
		io.WriteString(w, "data: [DONE]\n\n")
	})
}

// readerResult is what one readers row measured.
type readerResult struct {
	logged       string        // the request lines: status, code, writeTimedOut
	longest      time.Duration // the longest elapsedMs logged
	slowest      time.Duration // the slowest answer a reading caller had in full
	lines, want  int           // request lines written, and requests sent
	cpu          time.Duration // the handler's CPU time over the row
	peak, after  int64         // bytes
	exit         string        // the exit after SIGTERM
	exitAfter    time.Duration // from SIGTERM to exit
	droppedByBot int           // callers the driver closed at giveUp
}

func runReaderRows(handlers []handlerBin, settle time.Duration) {
	calls := make(chan struct{}, 100)
	up := httptest.NewServer(bigUpstream(calls))
	defer up.Close()
	fmt.Println()
	fmt.Println("callers that stop reading: REQUEST_BUDGET=5s, an upstream that sends 7 MB answers as fast as they are taken")
	fmt.Println()
	fmt.Println("| probe | handler | logged | longest request | handler CPU | peak RSS | RSS after " + settle.String() + " | exit | the issue measured |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range readerRows {
		for _, h := range handlers {
			res, err := measureReaders(h.path, up.URL, calls, row, settle)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s (%s): %v\n", row.name, h.label, err)
				os.Exit(1)
			}
			longest := fmt.Sprintf("%.2f s", res.longest.Seconds())
			if row.reading > 0 {
				longest += fmt.Sprintf(" (slowest answer read: %.2f s)", res.slowest.Seconds())
			}
			if res.droppedByBot > 0 {
				longest += fmt.Sprintf(" (%d closed by the driver at %s)", res.droppedByBot, giveUp)
			}
			exit := "-"
			if row.sigterm {
				exit = fmt.Sprintf("%s after %.2f s", res.exit, res.exitAfter.Seconds())
			}
			fmt.Printf("| %s | %s | %d/%d lines: %s | %s | %.1f s | %d MB | %d MB | %s | %s |\n", row.name, h.label, res.lines, res.want,
				res.logged, longest, res.cpu.Seconds(), res.peak>>20, res.after>>20, exit, row.issueNow)
		}
	}
}

// measureReaders starts a fresh handler, sends the row's callers, and
// waits for their log lines (or the exit, for a SIGTERM row).
func measureReaders(bin, upstream string, calls chan struct{}, row readerRow, settle time.Duration) (readerResult, error) {
	var res readerResult
	cmd, port, err := handlerCommand(bin, upstream, "info")
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	exited := make(chan error, 1)
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "request" && m["route"] != "/" {
				lines <- m
			}
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	stopped := false
	defer func() {
		if !stopped {
			stopHandler(cmd, exited, 20*time.Second)
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(base); err != nil {
		return res, err
	}
	for len(calls) > 0 {
		<-calls
	}
	cpu0, err := proc.CPU(cmd.Process.Pid)
	if err != nil {
		return res, err
	}

	question := "Write a long report."
	if row.stall {
		question = stallMark + " " + question
	}
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": question}}})
	res.want = row.json + row.streams + row.reading
	var conns []net.Conn
	for i := range row.json + row.streams {
		accept := "application/json"
		if i >= row.json {
			accept = "text/event-stream"
		}
		c, err := nonReader(port, accept, body)
		if err != nil {
			return res, err
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: row.reading + 1}}
	for range row.reading {
		wg.Go(func() {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodPost, base+"/api/chat", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			mu.Lock()
			res.slowest = max(res.slowest, time.Since(start))
			mu.Unlock()
		})
	}

	var logged []map[string]any
	if row.sigterm {
		for range res.want {
			select {
			case <-calls:
			case <-time.After(giveUp):
				return res, errors.New("the calls did not all reach the upstream")
			}
		}
		time.Sleep(500 * time.Millisecond) // a measurement: the answers' writes are blocked by now
		peak, _ := proc.Memory(cmd.Process.Pid, "VmHWM")
		sigterm := time.Now()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		for l := range lines {
			logged = append(logged, l)
		}
		var err error
		select {
		case err = <-exited:
		case <-time.After(giveUp):
			_ = cmd.Process.Kill()
			err = <-exited
			res.droppedByBot = res.want - len(logged)
		}
		stopped = true
		res.exitAfter = time.Since(sigterm)
		res.exit = "exit 0"
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.exit = fmt.Sprintf("exit %d", ee.ExitCode())
		}
		res.peak = peak
	} else {
		deadline := time.After(giveUp)
	collect:
		for len(logged) < res.want {
			select {
			case l := <-lines:
				logged = append(logged, l)
			case <-deadline:
				// The driver gives up on the callers the handler still holds.
				res.droppedByBot = res.want - len(logged)
				for _, c := range conns {
					_ = c.Close()
				}
				for len(logged) < res.want {
					select {
					case l := <-lines:
						logged = append(logged, l)
					case <-time.After(10 * time.Second):
						break collect
					}
				}
			}
		}
		wg.Wait()
		res.peak, _ = proc.Memory(cmd.Process.Pid, "VmHWM")
		time.Sleep(settle) // a measurement, not a test: how much the process gives back
		res.after, _ = proc.Memory(cmd.Process.Pid, "VmRSS")
	}
	if cpu1, err := proc.CPU(cmd.Process.Pid); err == nil {
		res.cpu = cpu1 - cpu0
	} else if row.sigterm && cmd.ProcessState != nil {
		res.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	res.lines = len(logged)
	res.logged, res.longest = summarize(logged)
	return res, nil
}

// nonReader sends a chat request on a connection whose receive buffer is
// small, and never reads from it.
func nonReader(port int, accept string, body []byte) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return errors.Join(err, serr)
	}}
	c, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: timebox\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n%s", accept, len(body), body)
	return c, err
}

// summarize counts the log lines by status, code and writeTimedOut, and
// returns the longest elapsedMs.
func summarize(lines []map[string]any) (string, time.Duration) {
	counts := map[string]int{}
	var longest time.Duration
	for _, l := range lines {
		k := fmt.Sprint(l["status"])
		if c, ok := l["code"].(string); ok {
			k += " " + c
		}
		if l["writeTimedOut"] == true {
			k += " writeTimedOut"
		}
		counts[k]++
		if ms, ok := l["elapsedMs"].(float64); ok {
			longest = max(longest, time.Duration(ms)*time.Millisecond)
		}
	}
	return tally(counts), longest
}
