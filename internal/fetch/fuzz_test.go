package fetch

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// inetAton is C's inet_aton (and the WHATWG URL IPv4 parser, less its
// range errors): one to four parts, each decimal, 0-octal or 0x-hex, the
// last filling the remaining bytes. It is the reference for what a system
// resolver might read as an address.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil || p == "" {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var addr uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		addr |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	addr |= last
	return netip.AddrFrom4([4]byte{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}), true
}

// FuzzCheckURL: a host that C's inet_aton reads as an IPv4 address never
// passes checkURL unless it is the canonical dotted quad (which the dial
// check then judges as an address).
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "0", "1.2.3.4", "example.com", "1.2.3.4.5", "0x", "08.1.1.1", "public.example", "127.0.0.1."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		u, err := url.Parse("http://" + host + "/")
		if err != nil || u.Hostname() != host {
			return
		}
		if checkURL(u) != nil {
			return
		}
		if a, ok := inetAton(strings.TrimSuffix(host, ".")); ok {
			if p, err := netip.ParseAddr(host); err != nil || p != a {
				t.Fatalf("host %q reads as %v to inet_aton but passed checkURL", host, a)
			}
		}
	})
}
