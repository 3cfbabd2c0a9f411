package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A finding as govulncheck -format json writes it: the vulnerable symbol
// first, the entry point in our code last.
func finding(id, module, function string) string {
	return `{"finding":{"osv":"` + id + `","fixed_version":"v9.9.9","trace":[` +
		`{"module":"` + module + `","version":"v1.0.0","package":"` + module + `/p","function":"` + function + `"},` +
		`{"module":"github.com/timebox-dev/timebox","package":"github.com/timebox-dev/timebox/internal/x","function":"Run",` +
		`"position":{"filename":"internal/x/x.go","line":7}}]}}`
}

func TestReport(t *testing.T) {
	config := `{"config":{"go_version":"go1.26.8","db":"file:///db"}}`
	tests := []struct {
		name     string
		findings []string
		failed   bool
		says     string
	}{
		{"a module vulnerability the code calls fails", []string{finding("GO-1", "example.com/m", "Parse")}, true,
			"GO-1: example.com/m@v1.0.0, fixed in v9.9.9: github.com/timebox-dev/timebox/internal/x.Run (internal/x/x.go:7)"},
		{"one only imported or required does not", []string{finding("GO-2", "example.com/m", "")}, false, "no vulnerability reached"},
		{"a standard library one is named and does not fail", []string{finding("GO-3", "stdlib", "Serve")}, false,
			"1 reached in the standard library of go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			failed, err := report(strings.NewReader(config+"\n"+strings.Join(tt.findings, "\n")), &out)
			require.NoError(t, err)
			assert.Equal(t, tt.failed, failed)
			assert.Contains(t, out.String(), tt.says)
		})
	}
}
