// Package outbound is the one HTTP client the server uses for requests it
// makes to addresses it does not control: webhook receivers, app downloads,
// RDAP, model endpoints, appcasts, payment providers. Every outbound request
// goes through New, so the rules below hold everywhere:
//
//   - the destination is checked at dial time, on the IP actually being
//     connected, by code.dny.dev/ssrf: loopback, private (RFC 1918, IPv6 ULA),
//     link-local (and so cloud metadata at 169.254.169.254), CGNAT 100.64/10,
//     multicast, unspecified, NAT64/6to4 forms of those and the rest of the
//     IANA special-purpose registries are refused. Because the check runs
//     after DNS resolution and for every connection, neither DNS rebinding nor
//     a redirect can reach an internal address;
//   - only ports 80 and 443 may be dialled;
//   - no proxy is used, whatever the environment says: a proxy would dial the
//     target itself and bypass the check;
//   - only http and https URLs are fetched (https only with RequireHTTPS),
//     redirects are bounded and never go from https to http;
//   - the whole request, body included, has a deadline, and reading more than
//     MaxResponseBytes of a body fails with ErrResponseTooLarge. The bytes
//     counted are the ones the caller reads: when the transport asked for
//     gzip and inflates the answer itself, the inflated ones, so a
//     compression bomb stops at the limit like any other long answer.
package outbound

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Errors a caller can test with errors.Is and map to its own reasons. A
// request that runs out of time fails with an error for which
// errors.Is(err, context.DeadlineExceeded) holds (net/http's own).
var (
	// ErrForbiddenAddress: the destination resolved to an address (or port)
	// the server must not connect to.
	ErrForbiddenAddress = errors.New("outbound: destination address not allowed")
	// ErrForbiddenScheme: the URL (or a redirect target) is not http or
	// https, or is http while https is required.
	ErrForbiddenScheme = errors.New("outbound: URL scheme not allowed")
	// ErrInsecureRedirect: an https URL redirected to an http one.
	ErrInsecureRedirect = errors.New("outbound: redirect from https to http refused")
	// ErrTooManyRedirects: the redirect chain is longer than MaxRedirects.
	ErrTooManyRedirects = errors.New("outbound: too many redirects")
	// ErrResponseTooLarge: the response body is longer than MaxResponseBytes.
	ErrResponseTooLarge = errors.New("outbound: response body too large")
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20 // 1 MiB
	DefaultMaxRedirects     = 5
	DefaultUserAgent        = "xpromo-server (outbound)"
)

// Options configure a client. The zero value is the production setting.
type Options struct {
	// RequireHTTPS refuses http URLs, including redirect targets. Live mode
	// sets it.
	RequireHTTPS bool
	// Timeout bounds the whole request: dialling, redirects, headers and
	// reading the body. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes is the most a caller may read from a response body;
	// reading past it fails with ErrResponseTooLarge. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxRedirects is the longest redirect chain followed. Zero means
	// DefaultMaxRedirects.
	MaxRedirects int
	// UserAgent is sent when a request sets none. Empty means DefaultUserAgent.
	UserAgent string
	// RootCAs verifies servers' certificates; nil means the system's roots.
	RootCAs *x509.CertPool

	// TestOnlyAllowLoopback lets the client connect to 127.0.0.1 and ::1 on
	// any port, so tests can run receivers on httptest servers. Every other
	// refused address stays refused. Never set it outside tests: it opens the
	// server's own loopback services (databases, admin ports) to whoever
	// chooses a URL.
	TestOnlyAllowLoopback bool
}

// New returns an http.Client that enforces the rules in the package comment.
// It is safe for concurrent use; build one per configuration and reuse it.
func New(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}

	guard := newGuard(o)

	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		// Control runs for every connection attempt, after DNS resolution,
		// on the IP about to be connected and before connect(2).
		Control: func(network, address string, _ syscall.RawConn) error {
			if err := guard.Safe(network, address, nil); err != nil {
				return fmt.Errorf("%w: %w", ErrForbiddenAddress, err)
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment: a proxy would bypass the dial check
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		Transport: &guardedTransport{next: transport, opts: o},
		Timeout:   o.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > o.MaxRedirects {
				return fmt.Errorf("%w (more than %d)", ErrTooManyRedirects, o.MaxRedirects)
			}
			if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: to %s", ErrInsecureRedirect, req.URL.Redacted())
			}
			return nil // the scheme and the address are checked when the hop is sent
		},
	}
}

// newGuard is the dial-time address policy of a client with options o.
func newGuard(o Options) *ssrf.Guardian {
	var opts []ssrf.Option
	if o.TestOnlyAllowLoopback {
		opts = append(opts,
			ssrf.WithAnyPort(),
			ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.1/32")),
			ssrf.WithAllowedV6Prefixes(netip.MustParsePrefix("::1/128")),
		)
	}
	return ssrf.New(opts...)
}

// CheckAddress tells, ahead of any request, whether a client with options o
// would connect to ip on port: nil, or an error wrapping ErrForbiddenAddress.
// Callers that store a URL with an IP-literal host (webhook endpoints) use it
// to refuse the URL at once; the dial-time check still runs on every
// connection, for host names and redirects.
func CheckAddress(o Options, ip netip.Addr, port uint16) error {
	ip = ip.Unmap()
	network := "tcp6"
	if ip.Is4() {
		network = "tcp4"
	}
	if err := newGuard(o).Safe(network, netip.AddrPortFrom(ip, port).String(), nil); err != nil {
		return fmt.Errorf("%w: %w", ErrForbiddenAddress, err)
	}
	return nil
}

// guardedTransport checks the scheme of every request it sends (the first
// and each redirect), adds the User-Agent and bounds the response body.
type guardedTransport struct {
	next http.RoundTripper
	opts Options
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkScheme(req, t.opts.RequireHTTPS); err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper must close the body, even on errors
		}
		return nil, err
	}
	if req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context()) // a RoundTripper must not modify the caller's request
		req.Header.Set("User-Agent", t.opts.UserAgent)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{body: resp.Body, left: t.opts.MaxResponseBytes}
	return resp, nil
}

func checkScheme(req *http.Request, requireHTTPS bool) error {
	switch req.URL.Scheme {
	case "https":
		return nil
	case "http":
		if !requireHTTPS {
			return nil
		}
	}
	return fmt.Errorf("%w: %q in %s", ErrForbiddenScheme, req.URL.Scheme, req.URL.Redacted())
}

// limitedBody reads at most left bytes and then fails with
// ErrResponseTooLarge if the body has more: a caller never mistakes a
// truncated body for a whole one.
type limitedBody struct {
	body     io.ReadCloser
	left     int64
	tooLarge bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.tooLarge {
		return 0, ErrResponseTooLarge
	}
	if b.left <= 0 {
		// The limit is reached: is there anything after it?
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			b.tooLarge = true
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
