package apps

import (
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/textcheck"
)

// Limits of the registration fields.
const (
	MaxNameLen     = 200  // characters
	MaxBundleIDLen = 255  // bytes (ASCII only)
	MaxDomainLen   = 253  // bytes, the DNS limit
	MaxURLLen      = 2048 // bytes
	MaxEmailLen    = 254  // bytes, RFC 5321 path limit
)

var (
	bundleIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$`)
	labelRe    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	categoryRe = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
)

func fieldErr(code, field, format string, args ...any) error {
	e := apperr.New(code, format, args...)
	e.Field = field
	return e
}

// validate checks p field by field in the order of RegisterAppRequest; the
// first failure wins. It returns p normalised: surrounding whitespace trimmed,
// the domain lower-cased.
func validate(p RegisterParams) (_ RegisterParams, err error) {
	appcast := p.AppcastURL
	for _, f := range []*string{&p.Name, &p.Platform, &p.BundleID, &p.Domain, &p.DownloadURL, &p.ContactEmail, &p.Category, &p.AppcastURL} {
		*f = strings.TrimSpace(*f)
	}
	p.Domain = strings.ToLower(p.Domain)
	checks := []struct {
		field, value string
		check        func(string) error
	}{
		{"name", p.Name, checkName},
		{"platform", p.Platform, checkPlatform},
		{"bundle_id", p.BundleID, checkBundleID},
		{"domain", p.Domain, checkDomain},
		{"download_url", p.DownloadURL, checkDownloadURL},
		{"contact_email", p.ContactEmail, checkEmail},
	}
	for _, c := range checks {
		if c.value == "" {
			return p, fieldErr(apperr.MissingField, c.field, "%s is required", c.field)
		}
		if err := c.check(c.value); err != nil {
			return p, err
		}
	}
	if p.Category != "" && !categoryRe.MatchString(p.Category) {
		return p, fieldErr(apperr.InvalidCategory, "category", "category must be a rate-card key: 1 to 64 of a-z, 0-9 and -")
	}
	if appcast != "" { // given, even blank: a blank URL is not a URL
		if p.AppcastURL, err = checkAppcastURL(appcast); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkAppcastURL returns a given appcast_url with surrounding whitespace
// trimmed, or invalid_appcast_url: the rule of download_url, a blank string
// included. Registration and a later change (UpdateAppcastURL) both check
// it here.
func checkAppcastURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	return s, checkURL(apperr.InvalidAppcastURL, "appcast_url", s)
}

// checkName accepts a display name of at most MaxNameLen characters without
// control or invisible formatting characters: a name is shown to other
// apps' users, and a right-to-left override in it could make "Snip\u202Eexe.pdf"
// read as something else.
func checkName(s string) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxNameLen {
		return fieldErr(apperr.InvalidName, "name", "name must be at most %d characters", MaxNameLen)
	}
	if r, ok := textcheck.FirstHidden(s); ok {
		return fieldErr(apperr.InvalidName, "name", "name must not contain control or invisible formatting characters such as %U", r)
	}
	return nil
}

func checkPlatform(s string) error {
	if !xpromo.Platform(s).Valid() {
		return fieldErr(apperr.InvalidPlatform, "platform", "platform must be mac or win, not %q", s)
	}
	return nil
}

// checkBundleID accepts a reverse-DNS identifier: dot-separated non-empty
// segments of ASCII letters, digits, '-' and '_', at least two segments.
func checkBundleID(s string) error {
	if len(s) > MaxBundleIDLen || !bundleIDRe.MatchString(s) {
		return fieldErr(apperr.InvalidBundleID, "bundle_id", "bundle_id must be a reverse-DNS identifier such as com.example.app (letters, digits, '.', '-', '_'; at most %d characters)", MaxBundleIDLen)
	}
	return nil
}

// checkDomain accepts a DNS name (already lower-cased) of at least two
// labels: no scheme, path, port or trailing dot, each label 1 to 63 of
// a-z, 0-9 and inner '-', and a top-level label that is not all digits (so
// an IP address is refused).
func checkDomain(s string) error {
	bad := func(why string) error {
		return fieldErr(apperr.InvalidDomain, "domain", "domain must be a registrable DNS name such as example.com: %s", why)
	}
	if strings.ContainsAny(s, ":/?#@ ") {
		return bad("no scheme, path, port or user")
	}
	if len(s) > MaxDomainLen {
		return bad("too long")
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return bad("at least one dot")
	}
	for _, l := range labels {
		if !labelRe.MatchString(l) {
			return bad("invalid label " + strconv.Quote(l))
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return bad("the top-level label cannot be numeric")
	}
	return nil
}

func checkDownloadURL(s string) error { return checkURL(apperr.InvalidURL, "download_url", s) }

// checkURL accepts an absolute http or https URL of at most MaxURLLen bytes
// with a host and no user information (credentials do not belong in a
// published link); a refusal names field, with code.
func checkURL(code, field, s string) error {
	u, err := url.Parse(s)
	if err != nil || len(s) > MaxURLLen || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "" || u.User != nil {
		return fieldErr(code, field, "%s must be an absolute https (or http) URL with a host, without credentials, of at most %d characters", field, MaxURLLen)
	}
	return nil
}

// checkEmail accepts a bare address (no display name, no angle brackets)
// whose domain has a dot.
func checkEmail(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || len(s) > MaxEmailLen {
		return fieldErr(apperr.InvalidEmail, "contact_email", "contact_email must be a bare address such as dev@example.com")
	}
	at := strings.LastIndexByte(s, '@')
	if domain := s[at+1:]; !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") {
		return fieldErr(apperr.InvalidEmail, "contact_email", "contact_email must have a domain with a dot")
	}
	return nil
}
