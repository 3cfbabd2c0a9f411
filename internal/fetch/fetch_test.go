package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"code.dny.dev/ssrf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/timebox-dev/timebox/internal/fetch/fetchtest"
)

// publicIP stands for a public web server; every dial the test network
// allows lands on the test's in-memory server, whatever the address.
const publicIP = fetchtest.PublicIP

// testNet is a Fetcher's world through the real code path: a DNS table
// (with rebinding names) and an in-memory web whose dial seam records the
// checked address before connecting.
type testNet struct {
	dns    *fetchtest.DNS
	web    *fetchtest.Web
	mu     sync.Mutex
	agents []string
}

func newTestNet(t *testing.T) *testNet {
	n := &testNet{dns: fetchtest.NewDNS(map[string][][]string{
		"public.example":           {{publicIP}},
		"public6.example":          {{"2606:2800:220:1:248:1893:25c8:1946"}},
		"private.example":          {{"10.0.0.5"}},
		"metadata.google.internal": {{"169.254.169.254"}},
		"metadata.azure.internal":  {{"169.254.169.254"}},
		"mixed.example":            {{publicIP, "192.168.1.1"}},
		"localhost":                {{"127.0.0.1", "::1"}},
		"127.0.0.1.nip.io":         {{"127.0.0.1"}},
		"ula.example":              {{"fd00::1"}},
		"mapped.example":           {{"::ffff:127.0.0.1"}},
		"nat64.example":            {{"64:ff9b::a9fe:a9fe"}},
		"cgnat.example":            {{"100.64.0.1"}},
		"rebind.example":           {{publicIP}, {"127.0.0.1"}},
		"rebind-meta.example":      {{publicIP}, {"169.254.169.254"}},
	})}
	n.web = fetchtest.NewWeb(t, http.HandlerFunc(n.serve))
	return n
}

func (n *testNet) fetcher(o Options) *Fetcher {
	o.Resolver = n.dns
	o.DialContext = n.web.DialContext
	return New(o)
}

func (n *testNet) dials() []string { return n.web.Dials() }

// serve is the in-memory web: /page is an article, /to?u=URL redirects to
// URL, /loop redirects to itself, /slow never answers, /trickle sends one
// byte a second, /big is 6 MiB, /image is a PNG, /missing is a 404.
func (n *testNet) serve(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	n.agents = append(n.agents, r.UserAgent())
	n.mu.Unlock()
	switch r.URL.Path {
	case "/page", "/next":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><body><p>hello from %s%s</p></body></html>", r.Host, r.URL.Path)
	case "/to":
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	case "/loop":
		http.Redirect(w, r, "/loop", http.StatusFound)
	case "/slow":
		<-r.Context().Done()
	case "/trickle":
		w.Header().Set("Content-Type", "text/plain")
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
				return
			}
		}
	case "/big", "/big-chunked":
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", fmt.Sprint(6<<20))
		}
		chunk := []byte(strings.Repeat("y", 1<<20))
		for range 6 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case "/untyped":
		w.Header()["Content-Type"] = nil                                    // no sniffing by the server
		w.Write([]byte("<!DOCTYPE html><html><body>sniffed</body></html>")) //nolint:errcheck
	case "/big-image":
		w.Header().Set("Content-Type", "video/mp4")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never sends the body: the type alone refuses it
	case "/image":
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n")) //nolint:errcheck
	default:
		http.NotFound(w, r)
	}
}

func TestFetchNormalPage(t *testing.T) {
	n := newTestNet(t)
	f := n.fetcher(Options{UserAgent: "timebox/1.2.3 (+https://github.com/timebox-dev/timebox)"})

	page, err := f.Fetch(t.Context(), "http://public.example/page")
	require.NoError(t, err)
	assert.Equal(t, "http://public.example/page", page.URL)
	assert.Equal(t, "text/html", page.ContentType)
	assert.Equal(t, "<html><body><p>hello from public.example/page</p></body></html>", string(page.Body))
	assert.Equal(t, []string{publicIP + ":80"}, n.dials(), "the checked IP is what is dialled, never the name")
	assert.Equal(t, []string{"timebox/1.2.3 (+https://github.com/timebox-dev/timebox)"}, n.agents)

	// A redirect between public pages is followed, and the final URL
	// reported.
	page, err = f.Fetch(t.Context(), "http://public.example/to?u=http://public6.example/next")
	require.NoError(t, err)
	assert.Equal(t, "http://public6.example/next", page.URL)
	assert.Contains(t, string(page.Body), "hello from public6.example/next")
	assert.Equal(t, "[2606:2800:220:1:248:1893:25c8:1946]:80", n.dials()[2])

	// A page without a Content-Type is sniffed.
	page, err = f.Fetch(t.Context(), "http://public.example/untyped")
	require.NoError(t, err)
	assert.Equal(t, "text/html", page.ContentType)

	// https dials 443 on the checked address (the test server speaks plain
	// HTTP, so the TLS handshake fails: unreachable, not blocked).
	_, err = f.Fetch(t.Context(), "https://public.example/page")
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Equal(t, publicIP+":443", n.dials()[4])
}

// TestFetchIgnoresProxyEnvironment: a proxy in the environment would route
// every fetch through an address nobody checked. net/http reads the
// environment once per process, so the transport's Proxy is checked too.
func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://10.1.2.3:3128")
	t.Setenv("http_proxy", "http://10.1.2.3:3128")
	n := newTestNet(t)
	f := n.fetcher(Options{})
	tr, ok := f.client.Transport.(*http.Transport)
	require.True(t, ok)
	assert.Nil(t, tr.Proxy)
	_, err := f.Fetch(t.Context(), "http://public.example/page")
	require.NoError(t, err)
	assert.Equal(t, []string{publicIP + ":80"}, n.dials())
}

func TestFetchSSRFProbesRefused(t *testing.T) {
	tests := []struct {
		name string
		url  string
	}{
		{"loopback", "http://127.0.0.1/"},
		{"loopback other", "http://127.8.9.10/"},
		{"decimal IPv4", "http://2130706433/"},
		{"octal IPv4", "http://0177.0.0.1/"},
		{"hex IPv4", "http://0x7f.0.0.1/"},
		{"hex IPv4 whole", "http://0x7f000001/"},
		{"short IPv4", "http://127.1/"},
		{"zero", "http://0/"},
		{"IPv6 loopback", "http://[::1]/"},
		{"IPv6 unspecified", "http://[::]/"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]/"},
		{"IPv4-mapped loopback hex", "http://[::ffff:7f00:1]/"},
		{"IPv4-compatible loopback", "http://[::127.0.0.1]/"},
		{"metadata", "http://169.254.169.254/latest/meta-data/"},
		{"metadata mapped", "http://[::ffff:169.254.169.254]/metadata/identity/oauth2/token"},
		{"metadata NAT64", "http://[64:ff9b::a9fe:a9fe]/"},
		{"loopback 6to4", "http://[2002:7f00:1::1]/"},
		{"metadata name google", "http://metadata.google.internal/computeMetadata/v1/"},
		{"metadata name azure", "http://metadata.azure.internal/"},
		{"name resolving private", "http://private.example/"},
		{"name resolving public and private", "http://mixed.example/"},
		{"localhost", "http://localhost/"},
		{"name embedding loopback", "http://127.0.0.1.nip.io/"},
		{"name resolving ULA", "http://ula.example/"},
		{"name resolving mapped loopback", "http://mapped.example/"},
		{"name resolving NAT64 metadata", "http://nat64.example/"},
		{"name resolving CGNAT", "http://cgnat.example/"},
		{"RFC 1918 10/8", "http://10.0.0.1/"},
		{"RFC 1918 172.16/12", "http://172.16.0.1/"},
		{"RFC 1918 192.168/16", "https://192.168.0.1/"},
		{"CGNAT", "http://100.64.0.1/"},
		{"this network", "http://0.0.0.0/"},
		{"multicast", "http://224.0.0.1/"},
		{"broadcast", "http://255.255.255.255/"},
		{"documentation", "http://192.0.2.1/"},
		{"IPv6 ULA", "http://[fd00::1]/"},
		{"IPv6 link-local", "http://[fe80::1]/"},
		{"IPv6 link-local with zone", "http://[fe80::1%25eth0]/"},
		{"IPv6 multicast", "http://[ff02::1]/"},
		{"file scheme", "file:///etc/passwd"},
		{"gopher scheme", "gopher://public.example/"},
		{"ftp scheme", "ftp://public.example/"},
		{"no scheme", "//public.example/page"},
		{"credentials", "http://user:secret@public.example/page"},
		{"port 8080", "http://public.example:8080/page"},
		{"port 22", "http://public.example:22/"},
		{"redirect to loopback", "http://public.example/to?u=http://127.0.0.1/"},
		{"redirect to metadata", "http://public.example/to?u=http://169.254.169.254/latest/meta-data/"},
		{"redirect to private name", "http://public.example/to?u=http://private.example/"},
		{"redirect to decimal IPv4", "http://public.example/to?u=http://2130706433/"},
		{"redirect to file", "http://public.example/to?u=file:///etc/passwd"},
		{"redirect to IPv6 loopback", "http://public.example/to?u=http://[::1]:80/"},
		{"rebinding to loopback", "http://rebind.example/to?u=/next"},
		{"rebinding to metadata", "http://rebind-meta.example/to?u=/next"},
	}
	require.GreaterOrEqual(t, len(tests), 25)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNet(t)
			_, err := n.fetcher(Options{}).Fetch(t.Context(), tt.url)
			require.ErrorIs(t, err, ErrBlocked)
			assert.NotErrorIs(t, err, ErrUnreachable)
			var fe *Error
			require.ErrorAs(t, err, &fe)
			assert.NotContains(t, err.Error(), "secret")
			assert.Contains(t, err.Error(), RedactString(tt.url))
			for _, d := range n.dials() {
				assert.Equal(t, publicIP+":80", d, "only the public address is ever dialled")
			}
		})
	}
}

// TestRebindingChecksEveryConnection: the rebinding name resolved public
// for the first connection and loopback for the second; the second was
// refused because the check runs at each dial, not once per URL.
func TestRebindingChecksEveryConnection(t *testing.T) {
	n := newTestNet(t)
	_, err := n.fetcher(Options{}).Fetch(t.Context(), "http://rebind.example/to?u=/next")
	require.ErrorIs(t, err, ErrBlocked)
	assert.Contains(t, err.Error(), "127.0.0.1")
	assert.Equal(t, 2, n.dns.Calls("rebind.example"))
	assert.Equal(t, []string{publicIP + ":80"}, n.dials())
}

func TestFetchUnreachable(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts Options
		msg  string
	}{
		{name: "404", url: "http://public.example/missing", msg: "status 404"},
		{name: "unknown name", url: "http://nowhere.example/", msg: "no such host"},
		{name: "connection refused", url: "http://198.51.100.7/", msg: "blocked"},
		{name: "type not allowed", url: "http://public.example/image", msg: "image/png"},
		{name: "type refused before the body", url: "http://public.example/big-image", msg: "video/mp4"},
		{name: "too big by content-length", url: "http://public.example/big", msg: "over the"},
		{name: "too big while reading", url: "http://public.example/big-chunked", msg: "over the"},
		{name: "redirect loop", url: "http://public.example/loop", msg: "more than 5 redirects"},
		{name: "redirects off", url: "http://public.example/to?u=/page", opts: Options{MaxRedirects: -1}, msg: "more than 0 redirects"},
		{name: "malformed", url: "http://public.example/%zz", msg: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNet(t)
			_, err := n.fetcher(tt.opts).Fetch(t.Context(), tt.url)
			if tt.name == "connection refused" {
				// 198.51.100.0/24 is documentation space: refused
				// before any dial.
				require.ErrorIs(t, err, ErrBlocked)
				return
			}
			require.ErrorIs(t, err, ErrUnreachable)
			assert.NotErrorIs(t, err, ErrBlocked)
			assert.Contains(t, err.Error(), RedactString(tt.url))
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestRedact: a URL is repeated (in errors, answers and log lines) without
// its password, query values or fragment; one that does not parse without
// anything after "?" or "#" and nothing before an "@".
func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.com/a/b.html", "https://example.com/a/b.html"},
		{"https://acct.blob.core.windows.net/c/doc.pdf?sv=2024-11-04&sig=SECRET%2Fx&se=2026", "https://acct.blob.core.windows.net/c/doc.pdf?se=xxxxx&sig=xxxxx&sv=xxxxx"},
		{"https://user:secret@example.com/p?token=secret#secret", "https://user:xxxxx@example.com/p?token=xxxxx"},
		{"https://example.com/p?secret", "https://example.com/p?secret=xxxxx"},
		{"https://example.com/p?a=1;secret", "https://example.com/p?xxxxx"},
		{"http://public.example/%zz", "http://public.example/%zz"},
		{"http://public.example/%zz?sig=secret", "http://public.example/%zz?xxxxx"},
		{"http://user:secret@public.example/%zz", "http://xxxxx@public.example/%zz"},
		{"user:secret@host/%zz", "user:xxxxx"},
		{":secret@host/x", "xxxxx@host/x"},
		{"http://public.example/%zz#secret", "http://public.example/%zz?xxxxx"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, RedactString(tt.in), tt.in)
	}
}

// TestFetchDialFailure: a connection that fails is unreachable, naming the
// URL.
func TestFetchDialFailure(t *testing.T) {
	n := newTestNet(t)
	f := New(Options{Resolver: n.dns, DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("connection refused")
	}})
	_, err := f.Fetch(t.Context(), "http://public.example/page")
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "http://public.example/page")
	assert.Contains(t, err.Error(), "connection refused")
}

// TestFetchDeadlineVirtualTime: a page that never answers, or answers too
// slowly, ends at exactly the caller's deadline (Fetch has no timer of its
// own), with an error that is DeadlineExceeded and names the URL.
func TestFetchDeadlineVirtualTime(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		callerIn time.Duration
	}{
		{name: "no answer", path: "/slow", callerIn: 15 * time.Second},
		{name: "no answer, caller in a hurry", path: "/slow", callerIn: 4 * time.Second},
		{name: "trickling body", path: "/trickle", callerIn: 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newTestNet(t)
				f := n.fetcher(Options{})
				ctx, cancel := context.WithTimeout(t.Context(), tt.callerIn)
				defer cancel()
				url := "http://public.example" + tt.path
				start := time.Now()
				_, err := f.Fetch(ctx, url)
				assert.Equal(t, tt.callerIn, time.Since(start))
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.NotErrorIs(t, err, ErrUnreachable)
				assert.Contains(t, err.Error(), url)
				n.web.Close()
			})
		})
	}
}

// TestDefaultDialerChecksAtSocket: the production dialer (no seam) refuses a
// blocked address in its Control hook, before any packet is sent, as a
// second line behind the check in dial.
func TestDefaultDialerChecksAtSocket(t *testing.T) {
	f := New(Options{})
	for _, addr := range []string{"127.0.0.1:80", "169.254.169.254:80", "[::1]:443", "10.0.0.1:443", "93.184.216.34:25"} {
		_, err := f.opts.DialContext(t.Context(), "tcp", addr)
		require.Error(t, err, addr)
		assert.True(t, errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort), "%s: %v", addr, err)
	}
}

// TestFetchLeavesNoGoroutines: once Fetch returns, success or failure, no
// goroutine of its transport is left (keep-alives are off, so no idle
// connection keeps a reader and a writer goroutine), while the server is
// still up to hold a connection open if one were kept. It counts only the
// transport's connection goroutines inside this test's synctest bubble:
// other tests' connections, ending outside the bubble on their own
// schedule, must not count (with -shuffle they once did).
func TestFetchLeavesNoGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newTestNet(t)
		f := n.fetcher(Options{})
		for _, u := range []string{"http://public.example/page", "http://public.example/missing", "http://public.example/to?u=/next", "http://rebind.example/to?u=/next"} {
			_, _ = f.Fetch(t.Context(), u)
			synctest.Wait()
			assert.Zero(t, clientConnGoroutines(t), u)
		}
		n.web.Close()
	})
}

// clientConnGoroutines counts the goroutines an http.Transport keeps per
// open connection (its read and write loops) in the calling goroutine's
// synctest bubble.
func clientConnGoroutines(t *testing.T) int {
	own := make([]byte, 256)
	own = own[:runtime.Stack(own, false)]
	header, _, _ := strings.Cut(string(own), "\n")
	i := strings.Index(header, ", synctest bubble ")
	require.NotEqual(t, -1, i, "not in a synctest bubble: %s", header)
	bubble := strings.TrimSuffix(header[i:], ":")

	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.HasSuffix(header, bubble+":") {
			continue
		}
		if strings.Contains(g, "net/http.(*persistConn).readLoop") || strings.Contains(g, "net/http.(*persistConn).writeLoop") {
			count++
		}
	}
	return count
}
