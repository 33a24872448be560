// Package sandbox is the vetting gate's test mode: built-in counterparts
// that answer for reserved names (RFC 2606: example.com, example.net,
// example.org and their subdomains, anything under .example or .test), so
// that an app registered with such names goes through the gate on a machine
// with no RDAP server, clamd, SMTP relay or code-signing certificate.
//
// The sandbox is a counterpart, not a shortcut: it never returns a verdict.
// It produces the artefacts the real checks read — a package signed
// in-process by a certificate authority made for this process, an RDAP
// answer served over HTTP to the real rdap client, an email message whose
// link is followed like a reader would — and the gate's real code decides.
// Names that are not reserved always go to the wrapped real counterpart.
//
// What a reserved name produces is chosen by magic values (docs/gate.md,
// "Test mode"): the first label of the download host (unsigned.example.com,
// infected.example.com, …), of the registrable domain (young.test,
// unknown.test) and the local part of the contact address
// (bounce@example.com, unverified@example.com).
//
// The sandbox root (Roots) is random per process and never a code-signing
// root of live mode: the gate verifies a sandbox download against it and
// only against it (gate.Download.Sandbox).
package sandbox

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Reserved reports whether host (a host name, a URL, or an email address's
// domain) is an RFC 2606 name: example.com, example.net, example.org and
// their subdomains, and anything under .example or .test (case-insensitive,
// trailing dot ignored). Internationalised names are compared in their
// A-label form, as a resolver would look them up.
func Reserved(host string) bool {
	h, ok := hostOf(host)
	if !ok {
		return false
	}
	for _, tld := range []string{"example", "test"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return true
		}
	}
	for _, d := range []string{"example.com", "example.net", "example.org"} {
		if h == d || strings.HasSuffix(h, "."+d) {
			return true
		}
	}
	return false
}

// hostOf extracts the lower-case A-label host name of a host, a URL or an
// email address.
func hostOf(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	s = strings.TrimSpace(s)
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return "", false
		}
		s = u.Hostname()
	case strings.Contains(s, "@"):
		s = s[strings.LastIndexByte(s, '@')+1:]
	default:
		if h, _, err := net.SplitHostPort(s); err == nil {
			s = h
		}
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || strings.ContainsAny(s, "[]:/@ ") {
		return "", false
	}
	a, err := idna.Lookup.ToASCII(s)
	if err != nil || a == "" {
		return "", false
	}
	// The A-label form must be stable: a name whose A-label form is not
	// itself a valid name is not one a resolver would look up.
	if again, err := idna.Lookup.ToASCII(a); err != nil || again != a {
		return "", false
	}
	return strings.ToLower(a), true
}

// firstLabel is the first label of a reserved host (or URL, or email
// domain): the magic value that chooses what the sandbox answers.
func firstLabel(hostOrURL string) string {
	h, _ := hostOf(hostOrURL)
	l, _, _ := strings.Cut(h, ".")
	return l
}

// Sandbox holds the per-process certificate authority and the built-in
// counterparts. It is safe for concurrent use.
type Sandbox struct {
	now  func() time.Time
	pki  *pki
	pkgs *packageCache
	// tickets are the notarisation records of the packages it notarised
	// (the online lookup's answers, sandbox/notary.go).
	tickets tickets

	// The inbox's background work: answers to challenge emails.
	ctx    context.Context
	cancel context.CancelFunc
	inbox  chan struct{} // a semaphore bounding the inbox's goroutines
	wg     sync.WaitGroup
}

// maxInbox bounds the challenge emails being answered at once.
const maxInbox = 16

// New returns a sandbox with a fresh random certificate authority and
// signing certificates (valid from a year before now() for twenty years, so
// a test clock cannot step out of them).
func New(now func() time.Time) (*Sandbox, error) {
	if now == nil {
		now = time.Now
	}
	p, err := newPKI(now())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Sandbox{now: now, pki: p, pkgs: newPackageCache(maxPackages), ctx: ctx, cancel: cancel, inbox: make(chan struct{}, maxInbox)}, nil
}

// Roots returns the root the sandbox signs its packages with: verify a
// sandbox download against it and nothing else.
func (s *Sandbox) Roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.pki.root)
	return p
}

// Close stops answering challenge emails and waits for the answers under
// way to return.
func (s *Sandbox) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

var errClosed = errors.New("sandbox: closed")
