package aoai

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// MaxIdleConns is how many idle connections to the upstream host are kept:
// as many as the Functions host sends requests at once (host.json's
// maxConcurrentRequests), so that a full instance reuses its connections.
const MaxIdleConns = 100

// The sizes of a connection's buffers (see newTransport). They are of
// different allocation size classes (1,024 and 1,152 bytes): a page of
// memory then holds buffers of one kind only, and the pages of read buffers,
// which nothing writes until the answer comes, cost a waiting request no
// resident memory while it waits (when their memory is fresh from the
// system, as in a burst of requests on a new instance). With both 1 KiB,
// every page held both kinds and was touched when the requests were
// written: 1 KB more resident per held request (make perf's memory row;
// /proc/<pid>/pagemap showed 0.3 of 5.6 MB of read buffers resident).
const (
	writeBufferSize = 1 << 10
	readBufferSize  = 1152
)

// newTransport is azcore's default transport (TLS 1.2 or later, the
// environment's proxy, HTTP/2 with health pings) but for the idle
// connections kept per host: azcore keeps 10, so over HTTP/1.1 (a proxy,
// the simulator) every request past the tenth at a time opened a new
// connection and left one in TIME_WAIT when it finished.
func newTransport() roundTripper {
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
		// (under 1 KiB with an api-key) need; a larger body bypasses the
		// write buffer; Azure's answer headers (about 1 KiB) take one or
		// two reads, a header line or a chunk longer than the buffer is
		// read on (bufio's ReadLine), and the stream is read in events of a
		// few hundred bytes. 6 KB less per held request than net/http's
		// default. The read buffer is a size of its own (readBufferSize),
		// not the write buffer's.
		WriteBufferSize: writeBufferSize,
		ReadBufferSize:  readBufferSize,
		// No Accept-Encoding: gzip. The answer is a stream of small events
		// that a compressing server may hold back to fill its compressor's
		// blocks (a later first token), and asking for gzip costs each
		// request a header map of its own, allocated on the deepest part of
		// a waiting request's stack (see roundTripper).
		DisableCompression: true,
		// Ping an HTTP/2 connection idle for 10 s; close it if no answer in 5 s.
		HTTP2:           &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, Renegotiation: tls.RenegotiateFreelyAsClient},
	}
	return roundTripper{t}
}

// roundTripper sends each request with one http.Transport round trip, the
// azcore Transporter that http.Client would be without what the client adds
// on top, none of which timebox wants of Azure OpenAI: cookies, a timeout
// (the request's context carries the budget), and redirects (Azure OpenAI
// does not redirect, and http.Client would follow a 301 or 302 with a GET,
// and a 307 or 308 with the api-key header, which it keeps on a redirect
// to another host: a redirect is answered as the failure it is). It also
// saves a request waiting on Azure OpenAI 1.2 KB of stack (http.Client's
// three frames), part of what keeps that wait within an 8 KB goroutine
// stack (see BenchmarkHeldRequests in package api).
type roundTripper struct{ t *http.Transport }

// Do makes one round trip. Its errors are *url.Error, as http.Client's
// are, so that a failure reads the same in the log ("Post \"https://...
// \": dial tcp: ...").
func (rt roundTripper) Do(req *http.Request) (*http.Response, error) {
	prepareSend(req)
	resp, err := rt.t.RoundTrip(req)
	if err != nil {
		return nil, urlError(req, err)
	}
	return resp, nil
}

func urlError(req *http.Request, err error) error {
	return &url.Error{Op: req.Method[:1] + strings.ToLower(req.Method[1:]), URL: req.URL.Redacted(), Err: err}
}

// withAttemptHeaders is a Transporter given in Options (a test's in-memory
// client) with prepareSend set first; the default transport sets them in
// its own Do, which is a frame less on a waiting request's stack.
type withAttemptHeaders struct{ next policy.Transporter }

func (t withAttemptHeaders) Do(req *http.Request) (*http.Response, error) {
	prepareSend(req)
	return t.next.Do(req)
}

// prepareSend makes the request the transport is given ready to send: the
// attempt's headers, and its body as net/http writes it best. It is not
// inlined: its locals would be in roundTripper.Do's frame, which is on the
// stack of every waiting request.
//
// The headers are set here, not on the request Complete makes: azcore's
// retry policy sends a copy of that one (http.Request.Clone, header map and
// all) and holds the original for the whole wait on Azure OpenAI, so
// headers set there were held twice, 0.4 KB a waiting request (a 352-byte
// map group and the values). The original's map stays empty (its copy then
// costs no group), and the copy has them, with the credential policy's
// api-key or Authorization. The policies between read none of them:
// azcore's log policy would log them and its tracing policy put the
// User-Agent and the request id on a span, but timebox sets no log
// listener and no tracer.
//
// The body is given here too, not with azcore's SetBody, which would fill
// the original's header map (Content-Length, Content-Type) and, through
// azcore's retry policy, hand net/http its body wrapped in a reader of its
// own, whose end net/http reads (its check that nothing follows the
// Content-Length bytes) with an 8 KB buffer from io.Discard's pool: 4.6 KB
// allocated per request on average in a burst of held requests (a pooled
// buffer seldom outlives a collection). A *bytes.Reader is written straight
// from its bytes. It is a fresh one for each send, so that a request sent
// again (the bearer policy's, after a claims challenge) is sent whole, and
// GetBody gives net/http its own second try on a connection that died.
//
//go:noinline
func prepareSend(req *http.Request) {
	if req.Header == nil {
		req.Header = http.Header{}
	}
	h := req.Header
	h.Set("User-Agent", userAgent)
	h.Set("Accept", "text/event-stream")
	h.Set("Content-Type", "application/json")
	a, ok := req.Context().Value(callKey{}).(*call)
	if !ok {
		return
	}
	if a.req.RequestID != "" {
		h.Set("X-Ms-Client-Request-Id", a.req.RequestID) // in canonical form: Set then copies no key
	}
	req.Body, _ = a.sendBody()
	req.ContentLength, req.GetBody = int64(len(a.body)), a.sendBody
}
