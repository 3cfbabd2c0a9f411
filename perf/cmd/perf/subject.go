package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// subject is one running server under test: the handler, the floor or
// hello, started as the Functions host starts a custom handler (the port in
// FUNCTIONS_CUSTOMHANDLER_PORT, settings in the environment, stdout read
// through a pipe).
type subject struct {
	name string
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port
}

// env is what every subject is started with: the handler's settings for a
// local upstream with api-key auth, nothing else from the driver's
// environment but PATH and HOME.
func env(port int, upstreamURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"FUNCTIONS_CUSTOMHANDLER_PORT=" + strconv.Itoa(port),
		"AZURE_OPENAI_ENDPOINT=" + upstreamURL,
		"AZURE_OPENAI_DEPLOYMENT=gpt-4o-mini",
		"AZURE_OPENAI_API_KEY=perf-key",
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start execs bin and returns once GET / answers 200, with the time from
// exec to that answer: the cold start the Functions host waits for.
func start(ctx context.Context, name, bin, upstreamURL string) (*subject, time.Duration, error) {
	port, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(bin)
	cmd.Env = env(port, upstreamURL)
	cmd.Stdout = io.Discard // a pipe, read and dropped, as the host reads it
	cmd.Stderr = os.Stderr
	s := &subject{name: name, cmd: cmd, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	// A fresh connection per probe, as the host's first ping has.
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	for {
		resp, err := probe.Get(s.base + "/")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, time.Since(t0), nil
			}
		}
		if ctx.Err() != nil || time.Since(t0) > 30*time.Second {
			s.stop()
			return nil, 0, fmt.Errorf("%s: no 200 on GET / within 30 s (last error %v)", name, err)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// stop ends the subject as the host does (SIGTERM), then kills it if it
// lingers.
func (s *subject) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// rss is the subject's resident memory in bytes (VmRSS).
func (s *subject) rss() (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status (make perf needs Linux)")
}

// cpu is the CPU time the subject has used so far (user and system), from
// /proc/<pid>/stat in clock ticks of 10 ms.
func (s *subject) cpu() (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces): state is
	// the first, utime the 12th, stime the 13th.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, errors.New("unreadable /proc/<pid>/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unreadable /proc/<pid>/stat")
	}
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}
