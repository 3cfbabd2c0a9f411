package main

import (
	"context"
	"os"
	"os/signal"
)

// stopSignals is the host's stop (SIGTERM) and a terminal's Ctrl-C (SIGINT)
// as the end of a context, as signal.NotifyContext gives it, but armed
// concurrently with the start: os/signal enables each signal with a round
// trip to a thread of its own, which it starts on first use; two signals
// and that thread took about 0.25 ms of the main goroutine's start (exec to
// the first GET / 200 is 3-4 ms). Armed while run reads the configuration,
// builds the stack and listens, that time is off the path to the host's
// first ping; run waits for armed before it accepts a connection, so no
// request is ever in flight while a stop signal would still kill the
// process outright.
type stopSignals struct {
	ctx   context.Context
	armed chan struct{} // closed once the signals are caught
	stop  context.CancelFunc
	sigs  chan os.Signal
}

// notifyStop starts catching sigs and returns at once; the first one
// caught ends ctx. Later ones are caught and dropped until release, as
// with signal.NotifyContext.
func notifyStop(sigs ...os.Signal) *stopSignals {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stopSignals{ctx: ctx, armed: make(chan struct{}), stop: cancel, sigs: make(chan os.Signal, 1)}
	go func() {
		signal.Notify(s.sigs, sigs...)
		close(s.armed)
		select {
		case <-s.sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s
}

// release stops catching the signals (their default action, ending the
// process, is back) and ends ctx.
func (s *stopSignals) release() {
	<-s.armed
	signal.Stop(s.sigs)
	s.stop()
}
