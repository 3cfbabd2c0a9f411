// Command timebox is the operator's smoke test for a deployed or local
// timebox Function App: it asks one question (ask), or checks the health
// route (health), with the same fast-failure retry rule the browser client
// uses (internal/retry) and prints the answer, or the readable error, and
// one line per attempt.
//
// Usage:
//
//	timebox ask --url https://app.azurewebsites.net [--key K | --token T] [--timeout 5m] [--attempts 3] "question"
//	timebox health --url https://app.azurewebsites.net [--key K | --token T] [--timeout 1m]
//
// Flags may come before or after the question; every word after -- is the
// question's. --help prints the usage and exits 0.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "timebox:", err)
		os.Exit(1)
	}
}
