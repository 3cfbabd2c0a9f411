package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/timebox-dev/timebox/internal/api"
)

// conns knows every open connection's state, so that shutdown can close the
// ones that hold no request: http.Server.Shutdown closes idle connections,
// but waits up to 5 s for one that was opened and has not sent a whole
// request yet (new, or a header arriving slowly), which could keep the
// process past the longest budget in flight.
type conns struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
}

func newConns() *conns { return &conns{state: map[net.Conn]http.ConnState{}} }

// track is the server's ConnState hook.
func (c *conns) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateHijacked, http.StateClosed:
		delete(c.state, conn)
	default:
		c.state[conn] = s
	}
}

// closeWaiting closes the connections that hold no request.
func (c *conns) closeWaiting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn, s := range c.state {
		if s == http.StateNew || s == http.StateIdle {
			_ = conn.Close()
		}
	}
}

// active counts the connections with a request in flight.
func (c *conns) active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.state {
		if s == http.StateActive {
			n++
		}
	}
	return n
}

// shutdown stops accepting, lets every request in flight be answered
// (each ends within its budget and the grace of its answer's last write,
// so at most longest from now), closes
// connections that hold no request, and returns once every connection is
// closed, those the handler took over to close lingering included (each
// within half a second, and never past the shutdown's own limit): the
// process exits after it, and an exit would reset a lingering client still
// uploading before it has read its answer. A request still running a
// second past longest means a bound failed somewhere: the rest are closed
// and the error says how many.
func shutdown(srv *http.Server, c *conns, longest time.Duration, lingering *api.Lingering) error {
	ctx, cancel := context.WithTimeout(context.Background(), longest+time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				// Shutdown does not see connections taken over from it:
				// those that linger are counted by the handler.
				lingering.Wait(ctx)
				return nil
			}
			n := c.active()
			_ = srv.Close()
			if n == 0 {
				return nil // only connections without a request were left
			}
			return fmt.Errorf("shutdown: %d requests still running a second past the budget and its grace", n)
		case <-tick.C:
			// Shutdown has closed the listener; a connection opened just
			// before, or one still sending its header, is closed here.
			c.closeWaiting()
		}
	}
}
