package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// armedNow is run's armed channel for tests that end run with their own
// context: nothing to wait for.
func armedNow() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// A stop signal caught ends the context, as signal.NotifyContext's does:
// the host's SIGTERM, sent here to the test process itself once armed.
// Were it not caught, the default action would end the test binary.
func TestStopSignalEndsTheContext(t *testing.T) {
	s := notifyStop(syscall.SIGTERM)
	defer s.release()
	<-s.armed
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case <-s.ctx.Done():
	case <-time.After(20 * time.Second): // a give-up, far past any delivery
		t.Fatal("SIGTERM caught, but the context did not end")
	}
}

// run accepts no connection before main's stop signals are armed (they
// are armed concurrently with the start, see stopSignals): until then a
// SIGTERM would kill the process with the request in flight. It logs
// "listening" only once it serves.
func TestRunServesOnlyOnceTheStopSignalsAreArmed(t *testing.T) {
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": "0",
		"AZURE_OPENAI_ENDPOINT":        "http://127.0.0.1:1",
		"AZURE_OPENAI_DEPLOYMENT":      "gpt-4o-mini",
		"AZURE_OPENAI_API_KEY":         "k",
	}
	// Served too early, run would block in Accept, which synctest.Wait
	// does not count as blocked, so the bubble would never settle: that
	// case fails on a give-up instead of hanging the test.
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		synctest.Test(t, func(t *testing.T) { runWaitsForArmed(t, env) })
	}()
	select {
	case <-settled:
	case <-time.After(20 * time.Second):
		t.Fatal("run did not settle before armed: it serves (blocked in Accept) before the stop signals are armed")
	}
}

func runWaitsForArmed(t *testing.T, env map[string]string) {
	armed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, armed, nil, func(k string) string { return env[k] }, &logs, io.Discard) }()
	synctest.Wait() // run has read the configuration, built the stack and listened
	assert.Empty(t, logs.String(), "run serves before the stop signals are armed")
	cancel()
	close(armed)
	require.NoError(t, <-done)
	assert.Contains(t, logs.String(), `"msg":"listening"`)
}

// lockedBuffer is a bytes.Buffer safe for run's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
