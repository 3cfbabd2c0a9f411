// Package fetch reads a web page for a prompt, safely against server-side
// request forgery (SSRF): only http and https on the standard ports, no
// credentials in the URL, no proxy from the environment, and every address a
// name resolves to is checked at the moment the connection is made, so a DNS
// answer that changes between check and use (rebinding) cannot reach an
// internal address. Redirects are followed at most MaxRedirects times, each
// hop checked again; the body is capped while it is read; the content type
// must be on an allowlist.
//
// The address rules are those of code.dny.dev/ssrf (the IANA special-purpose
// registries: loopback, RFC 1918, link-local including 169.254.169.254,
// CGNAT, multicast, documentation, benchmarking, reserved; for IPv6 anything
// outside 2000::/3, so ::1, fc00::/7, fe80::/10, ff00::/8, IPv4-mapped and
// -compatible forms and NAT64, plus 6to4 and Teredo inside it).
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"code.dny.dev/ssrf"
)

// ErrBlocked is returned (wrapped in *Error) when the URL or an address it
// resolves to, or a redirect target, is refused: a scheme other than http or
// https, credentials in the URL, a port other than 80 or 443, an IP literal
// in a non-canonical form, or a loopback, private, link-local, metadata or
// other special-purpose address. The API answers it with 422 url_blocked.
var ErrBlocked = errors.New("address blocked")

// ErrUnreachable is returned (wrapped in *Error) when the page cannot be
// fetched: a malformed URL, DNS failure, connection failure, an error
// status, too many redirects, a body over MaxBytes, or a content type that is
// not allowed. The API answers it with 422 url_unreachable.
var ErrUnreachable = errors.New("page unreachable")

// Error is the error Fetch returns: the URL asked for, as Redact shows it,
// and the cause, which wraps ErrBlocked, ErrUnreachable or the context's
// error (context.DeadlineExceeded when the fetch ran out of time).
type Error struct {
	URL string // the URL as asked for, as Redact shows it
	Err error  // the cause; use errors.Is to classify
}

// Redact shows a URL the way errors, answers and logs may repeat it: the
// password and every query value replaced by "xxxxx", the fragment dropped.
// Page addresses carry secrets in their queries (a SAS token's sig=, a
// share link's token=), and an error message ends up in a log line.
func Redact(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	if c.Opaque != "" {
		c.Opaque = "xxxxx" // "user:secret@host" parses as scheme user, all opaque
	}
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			c.RawQuery = "xxxxx"
		} else {
			for k := range q {
				q[k] = []string{"xxxxx"}
			}
			c.RawQuery = q.Encode()
		}
	}
	return c.Redacted()
}

// RedactString is Redact for a URL not parsed yet. Of one that does not
// parse, only what comes before any query or fragment is repeated, with
// anything before an "@" in it replaced.
func RedactString(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return Redact(u)
	}
	s, cut := rawURL, false
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s, cut = s[:i], true
	}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		prefix := ""
		if scheme, _, ok := strings.Cut(s[:at], "://"); ok {
			prefix = scheme + "://"
		}
		s = prefix + "xxxxx" + s[at:]
	}
	if cut {
		s += "?xxxxx"
	}
	return s
}

// Error names the URL and the cause.
func (e *Error) Error() string { return fmt.Sprintf("fetch %s: %v", e.URL, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Defaults for zero fields of Options.
const (
	DefaultMaxBytes     = 5 << 20
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "timebox (+https://github.com/timebox-dev/timebox)"
)

// DefaultAllowedTypes returns the media types Fetch accepts when
// Options.AllowedTypes is nil: those package extract reads.
func DefaultAllowedTypes() []string {
	return []string{
		"text/html", "application/xhtml+xml", "text/plain", "text/markdown",
		"application/pdf", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	}
}

// Resolver turns a host name into IP addresses. *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Options configures a Fetcher. Zero fields take the defaults named beside
// them.
type Options struct {
	// MaxBytes caps the response body; a longer body is ErrUnreachable.
	// Default 5 MiB.
	MaxBytes int64
	// MaxRedirects caps the redirects followed. Default 5; negative means
	// none are followed.
	MaxRedirects int
	// UserAgent is sent with every request. Default DefaultUserAgent; the
	// caller sets "timebox/<version> (+https://github.com/timebox-dev/timebox)".
	UserAgent string
	// AllowedTypes lists the media types accepted (parameters ignored).
	// Default DefaultAllowedTypes().
	AllowedTypes []string
	// Resolver resolves host names. Default net.DefaultResolver. A test
	// seam: the address check runs on whatever it answers.
	Resolver Resolver
	// DialContext connects to an address that has passed the check, always
	// given as an IP:port literal. Default a net.Dialer whose Control
	// function checks the address once more at the socket. A test seam.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Page is a fetched page: the final URL after redirects, its media type
// (parameters stripped, lowercase) and its body.
type Page struct {
	URL         string
	ContentType string
	Body        []byte
}

// Fetcher fetches pages. It is safe for concurrent use and holds no
// connections between fetches: keep-alives are off, so no goroutine of its
// transport outlives a Fetch.
type Fetcher struct {
	opts   Options
	guard  *ssrf.Guardian
	client *http.Client
}

// New returns a Fetcher with o's settings, defaults filled in.
func New(o Options) *Fetcher {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.AllowedTypes == nil {
		o.AllowedTypes = DefaultAllowedTypes()
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	// Only ports 80 and 443: a URL may name any port, and an internal
	// service on a public address is still reached through one.
	guard := ssrf.New(ssrf.WithPorts(80, 443))
	if o.DialContext == nil {
		d := &net.Dialer{Control: guard.Safe}
		o.DialContext = d.DialContext
	}
	f := &Fetcher{opts: o, guard: guard}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // never HTTP(S)_PROXY from the environment
			DialContext:            f.dial,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: f.checkRedirect,
	}
	return f
}

// Fetch GETs rawURL and returns the page. It returns within the smaller of
// ctx's deadline: Fetch has no timer of its own, so the caller gives every
// fetch a deadline (the handler's per-page step deadline, FETCH_TIMEOUT).
// Errors are *Error naming rawURL and
// wrapping ErrBlocked, ErrUnreachable, or ctx.Err() of the fetch's deadline
// (context.DeadlineExceeded on a timeout).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (Page, error) {
	u, err := url.Parse(rawURL)
	page, err := f.fetch(ctx, u, err)
	if err != nil {
		return Page{}, &Error{URL: RedactString(rawURL), Err: err}
	}
	return page, nil
}

func (f *Fetcher) fetch(ctx context.Context, u *url.URL, parseErr error) (Page, error) {
	if parseErr != nil {
		return Page{}, fmt.Errorf("%w: malformed URL", ErrUnreachable)
	}
	if err := checkURL(u); err != nil {
		return Page{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Page{}, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", strings.Join(f.opts.AllowedTypes, ", ")+";q=0.9, */*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return Page{}, f.classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Page{}, fmt.Errorf("%w: status %d from %s", ErrUnreachable, resp.StatusCode, Redact(resp.Request.URL))
	}
	final := resp.Request.URL.Redacted()
	if resp.ContentLength > f.opts.MaxBytes {
		return Page{}, fmt.Errorf("%w: body of %d bytes is over the %d-byte limit", ErrUnreachable, resp.ContentLength, f.opts.MaxBytes)
	}
	// A declared type is checked before the body is read; a missing one
	// is sniffed from the body.
	ct := resp.Header.Get("Content-Type")
	mt, err := f.allowedType(ct)
	if ct != "" && err != nil {
		return Page{}, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Page{}, f.classify(ctx, err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return Page{}, fmt.Errorf("%w: body is over the %d-byte limit", ErrUnreachable, f.opts.MaxBytes)
	}
	if ct == "" {
		if mt, err = f.allowedType(http.DetectContentType(body)); err != nil {
			return Page{}, err
		}
	}
	return Page{URL: final, ContentType: mt, Body: body}, nil
}

// allowedType returns the lowercased media type of a Content-Type value, or
// ErrUnreachable when it is not on the allowlist.
func (f *Fetcher) allowedType(ct string) (string, error) {
	mt, _, err := mime.ParseMediaType(ct)
	mt = strings.ToLower(mt)
	if err != nil || !slices.Contains(f.opts.AllowedTypes, mt) {
		return "", fmt.Errorf("%w: content type %q is not allowed", ErrUnreachable, ct)
	}
	return mt, nil
}

// classify turns a transport error into the package's classes: the
// deadline first, then a refusal by the checks, then anything else.
func (f *Fetcher) classify(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, ErrBlocked) || errors.Is(err, ErrUnreachable) {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			return uerr.Err
		}
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnreachable, err)
}

// checkRedirect refuses a redirect past MaxRedirects or to a URL that
// checkURL refuses; the address of the new host is checked when it is
// dialled.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrUnreachable, max(f.opts.MaxRedirects, 0))
	}
	if err := checkURL(req.URL); err != nil {
		return fmt.Errorf("redirect to %s: %w", Redact(req.URL), err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	return nil
}

// checkURL applies the rules that need no DNS: scheme, credentials, port,
// and the form of an IP literal.
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (only http and https)", ErrBlocked, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL", ErrBlocked)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrBlocked)
	}
	if p := u.Port(); p != "" && p != defaultPort(u.Scheme) && p != "80" && p != "443" {
		return fmt.Errorf("%w: port %s (only 80 and 443)", ErrBlocked, p)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil // checked with every other address at dial time
	}
	if numericHost(host) {
		// WHATWG URL parsing (browsers) and C's inet_aton read
		// 2130706433, 0177.0.0.1 and 0x7f.1 as IPv4 addresses; Go does
		// not, so a resolver might. Canonical dotted quads parsed above;
		// every other numeric form is refused.
		return fmt.Errorf("%w: IP address %q in a non-canonical form", ErrBlocked, host)
	}
	return nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// numericHost reports whether the last label of host is a number in the
// WHATWG sense (decimal, 0x hex, or octal digits), which makes the whole
// host an IPv4 address to a browser.
func numericHost(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := strings.ToLower(labels[len(labels)-1])
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		_, err := strconv.ParseUint("0"+last[2:], 16, 64)
		return err == nil || last == "0x"
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// dial resolves the host, checks every address (any refused address refuses
// the whole name: a mix of public and private answers is an attack, not a
// fallback), then connects to the checked addresses in order, each as an
// IP literal so nothing resolves the name again.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: %v", ErrBlocked, addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: port %q", ErrBlocked, portStr)
	}
	var ips []netip.Addr
	what := host + " resolves to"
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
		what = "address"
	} else {
		answers, err := f.opts.Resolver.LookupIPAddr(ctx, host)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, fmt.Errorf("%w: resolve %s: %v", ErrUnreachable, host, err)
		}
		for _, a := range answers {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				return nil, fmt.Errorf("%w: %s resolved to a malformed address", ErrBlocked, host)
			}
			ips = append(ips, ip)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("%w: %s has no addresses", ErrUnreachable, host)
		}
	}
	targets := make([]string, 0, len(ips))
	for _, ip := range ips {
		// A 16-byte form of an IPv4 address (as net.IP stores them) is
		// checked and dialled as IPv4; a real ::ffff:a.b.c.d literal is
		// unmapped the same way, so the IPv4 rules judge it.
		ip = ip.Unmap()
		ap := netip.AddrPortFrom(ip.WithZone(""), uint16(port))
		if err := f.guard.SafeAddrPort(ap); err != nil {
			return nil, fmt.Errorf("%w: %s %s: %v", ErrBlocked, what, ip, err)
		}
		targets = append(targets, ap.String())
	}
	var errs []error
	for _, t := range targets {
		conn, err := f.opts.DialContext(ctx, network, t)
		if err == nil {
			return conn, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: connect to %s: %w", ErrUnreachable, host, errors.Join(errs...))
}
