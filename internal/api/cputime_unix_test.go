//go:build unix

package api_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used so far, every thread's
// (the collector's included): on a machine other work shares, a
// benchmark's CPU per request moves far less than its wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
