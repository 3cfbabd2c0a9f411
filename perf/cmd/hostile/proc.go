package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/perf/internal/proc"
)

// handlerCommand is bin on a free loopback port against upstream, with the
// settings every row runs under: a 5 s budget, a 2 s fast-failure
// threshold, and logLevel. The caller sets its output and starts it.
func handlerCommand(bin, upstream, logLevel string) (cmd *exec.Cmd, port int, err error) {
	port, err = proc.FreePort()
	if err != nil {
		return nil, 0, err
	}
	cmd = exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"FUNCTIONS_CUSTOMHANDLER_PORT=" + strconv.Itoa(port),
		"AZURE_OPENAI_ENDPOINT=" + upstream, "AZURE_OPENAI_DEPLOYMENT=gpt-4o-mini", "AZURE_OPENAI_API_KEY=hostile-key",
		"REQUEST_BUDGET=5s", "FAST_FAILURE_THRESHOLD=2s", "LOG_LEVEL=" + logLevel,
	}
	return cmd, port, nil
}

// stopHandler interrupts a started handler and waits for its exit (sent
// on exited), killing it if it has not exited after grace.
func stopHandler(cmd *exec.Cmd, exited <-chan error, grace time.Duration) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func waitReady(base string) error {
	probe := &http.Client{Timeout: time.Second}
	for t0 := time.Now(); time.Since(t0) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if resp, err := probe.Get(base + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("no 200 on GET / within 30 s")
}

// tally writes counts as "n x key" for each key, sorted, for a table cell.
func tally(counts map[string]int) string {
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d x %s", n, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
