package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/timebox-dev/timebox/perf/internal/proc"
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

// start execs bin and returns once GET / answers 200, with the time from
// exec to that answer: the cold start the Functions host waits for.
func start(ctx context.Context, name, bin, upstreamURL string) (*subject, time.Duration, error) {
	port, err := proc.FreePort()
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
func (s *subject) rss() (int64, error) { return proc.Memory(s.cmd.Process.Pid, "VmRSS") }

// cpu is the CPU time the subject has used so far (user and system).
func (s *subject) cpu() (time.Duration, error) { return proc.CPU(s.cmd.Process.Pid) }
