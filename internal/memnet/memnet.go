// Package memnet is an in-memory network for tests: a net.Listener whose
// connections are net.Pipe pairs, and the DialContext that reaches it. Unlike
// a loopback socket it works inside a testing/synctest bubble, where a
// blocked read is durably blocked and deadlines follow the fake clock.
package memnet

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Listener is an in-memory net.Listener. The zero value is not usable; call
// Listen.
type Listener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

// Listen returns a new in-memory Listener.
func Listen() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

type addr struct{}

func (addr) Network() string { return "memnet" }
func (addr) String() string  { return "memnet" }

// Accept waits for the next DialContext and returns the server side of its
// pipe, or net.ErrClosed once Close was called.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and makes later dials fail. It is safe to call twice.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr returns a placeholder address.
func (l *Listener) Addr() net.Addr { return addr{} }

// DialContext connects to the Listener, whatever network and address are
// asked for; it fails when ctx ends first or the Listener is closed.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, errors.New("memnet: listener closed")
	}
}

// Client returns an HTTP client whose transport dials the Listener for every
// address. Call CloseIdleConnections on it when the test ends.
func (l *Listener) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
}

// Serve serves h on a new Listener until the test ends, and returns the
// Listener and a client that reaches it. Inside a synctest bubble, call it
// from the bubble: the server, its connections and the client's idle
// connections are closed by tb.Cleanup, so no goroutine outlives the bubble.
func Serve(tb testing.TB, h http.Handler) (*Listener, *http.Client) {
	tb.Helper()
	l := Listen()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	c := l.Client()
	tb.Cleanup(func() {
		c.CloseIdleConnections()
		_ = srv.Close()
	})
	return l, c
}
