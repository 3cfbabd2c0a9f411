// Package inittrace tells benchmarks what each package's initialisation costs
// at the start of a process. Go runs the init of every package a binary links
// at each start and cannot defer one, so what a package builds there
// (compiled regexps, big map literals) is paid by every cold start of the
// handler, whether or not the instance ever uses it.
//
// It reads GODEBUG=inittrace=1, which prints a line for each package whose
// init does any work: its clock time, which depends on the machine, and its
// heap bytes and allocations, which do not.
package inittrace

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Cost is what one package's init took.
type Cost struct {
	Bytes, Allocs int
	Clock         time.Duration
}

var line = regexp.MustCompile(`(?m)^init (\S+) @\S+ ms, (\S+) ms clock, (\d+) bytes, (\d+) allocs$`)

// Report runs one sub-benchmark per package of pkgs (import paths), named
// by its path, which reports what its init takes at each start of this
// benchmark's binary: init-B and init-allocs (exact from run to run) and
// init-us (its clock time). A package absent from the trace does no work
// at init and reports zeros. Call it from a benchmark in a package whose
// test binary links pkgs as the handler does.
func Report(b *testing.B, pkgs ...string) {
	b.Helper()
	costs := ofTestBinary(b)
	for _, pkg := range pkgs {
		b.Run(pkg, func(b *testing.B) {
			c := costs[pkg]
			b.ReportMetric(0, "ns/op") // the loop does nothing; the figures are the trace's
			b.ReportMetric(float64(c.Bytes), "init-B")
			b.ReportMetric(float64(c.Allocs), "init-allocs")
			b.ReportMetric(float64(c.Clock.Microseconds()), "init-us")
		})
	}
}

// ofTestBinary starts the running test binary again, running no test, with
// GODEBUG=inittrace=1, and returns the init cost of each package that had any,
// by import path: what the packages the test binary links cost at each start
// of any program that links them. It fails the test when the binary does not
// run or prints no trace.
func ofTestBinary(t testing.TB) map[string]Cost {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -test.run=^$ with GODEBUG=inittrace=1: %v\n%s", os.Args[0], err, out)
	}
	costs := map[string]Cost{}
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		ms, _ := strconv.ParseFloat(m[2], 64)
		bytes, _ := strconv.Atoi(m[3])
		allocs, _ := strconv.Atoi(m[4])
		costs[m[1]] = Cost{Bytes: bytes, Allocs: allocs, Clock: time.Duration(ms * float64(time.Millisecond))}
	}
	if len(costs) == 0 {
		t.Fatalf("GODEBUG=inittrace=1 printed no init lines:\n%s", out)
	}
	return costs
}
