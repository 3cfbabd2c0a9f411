// Command vulncheck reads govulncheck's JSON findings (-format json) on
// standard input, as scripts/vulncheck.sh runs it, and prints each
// vulnerability the code reaches: its id, the module and version it is
// found in, the version that fixes it and the first call of ours on the way.
// It exits 1 when one of them is in a module go.mod requires, which a
// version bump fixes. Those in the standard library are printed and do not
// fail: they are fixed by the Go toolchain the machine builds with, which
// this repository does not choose.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// frame is one step of a finding's trace; the first is the vulnerable
// symbol (its function is empty when the code only imports its package
// or requires its module).
type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Receiver string `json:"receiver"`
	Position *struct {
		Filename string `json:"filename"`
		Line     int    `json:"line"`
	} `json:"position"`
}

type message struct {
	Config *struct {
		GoVersion string `json:"go_version"`
		DB        string `json:"db"`
	} `json:"config"`
	Finding *struct {
		OSV          string  `json:"osv"`
		FixedVersion string  `json:"fixed_version"`
		Trace        []frame `json:"trace"`
	} `json:"finding"`
}

func main() {
	failed, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// report prints the reached vulnerabilities read from r and says whether
// one of them is in a required module.
func report(r io.Reader, w io.Writer) (failed bool, err error) {
	dec := json.NewDecoder(r)
	goVersion, db := "", ""
	seen := map[string]bool{}
	var modules, stdlib []string
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return false, fmt.Errorf("read govulncheck's findings: %w", err)
		}
		if m.Config != nil {
			goVersion, db = m.Config.GoVersion, m.Config.DB
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" || seen[f.OSV] {
			continue // not reached: the code imports the package but calls nothing vulnerable
		}
		seen[f.OSV] = true
		v := f.Trace[0]
		line := fmt.Sprintf("%s: %s@%s, fixed in %s: %s", f.OSV, v.Module, v.Version, f.FixedVersion, ours(f.Trace))
		if v.Module == "stdlib" || v.Module == "toolchain" {
			stdlib = append(stdlib, line)
		} else {
			modules = append(modules, line)
		}
	}
	slices.Sort(modules)
	slices.Sort(stdlib)
	fmt.Fprintf(w, "vulncheck: %s against %s\n", goVersion, db)
	for _, l := range modules {
		fmt.Fprintln(w, "vulncheck: module:", l)
	}
	for _, l := range stdlib {
		fmt.Fprintln(w, "vulncheck: standard library (build with the fixed Go):", l)
	}
	if len(stdlib) > 0 {
		fmt.Fprintf(w, "vulncheck: %d reached in the standard library of %s: build with a Go release that fixes them\n", len(stdlib), goVersion)
	}
	if len(modules) > 0 {
		fmt.Fprintf(w, "vulncheck: %d reached in required modules: update them in go.mod\n", len(modules))
	}
	if len(modules)+len(stdlib) == 0 {
		fmt.Fprintln(w, "vulncheck: no vulnerability reached")
	}
	return len(modules) > 0, nil
}

// ours names the entry point of the trace (its last frame in this
// repository's code): where our code starts the path to the vulnerable
// symbol.
func ours(trace []frame) string {
	for i := len(trace) - 1; i >= 0; i-- {
		f := trace[i]
		if f.Module != "github.com/timebox-dev/timebox" {
			continue
		}
		name := f.Package + "." + f.Function
		if f.Receiver != "" {
			name = f.Package + "." + f.Receiver + "." + f.Function
		}
		if f.Position != nil {
			return fmt.Sprintf("%s (%s:%d)", name, f.Position.Filename, f.Position.Line)
		}
		return name
	}
	return trace[len(trace)-1].Package
}
