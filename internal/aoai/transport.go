package aoai

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// MaxIdleConns is how many idle connections to the upstream host are kept:
// as many as the Functions host sends requests at once (host.json's
// maxConcurrentRequests), so that a full instance reuses its connections.
const MaxIdleConns = 100

// newHTTPClient is the client that sends every attempt when Options gives
// none. Its transport is azcore's default (TLS 1.2 or later, the
// environment's proxy, HTTP/2 with health pings) but for the settings
// below that say why.
func newHTTPClient() *http.Client {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2: true,
		// azcore keeps 10 idle connections per host: over HTTP/1.1 (a
		// proxy, the simulator) every request past the tenth at a time
		// would open a new connection and leave one in TIME_WAIT.
		MaxIdleConns:          MaxIdleConns,
		MaxIdleConnsPerHost:   MaxIdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// No Accept-Encoding: gzip. The answer is a stream of small events
		// that a compressing server may hold back to fill its compressor's
		// blocks, which would delay the first token.
		DisableCompression: true,
		// A request waiting on Azure OpenAI holds its connection's buffers
		// (net/http's default: 4 KiB each way), and 1 KiB carries its
		// headers and the stream's events; a longer line is read on.
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  1 << 10,
		// Ping an HTTP/2 connection idle for 10 s; close it if no answer in 5 s.
		HTTP2:           &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, Renegotiation: tls.RenegotiateFreelyAsClient},
	}
	return &http.Client{
		Transport: t,
		// Azure OpenAI does not redirect. http.Client would follow a 301 or
		// 302 with a GET, and a 307 or 308 with the api-key header, which
		// it keeps on a redirect to another host: the redirect is answered
		// as the failure it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// attemptHeaders is a per-retry policy: it sets the headers of every
// attempt besides the credential's, azcore's User-Agent and the body's
// Content-Type: the answer asked for as a stream, and the caller's request
// id (x-ms-client-request-id), which Azure logs, for correlation.
type attemptHeaders struct{}

type requestIDKey struct{}

func (attemptHeaders) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	h.Set("Accept", "text/event-stream")
	if id, _ := req.Raw().Context().Value(requestIDKey{}).(string); id != "" {
		h.Set("X-Ms-Client-Request-Id", id)
	}
	return req.Next()
}
