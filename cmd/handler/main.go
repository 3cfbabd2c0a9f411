// Command handler is timebox's Azure Functions custom handler: an HTTP
// server on FUNCTIONS_CUSTOMHANDLER_PORT that answers every request within
// its budget. See README.md.
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	stop := notifyStop(os.Interrupt, syscall.SIGTERM)
	err := run(stop.ctx, stop.armed, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop.release()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
