// Command perf is the driver of make perf: it runs timebox's handler side by
// side with the floors (perf/cmd/hello, perf/cmd/floor) against one local
// upstream on loopback, in alternating rounds, and prints the table of
// issue 11 with the ratios. With -before, a second handler binary (an
// older build) runs in the same rounds, so before and after come from one
// run on one machine.
//
// Every phase is bounded in requests and time; the whole run stops at
// -timeout. Linux only (memory is read from /proc).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type config struct {
	bin, before             string
	coldRounds              int
	latencyRounds, latencyN int
	tputRounds, clients     int
	tputTime                time.Duration
	memRounds, held         int
	timeout                 time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "bin/perf", "folder holding handler, floor and hello")
	flag.StringVar(&c.before, "before", "", "an older handler binary to measure in the same rounds (optional)")
	// A start is a few milliseconds and moves with the machine: the median
	// of 15 moved the ratio by 0.1-0.2 between runs, of 40 by about 0.02.
	flag.IntVar(&c.coldRounds, "cold-rounds", 40, "cold starts per binary")
	flag.IntVar(&c.latencyRounds, "latency-rounds", 5, "latency rounds per server")
	flag.IntVar(&c.latencyN, "latency-requests", 400, "sequential requests per latency round")
	flag.IntVar(&c.tputRounds, "throughput-rounds", 5, "throughput rounds per server")
	flag.DurationVar(&c.tputTime, "throughput-time", 1500*time.Millisecond, "length of a throughput round")
	flag.IntVar(&c.clients, "clients", 64, "concurrent clients in a throughput round")
	// One memory round moves by 5-10 % (when the collector ran and how many
	// freed goroutine stacks the runtime kept, in either binary): the
	// median of five moved by about 2 % between runs, more than the
	// handler's margin under the floor; the median of nine by about 1 %,
	// at 3-4 s a round per server.
	flag.IntVar(&c.memRounds, "memory-rounds", 9, "held-request memory rounds per server (the row is their median)")
	flag.IntVar(&c.held, "held", 5000, "requests held at once on the hanging upstream")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "the whole run's limit")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

// server is one binary measured in the request rows.
type server struct {
	name string
	bin  string
	s    *subject
	cold []time.Duration
	lat  []time.Duration
	tput []float64
	mem  []float64
	// CPU time used and requests answered in the throughput rounds: the
	// cost per request, which a busy machine disturbs less than req/s.
	cpu  time.Duration
	reqs int64
}

func run(ctx context.Context, c config) error {
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()

	handlers := []*server{{name: "handler", bin: filepath.Join(c.bin, "handler")}}
	if c.before != "" {
		handlers = append([]*server{{name: "before", bin: c.before}}, handlers...)
	}
	hello := &server{name: "hello", bin: filepath.Join(c.bin, "hello")}
	floor := &server{name: "floor", bin: filepath.Join(c.bin, "floor")}
	all := append(append([]*server{}, handlers...), floor)

	step := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "perf: "+format+"\n", args...) }

	step("cold start, %d rounds", c.coldRounds)
	for i := 0; i <= c.coldRounds; i++ {
		for _, sv := range inTurn(append(append([]*server{}, handlers...), hello), i) {
			d, err := coldStart(ctx, sv.name, sv.bin, up.url)
			if err != nil {
				return err
			}
			if i > 0 { // round 0 reads the binaries into the page cache
				sv.cold = append(sv.cold, d)
			}
		}
	}

	for _, sv := range all {
		if sv.s, _, err = start(ctx, sv.name, sv.bin, up.url); err != nil {
			return err
		}
		defer sv.s.stop()
	}
	step("p50 latency, 1 client, %d rounds of %d requests", c.latencyRounds, c.latencyN)
	for i := 0; i <= c.latencyRounds; i++ {
		for _, sv := range inTurn(all, i) {
			cl := newClient(1)
			d, err := latencies(ctx, cl, sv.s.base, c.latencyN)
			cl.CloseIdleConnections()
			if err != nil {
				return fmt.Errorf("%s: %w", sv.name, err)
			}
			if i > 0 { // round 0 warms up
				sv.lat = append(sv.lat, d...)
			}
		}
	}
	step("throughput, %d clients, %d rounds of %s", c.clients, c.tputRounds, c.tputTime)
	for i := range c.tputRounds {
		for _, sv := range inTurn(all, i) {
			cl := newClient(c.clients)
			cpu0, err := sv.s.cpu()
			if err != nil {
				return err
			}
			r, n, err := throughput(ctx, cl, sv.s.base, c.clients, c.tputTime)
			cl.CloseIdleConnections()
			if err != nil {
				return fmt.Errorf("%s: %w", sv.name, err)
			}
			cpu1, err := sv.s.cpu()
			if err != nil {
				return err
			}
			sv.tput = append(sv.tput, r)
			sv.cpu += cpu1 - cpu0
			sv.reqs += n
		}
	}
	for _, sv := range all {
		sv.s.stop()
	}
	step("memory, %d requests held, %d rounds", c.held, c.memRounds)
	for i := range c.memRounds {
		var round []string
		for _, sv := range inTurn(all, i) {
			m, err := heldMemory(ctx, sv.name, sv.bin, up, c.held)
			if err != nil {
				return err
			}
			sv.mem = append(sv.mem, m)
			round = append(round, fmt.Sprintf("%s %.1f KB", sv.name, m/1024))
		}
		// Each round's figures, to see how far one moves.
		step("memory round %d: %s", i+1, strings.Join(round, ", "))
	}

	sizes := make([]string, len(handlers))
	for i, sv := range handlers {
		fi, err := os.Stat(sv.bin)
		if err != nil {
			return err
		}
		sizes[i] = fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6)
	}

	// The table: one column per handler, the floor, then each handler's
	// ratio to the floor.
	var b strings.Builder
	head := []string{"figure"}
	for _, sv := range handlers {
		head = append(head, sv.name)
	}
	head = append(head, "floor")
	for _, sv := range handlers {
		head = append(head, "ratio "+sv.name)
	}
	head = append(head, "target")
	row := func(cells ...string) { fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | ")) }
	row(head...)
	row(strings.Split(strings.Repeat("---,", len(head)), ",")[:len(head)]...)
	type figure struct {
		name, target string
		of           func(*server) float64
		format       func(float64) string
	}
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	figures := []figure{
		{"cold start: exec to the first `GET /` 200 (median)", "under 25 ms",
			func(sv *server) float64 { return float64(median(sv.cold).Microseconds()) / 1000 }, ms},
		{"p50 latency, 1 client, upstream answering at once", "at most 1.25x",
			func(sv *server) float64 { return float64(median(sv.lat).Microseconds()) }, func(v float64) string { return fmt.Sprintf("%.0f us", v) }},
		{fmt.Sprintf("throughput, %d clients (median round)", c.clients), "at least 0.8x",
			func(sv *server) float64 { return median(sv.tput) }, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) }},
		{"CPU per request, in the throughput rounds (user + system)", "-",
			func(sv *server) float64 { return float64(sv.cpu.Microseconds()) / float64(max(sv.reqs, 1)) },
			func(v float64) string { return fmt.Sprintf("%.0f us", v) }},
		{fmt.Sprintf("memory per in-flight request, %d held on a hanging upstream", c.held), "at most 1.2x, under 100 KB",
			func(sv *server) float64 { return median(sv.mem) / 1024 }, func(v float64) string { return fmt.Sprintf("%.1f KB", v) }},
	}
	for i, f := range figures {
		ref := floor
		if i == 0 {
			ref = hello
		}
		cells := []string{f.name}
		for _, sv := range handlers {
			cells = append(cells, f.format(f.of(sv)))
		}
		floorCell := f.format(f.of(ref))
		if ref == hello {
			floorCell = "hello world " + floorCell
		}
		cells = append(cells, floorCell)
		for _, sv := range handlers {
			cells = append(cells, fmt.Sprintf("%.2fx", f.of(sv)/f.of(ref)))
		}
		row(append(cells, f.target)...)
	}
	cells := append([]string{"`handler` binary"}, sizes...)
	cells = append(cells, "-")
	for range handlers {
		cells = append(cells, "-")
	}
	row(append(cells, "at most 25 MB")...)
	fmt.Print(b.String())
	return nil
}

// inTurn is subjects in round i's order: each round starts one subject
// later, so that none always runs right after the same other. A subject
// that follows a heavy one (the before, whose exit frees a large
// heap and whose start filled the caches) is slower to start, and with a
// fixed order that cost fell on the handler every round: 1.37-1.49x
// against 1.23-1.31x without the before, on the same binaries.
func inTurn(subjects []*server, i int) []*server {
	k := i % len(subjects)
	return append(append([]*server{}, subjects[k:]...), subjects[:k]...)
}
