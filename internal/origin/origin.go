// Package origin decides whether a browser's Origin is allowed, comparing
// parsed origins (scheme, host, port), never strings: rs/cors matched a
// wildcard by prefix and suffix, so with https://*.sharepoint.com the
// origins "https://evil.com/.sharepoint.com" and
// "https://evil.com#.sharepoint.com" passed.
package origin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Pattern is one allowed origin: exact, or with a wildcard ("*.") standing
// for one or more whole leading host labels.
type Pattern struct {
	scheme string
	host   string // lowercased; for a wildcard, the suffix after "*." with its dot (".sharepoint.com")
	port   string // empty for the scheme's default port
	wild   bool
}

// ParsePattern parses scheme://host[:port], http or https, with no path,
// query, fragment or credentials, and at most one wildcard, which must be
// the whole first label ("https://*.sharepoint.com") over a domain that is
// not a public suffix ("https://*.com" and "https://*.co.uk" are refused).
func ParsePattern(s string) (Pattern, error) {
	wild := false
	if rest, ok := strings.CutPrefix(s, "https://*."); ok {
		s, wild = "https://wildcard."+rest, true
	} else if rest, ok := strings.CutPrefix(s, "http://*."); ok {
		s, wild = "http://wildcard."+rest, true
	}
	o, err := parse(s)
	if err != nil {
		return Pattern{}, err
	}
	if wild {
		o.host = strings.TrimPrefix(o.host, "wildcard")
		o.wild = true
	}
	if strings.Contains(o.host, "*") {
		return Pattern{}, errors.New(`a wildcard may only be one leading "*." label`)
	}
	if o.wild {
		if err := ownable(o); err != nil {
			return Pattern{}, err
		}
	}
	return o, nil
}

// ownable refuses a wildcard whose suffix is a public suffix (com, co.uk,
// azurewebsites.net), on the Public Suffix List, ICANN's and private
// entries alike: anyone can register a site under it, so the wildcard
// would admit every such site. sharepoint.com is not one: its subdomains
// are Microsoft's tenants.
func ownable(p Pattern) error {
	suffix := strings.TrimSuffix(strings.TrimPrefix(p.host, "."), ".")
	if ps, _ := publicsuffix.PublicSuffix(suffix); ps != suffix {
		return nil
	}
	example := "contoso." + suffix
	return fmt.Errorf("the wildcard is over the public suffix %q, under which anyone can register a site, so it would admit them all: "+
		"list each site (%s://%s), or put the wildcard under a domain you own (%s://*.%s)", suffix, p.scheme, example, p.scheme, example)
}

// parse reads one serialized origin (RFC 6454, 6.2: scheme "://" host
// [":" port], nothing else), lowercased, its default port dropped.
func parse(s string) (Pattern, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		return Pattern{}, errors.New("want scheme://host[:port], e.g. https://contoso.sharepoint.com")
	}
	if u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") || u.User != nil {
		return Pattern{}, errors.New("an origin has no path, query, fragment or credentials")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(u.Host, ":") {
		return Pattern{}, errors.New("an origin has a host, and a port when it has a colon")
	}
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	return Pattern{scheme: u.Scheme, host: host, port: port}, nil
}

// String is the pattern as a setting writes it.
func (p Pattern) String() string {
	h := p.host
	if p.wild {
		h = "*" + h
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if p.port != "" {
		h += ":" + p.port
	}
	return p.scheme + "://" + h
}

// Set is the allowed origins.
type Set []Pattern

// NewSet parses every pattern.
func NewSet(patterns []string) (Set, error) {
	set := make(Set, 0, len(patterns))
	for _, s := range patterns {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, err
		}
		set = append(set, p)
	}
	return set, nil
}

// Allows reports whether origin, as a browser sends it, is in the set. An
// origin that does not parse (a path, a fragment, "null") is not.
func (s Set) Allows(origin string) bool {
	o, err := parse(origin)
	if err != nil {
		return false
	}
	for _, p := range s {
		if p.scheme != o.scheme || p.port != o.port {
			continue
		}
		if !p.wild {
			if o.host == p.host {
				return true
			}
			continue
		}
		if labels, ok := strings.CutSuffix(o.host, p.host); ok && wholeLabels(labels) {
			return true
		}
	}
	return false
}

// wholeLabels reports whether s is one or more dot-separated DNS labels.
func wholeLabels(s string) bool {
	if s == "" || net.ParseIP(s) != nil {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
