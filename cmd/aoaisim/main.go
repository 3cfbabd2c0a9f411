// Command aoaisim serves the Azure OpenAI simulator of internal/aoaitest on a
// local port, for `make run` and browser tests: nothing it does reaches
// Azure. It logs one JSON line per request to stdout and stops gracefully on
// SIGINT or SIGTERM.
//
// Usage:
//
//	aoaisim [-addr 127.0.0.1:8081] [-deployments gpt-4o-mini] [-model NAME]
//	        [-api-key KEY] [-bearer] [-ttft 500ms] [-per-token 10ms]
//	        [-tpm 0] [-context-window 0] [-issuer]
//
// The key may also come from AOAISIM_API_KEY, which keeps it out of the
// process list. Point a client at http://<addr> as the endpoint; scripted
// faults are chosen per request with [[sim:...]] directives in a message (see
// internal/aoaitest/README.md). With -issuer the same address is also a
// local Entra ID (internal/issuertest) for AUTH_MODE=entra: set
// AZURE_AUTHORITY_HOST to it and ask /<tenant id>/oauth2/v2.0/token for a
// token.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "aoaisim:", err)
		os.Exit(1)
	}
}
