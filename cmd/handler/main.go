// Command handler is timebox's Azure Functions custom handler: an HTTP
// server on FUNCTIONS_CUSTOMHANDLER_PORT that answers every request within
// its budget. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
