package aoai

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// MaxIdleConns is how many idle connections to the upstream host are kept:
// as many as the Functions host sends requests at once (host.json's
// maxConcurrentRequests), so that a full instance reuses its connections.
const MaxIdleConns = 100

// newTransport is azcore's default transport (TLS 1.2 or later, the
// environment's proxy, HTTP/2 with health pings) but for the idle
// connections kept per host: azcore keeps 10, so over HTTP/1.1 (a proxy,
// the simulator) every request past the tenth at a time opened a new
// connection and left one in TIME_WAIT when it finished.
func newTransport() *http.Client {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          MaxIdleConns,
		MaxIdleConnsPerHost:   MaxIdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// What a request holds while it waits on Azure OpenAI: net/http's
		// 4 KiB each way per connection is more than a request's headers
		// (under 1 KiB) or Azure's answer headers (about 1 KiB) need; a
		// larger body bypasses the write buffer, and the stream is read in
		// events of a few hundred bytes. 3.6 KB less per held request in
		// make perf.
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  2 << 10,
		// Ping an HTTP/2 connection idle for 10 s; close it if no answer in 5 s.
		HTTP2:           &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, Renegotiation: tls.RenegotiateFreelyAsClient},
	}
	return &http.Client{Transport: t}
}
