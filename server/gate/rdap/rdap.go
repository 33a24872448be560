// Package rdap is the vetting gate's domain-age check: it asks the registry
// of a URL's domain, over RDAP (RFC 9082/9083), when the domain was
// registered, and says whether it is at least six months old.
//
// What it checks: the "registration" event of the RDAP domain object of the
// registrable domain (the ICANN part of the Public Suffix List plus one
// label: "example.co.uk" for "https://dl.example.co.uk/app.zip"). The RDAP
// server is either a configured base URL or found in IANA's bootstrap file
// (RFC 9224), fetched from a configurable URL or read from a local file and
// cached. Every request goes through server/outbound (SSRF-safe dialling,
// size and time limits).
//
// What it does not check: who holds the domain, whether it changed hands
// (a "transfer" or "reregistration" event does not reset the age), the
// domain's reputation, or anything about the host beyond its name. Hosts
// under a private public suffix (github.io, s3.amazonaws.com) are measured
// by the suffix owner's domain; Name.PrivateSuffix says so and the caller
// decides.
//
// Limits: some registries run no RDAP server or publish no registration
// date; that is gate_domain_unknown, never a pass. An unreachable, slow or
// garbled server is gate_rdap_unavailable, which is transient: retry later.
// RDAP servers rate-limit; callers should not query one domain more often
// than they need to.
package rdap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/server/outbound"
)

// Reason codes of the domain-age check, as they appear in an app's
// `reasons`.
const (
	// ReasonDomainTooYoung: the domain was registered less than MinimumAge
	// ago; Result.EligibleAt is when it will not be.
	ReasonDomainTooYoung = "gate_domain_too_young"
	// ReasonDomainUnknown: no registration date can be had for the domain:
	// not a registrable name, no RDAP server for its TLD, unknown to its
	// registry, or a registry that publishes no registration date.
	ReasonDomainUnknown = "gate_domain_unknown"
	// ReasonRDAPUnavailable: the RDAP server (or the bootstrap file) could
	// not be read: network error, timeout, 429/5xx, garbled answer. It is
	// transient; the check should run again later.
	ReasonRDAPUnavailable = "gate_rdap_unavailable"
)

// MinimumAge is the age a domain needs, in calendar months.
const MinimumAge = 6 // months

// Defaults used when the corresponding Config field is zero.
const (
	DefaultBootstrapURL = "https://data.iana.org/rdap/dns.json"
	DefaultBootstrapTTL = 24 * time.Hour
	// maxAnswerBytes bounds an answer whatever the HTTP client allows: a
	// domain object is a few KiB, IANA's dns.json about 40 KiB.
	maxAnswerBytes = 1 << 20
)

var (
	// ErrNotFound: the registry answered 404: it holds no such domain.
	ErrNotFound = errors.New("rdap: the registry does not know the domain")
	// ErrNoServer: the bootstrap file lists no RDAP server for the domain's
	// TLD.
	ErrNoServer = errors.New("rdap: no RDAP server is known for the domain's TLD")
	// ErrUnavailable: the server or the bootstrap file could not be read
	// (network, timeout, an HTTP status other than 200 and 404).
	ErrUnavailable = errors.New("rdap: server unavailable")
)

// Config configures a Client. The zero value asks the servers IANA's
// bootstrap file names, through a production outbound client.
type Config struct {
	// BaseURL, when set, is the RDAP server asked about every domain
	// ("https://rdap.example.net/rdap/"); the bootstrap file is not used.
	BaseURL string
	// BootstrapFile is the path of a local copy of IANA's dns.json, read
	// instead of fetching BootstrapURL.
	BootstrapFile string
	// BootstrapURL is where dns.json is fetched from; empty means
	// DefaultBootstrapURL.
	BootstrapURL string
	// BootstrapTTL is how long a bootstrap file is used before it is read
	// again; zero means DefaultBootstrapTTL.
	BootstrapTTL time.Duration
	// HTTP sends the requests; it must come from outbound.New. Nil means
	// outbound.New with its production defaults.
	HTTP *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client asks RDAP servers about domains. It is safe for concurrent use.
type Client struct {
	cfg Config

	mu          sync.Mutex
	bootstrap   registry
	bootstrapAt time.Time
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL != "" {
		if err := checkBaseURL(cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("rdap: BaseURL: %w", err)
		}
	}
	if cfg.BootstrapURL == "" {
		cfg.BootstrapURL = DefaultBootstrapURL
	} else if err := checkBaseURL(cfg.BootstrapURL); err != nil {
		return nil, fmt.Errorf("rdap: BootstrapURL: %w", err)
	}
	if cfg.BootstrapTTL <= 0 {
		cfg.BootstrapTTL = DefaultBootstrapTTL
	}
	if cfg.HTTP == nil {
		cfg.HTTP = outbound.New(outbound.Options{Timeout: 20 * time.Second})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg}, nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// Registration is what a registry said about a domain.
type Registration struct {
	Domain       string    // the domain asked about (A-label, lower-case)
	URL          string    // the RDAP URL that answered
	RegisteredAt time.Time // the registration event's date, in UTC
}

// Lookup asks the domain's registry when domain (a registrable domain, as
// RegistrableDomain returns) was registered. Errors wrap ErrNotFound,
// ErrNoServer, ErrNoRegistrationDate, ErrMalformedAnswer or ErrUnavailable;
// ReasonFor maps them to reason codes.
func (c *Client) Lookup(ctx context.Context, domain string) (Registration, error) {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	base := c.cfg.BaseURL
	if base == "" {
		reg, err := c.registry(ctx)
		if err != nil {
			return Registration{}, err
		}
		var ok bool
		if base, ok = reg.server(domain); !ok {
			return Registration{}, fmt.Errorf("%w: %q", ErrNoServer, domain)
		}
	}
	u := strings.TrimSuffix(base, "/") + "/domain/" + url.PathEscape(domain)
	r := Registration{Domain: domain, URL: u}
	body, status, err := c.get(ctx, u)
	if err != nil {
		return r, err
	}
	switch {
	case status == http.StatusNotFound:
		return r, fmt.Errorf("%w: %s answered 404", ErrNotFound, u)
	case status != http.StatusOK:
		return r, fmt.Errorf("%w: %s answered %d", ErrUnavailable, u, status)
	}
	r.RegisteredAt, err = parseRegistration(body, domain)
	if err != nil {
		return r, fmt.Errorf("%s: %w", u, err)
	}
	return r, nil
}

// registry returns the bootstrap registry, reading it again once it is
// older than BootstrapTTL. A failed read keeps no state, so the next call
// tries again.
func (c *Client) registry(ctx context.Context) (registry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bootstrap != nil && c.cfg.Now().Sub(c.bootstrapAt) < c.cfg.BootstrapTTL {
		return c.bootstrap, nil
	}
	var body []byte
	if c.cfg.BootstrapFile != "" {
		b, err := os.ReadFile(c.cfg.BootstrapFile)
		if err != nil {
			return nil, fmt.Errorf("%w: bootstrap file: %v", ErrUnavailable, err)
		}
		body = b
	} else {
		b, status, err := c.get(ctx, c.cfg.BootstrapURL)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("%w: bootstrap %s answered %d", ErrUnavailable, c.cfg.BootstrapURL, status)
		}
		body = b
	}
	reg, err := parseBootstrap(body)
	if err != nil {
		return nil, err
	}
	c.bootstrap, c.bootstrapAt = reg, c.cfg.Now()
	return reg, nil
}

// get fetches u and returns its body (at most maxAnswerBytes) and status.
func (c *Client) get(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Accept", "application/rdap+json, application/json;q=0.9")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: reading %s: %w", ErrUnavailable, u, err)
	}
	if len(body) > maxAnswerBytes {
		return nil, 0, fmt.Errorf("%w: %s: answer larger than %d bytes", ErrUnavailable, u, maxAnswerBytes)
	}
	return body, resp.StatusCode, nil
}

// Result is the outcome of the domain-age check, with its evidence.
type Result struct {
	Name         Name
	URL          string        // the RDAP URL asked, when one was
	RegisteredAt time.Time     // zero when unknown
	Age          time.Duration // at the time of the check
	EligibleAt   time.Time     // RegisteredAt + MinimumAge months
	// Reason is "" when the domain is old enough, else one of the Reason
	// constants.
	Reason string
	// Err explains a ReasonDomainUnknown or ReasonRDAPUnavailable.
	Err error
}

// Passed reports whether the domain is old enough.
func (r Result) Passed() bool { return r.Reason == "" }

// Retryable reports whether the check failed for a reason that may go away
// by itself: the caller should run it again later rather than decide.
func (r Result) Retryable() bool { return r.Reason == ReasonRDAPUnavailable }

// Check runs the domain-age check on the host of hostOrURL.
func (c *Client) Check(ctx context.Context, hostOrURL string) Result {
	name, err := RegistrableDomain(hostOrURL)
	if err != nil {
		return Result{Reason: ReasonDomainUnknown, Err: err}
	}
	reg, err := c.Lookup(ctx, name.Domain)
	res := Result{Name: name, URL: reg.URL}
	if err != nil {
		res.Reason, res.Err = ReasonFor(err), err
		return res
	}
	now := c.cfg.Now()
	res.RegisteredAt = reg.RegisteredAt
	res.Age = now.Sub(reg.RegisteredAt)
	res.EligibleAt = reg.RegisteredAt.AddDate(0, MinimumAge, 0)
	if now.Before(res.EligibleAt) {
		res.Reason = ReasonDomainTooYoung
	}
	return res
}

// ReasonFor maps an error of Lookup to its reason code.
func ReasonFor(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoServer),
		errors.Is(err, ErrNoRegistrationDate), errors.Is(err, ErrInvalidDomain):
		return ReasonDomainUnknown
	default: // ErrUnavailable, ErrMalformedAnswer, a cancelled context
		return ReasonRDAPUnavailable
	}
}
