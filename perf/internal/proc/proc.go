// Package proc is what the perf drivers (perf, hostile) share about the
// processes they start: a free loopback port to start one on, and its
// memory and CPU time as Linux's /proc reports them.
package proc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// FreePort is a loopback TCP port that was free when asked.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Memory reads a kB field of /proc/pid/status (VmRSS, VmHWM), in bytes.
func Memory(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// CPU is the user and system time the process has used so far, from
// /proc/pid/stat in clock ticks of 10 ms.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which may hold spaces and
	// parentheses: state is the first, utime the 12th, stime the 13th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}
