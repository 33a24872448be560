package rdap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/jsonbound"
)

// ErrMalformedAnswer: the server's answer is not an RDAP document this
// package can read (not JSON, not a domain object, a registration date that
// is not RFC 3339, another domain than the one asked for).
var ErrMalformedAnswer = errors.New("rdap: malformed answer")

// ErrNoRegistrationDate: the domain object carries no "registration" event.
// Some registries (several ccTLDs) publish none.
var ErrNoRegistrationDate = errors.New("rdap: the registry publishes no registration date for the domain")

// domainObject holds the members of an RFC 9083 §5.3 domain object this
// package reads; the rest of the answer is ignored.
type domainObject struct {
	ObjectClassName string  `json:"objectClassName"`
	LDHName         string  `json:"ldhName"`
	Events          []event `json:"events"`
}

// event is RFC 9083 §4.5. eventAction values come from IANA's "RDAP JSON
// Values" registry: "registration", "reregistration", "last changed",
// "expiration", ...
type event struct {
	Action string `json:"eventAction"`
	Actor  string `json:"eventActor"`
	Date   string `json:"eventDate"`
}

// parseRegistration reads the registration date of domain (A-label,
// lower-case) from an RDAP domain answer, whose structure is first held to
// jsonbound.Answer (its bytes to maxAnswerBytes by Client.get).
//
// When there are several "registration" events it returns the latest: a
// domain deleted and registered again is as old as its last registration,
// and the later date is the cautious one for an age check.
func parseRegistration(body []byte, domain string) (time.Time, error) {
	if err := jsonbound.Check(body, jsonbound.Answer); err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
	}
	var d domainObject
	if err := json.Unmarshal(body, &d); err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
	}
	// RFC 9083 requires objectClassName; an answer without it, or of another
	// class, is not the domain object asked for.
	if d.ObjectClassName != "domain" {
		return time.Time{}, fmt.Errorf("%w: objectClassName is %q, want \"domain\"", ErrMalformedAnswer, d.ObjectClassName)
	}
	if d.LDHName != "" && strings.ToLower(strings.TrimSuffix(d.LDHName, ".")) != domain {
		return time.Time{}, fmt.Errorf("%w: the answer is about %q, not %q", ErrMalformedAnswer, d.LDHName, domain)
	}
	var registered time.Time
	for _, e := range d.Events {
		if e.Action != "registration" { // IANA's registered value, lower-case
			continue
		}
		t, err := time.Parse(time.RFC3339, e.Date)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: registration eventDate %q is not RFC 3339", ErrMalformedAnswer, e.Date)
		}
		if t.After(registered) {
			registered = t
		}
	}
	if registered.IsZero() {
		return time.Time{}, ErrNoRegistrationDate
	}
	return registered.UTC(), nil
}

// bootstrapFile is IANA's RDAP bootstrap file for DNS (RFC 9224 §4):
// "services" is a list of [ [entries...], [base URLs...] ] pairs, the
// entries being TLDs (or longer suffixes) in A-label form.
type bootstrapFile struct {
	Version  string       `json:"version"`
	Services [][][]string `json:"services"`
}

// registry maps a domain suffix to the base URLs of its RDAP servers.
type registry map[string][]string

// parseBootstrap reads an RFC 9224 DNS bootstrap file. Base URLs that are
// not absolute http(s) URLs are dropped; a suffix left without any is too.
func parseBootstrap(body []byte) (registry, error) {
	if err := jsonbound.Check(body, jsonbound.Answer); err != nil {
		return nil, fmt.Errorf("%w: bootstrap file: %v", ErrMalformedAnswer, err)
	}
	var f bootstrapFile
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("%w: bootstrap file: %v", ErrMalformedAnswer, err)
	}
	if f.Version != "1.0" {
		return nil, fmt.Errorf("%w: bootstrap file version %q, want \"1.0\"", ErrMalformedAnswer, f.Version)
	}
	reg := registry{}
	for _, svc := range f.Services {
		if len(svc) != 2 {
			return nil, fmt.Errorf("%w: bootstrap service with %d members, want 2", ErrMalformedAnswer, len(svc))
		}
		var urls []string
		for _, u := range svc[1] {
			if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" {
				urls = append(urls, u)
			}
		}
		if len(urls) == 0 {
			continue
		}
		for _, entry := range svc[0] {
			entry = strings.ToLower(strings.Trim(entry, "."))
			if entry != "" {
				reg[entry] = urls
			}
		}
	}
	return reg, nil
}

// server returns the base URL to ask about domain: the entry matching the
// most labels wins (RFC 9224 §4), and an https URL is preferred over http
// (§6 of the same). ok is false when no entry matches.
func (r registry) server(domain string) (base string, ok bool) {
	for s := domain; s != ""; {
		if urls, found := r[s]; found {
			for _, u := range urls {
				if strings.HasPrefix(u, "https:") {
					return u, true
				}
			}
			return urls[0], true
		}
		_, s, _ = strings.Cut(s, ".")
	}
	return "", false
}
