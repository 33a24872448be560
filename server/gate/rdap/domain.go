package rdap

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// ErrInvalidDomain: the host is not a domain name a registry could hold
// (empty, an IP address, a bare public suffix, not a valid IDNA name).
var ErrInvalidDomain = errors.New("rdap: not a registrable domain name")

// Name is the domain a host belongs to, as far as registration goes.
type Name struct {
	// Host is the host the name was taken from, lower-case, in A-label
	// (punycode) form, without a trailing dot.
	Host string
	// Domain is the registrable domain under the ICANN section of the Public
	// Suffix List: the name a registry registered and answers RDAP queries
	// for ("example.co.uk" for "dl.example.co.uk").
	Domain string
	// PrivateSuffix is set when Host sits under a suffix of the list's
	// private section ("github.io", "s3.amazonaws.com"): subdomains of those
	// are handed out by a company, not registered at a registry, so
	// Domain's age is that company's domain, not the app's. The caller's
	// rules decide what that means.
	PrivateSuffix string
}

// RegistrableDomain returns the registrable domain of a URL's host or of a
// bare host name ("https://dl.example.co.uk/app.zip", "dl.example.co.uk",
// "dl.example.co.uk:443"). Internationalised names are converted to their
// A-label form, which is what RDAP servers index.
func RegistrableDomain(hostOrURL string) (Name, error) {
	host := strings.TrimSpace(hostOrURL)
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil {
			return Name{}, fmt.Errorf("%w: %q: %v", ErrInvalidDomain, hostOrURL, err)
		}
		host = u.Hostname()
	} else if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, ":") {
		host = h // "host:port"; an IPv6 literal has more colons and is refused below
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return Name{}, fmt.Errorf("%w: %q has no host", ErrInvalidDomain, hostOrURL)
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return Name{}, fmt.Errorf("%w: %q is an IP address", ErrInvalidDomain, host)
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err != nil {
		return Name{}, fmt.Errorf("%w: %q: %v", ErrInvalidDomain, host, err)
	}
	ascii = strings.ToLower(ascii)
	if !strings.Contains(ascii, ".") {
		return Name{}, fmt.Errorf("%w: %q is a single label", ErrInvalidDomain, ascii)
	}

	suffix, icann := publicsuffix.PublicSuffix(ascii)
	n := Name{Host: ascii}
	// A private suffix ("github.io") or the list's implicit "*" rule for a
	// TLD it does not know ("test"): walk up until the ICANN section (or
	// the TLD) is reached, so the domain is one a registry holds.
	for !icann && strings.Contains(suffix, ".") {
		if n.PrivateSuffix == "" && suffix != ascii {
			n.PrivateSuffix = suffix // (a host that is the suffix is its owner's own domain)
		}
		_, parent, _ := strings.Cut(suffix, ".")
		suffix, icann = publicsuffix.PublicSuffix(parent)
	}
	if ascii == suffix {
		return Name{}, fmt.Errorf("%w: %q is a public suffix", ErrInvalidDomain, ascii)
	}
	rest := strings.TrimSuffix(ascii, "."+suffix)
	n.Domain = rest[strings.LastIndexByte(rest, '.')+1:] + "." + suffix
	return n, nil
}
