// Package fetchtest holds the fakes for testing code that fetches pages with
// package fetch: a DNS table and an in-memory web server. They plug into
// fetch.Options' Resolver and DialContext seams, so the real fetch code path
// (address checks included) runs against them, and they work inside
// testing/synctest bubbles:
//
//	web := fetchtest.NewWeb(t, handler)
//	f := fetch.New(fetch.Options{Resolver: fetchtest.NewDNS(fetchtest.Public()), DialContext: web.DialContext})
package fetchtest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/timebox-dev/timebox/internal/memnet"
)

// PublicIP is a public address (example.com's) that stands for a web server
// on the internet; Public maps public.example to it.
const PublicIP = "93.184.216.34"

// Public returns a DNS table with public.example at PublicIP.
func Public() map[string][][]string {
	return map[string][][]string{"public.example": {{PublicIP}}}
}

// DNS answers lookups from a table: host name to answer sets, each a list of
// IP addresses. Successive lookups of a host get successive sets, the last
// one repeating, as a rebinding attacker's DNS server answers. An unknown
// host is "no such host". DNS is safe for concurrent use.
type DNS struct {
	mu      sync.Mutex
	answers map[string][][]string
	calls   map[string]int
}

// NewDNS returns a DNS that answers from answers. It panics on an address
// that does not parse: a mistake in the test.
func NewDNS(answers map[string][][]string) *DNS {
	for _, sets := range answers {
		for _, set := range sets {
			for _, a := range set {
				if net.ParseIP(a) == nil {
					panic("fetchtest: bad IP address " + a)
				}
			}
		}
	}
	return &DNS{answers: answers, calls: map[string]int{}}
}

// LookupIPAddr returns the next answer set for host.
func (d *DNS) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sets, ok := d.answers[host]
	if !ok || len(sets) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := d.calls[host]
	d.calls[host]++
	var out []net.IPAddr
	for _, a := range sets[min(n, len(sets)-1)] {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

// Calls returns how many times host was looked up.
func (d *DNS) Calls(host string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[host]
}

// Web is an HTTP server on an in-memory network (memnet). Its DialContext
// connects every address to the server and records the address, so a test
// can assert what the fetcher dialled after its checks.
type Web struct {
	ln     *memnet.Listener
	srv    *http.Server
	mu     sync.Mutex
	dialed []string
}

// NewWeb starts serving h and closes the server when the test ends. Inside
// a synctest bubble, call it from the bubble.
func NewWeb(tb testing.TB, h http.Handler) *Web {
	w := &Web{ln: memnet.Listen(), srv: &http.Server{Handler: h}}
	go w.srv.Serve(w.ln) //nolint:errcheck // ends with Close
	tb.Cleanup(func() { w.Close() })
	return w
}

// DialContext records addr and connects to the server, whatever addr is.
func (w *Web) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	w.dialed = append(w.dialed, addr)
	w.mu.Unlock()
	return w.ln.DialContext(ctx, network, addr)
}

// Dials returns the addresses dialled so far, in order.
func (w *Web) Dials() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.dialed...)
}

// Close stops the server and closes its connections, which ends their
// handlers' request contexts. It is safe to call twice.
func (w *Web) Close() {
	w.srv.Close() //nolint:errcheck // closing an in-memory listener does not fail
}
