package rdap

import (
	"strings"
	"testing"
)

// The parsers read what remote servers send: whatever the bytes, they
// return a date or an error, never panic, and never a date without a
// registration event.
func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"objectClassName":"domain","ldhName":"example.com","events":[{"eventAction":"registration","eventDate":"1995-08-14T04:00:00Z"}]}`), "example.com")
	f.Add([]byte(`{"objectClassName":"domain","events":[{"eventAction":"registration","eventDate":"2026-10-01T00:00:00.123+02:00"},{"eventAction":"registration","eventDate":"2001-01-01T00:00:00Z"}]}`), "x.test")
	f.Add([]byte(`{"objectClassName":"domain","events":null}`), "a.b")
	f.Add([]byte(`{"errorCode":404,"title":"Not Found"}`), "a.b")
	f.Add([]byte(`[]`), "")
	f.Add([]byte(strings.Repeat("[", 100)+strings.Repeat("]", 100)), "a.b") // beyond jsonbound.Answer's depth
	f.Fuzz(func(t *testing.T, body []byte, domain string) {
		got, err := parseRegistration(body, domain)
		if err == nil {
			if got.IsZero() || got.Location().String() != "UTC" {
				t.Fatalf("parsed %v without error from %q", got, body)
			}
		}
	})
}

func FuzzParseBootstrap(f *testing.F) {
	f.Add([]byte(`{"version":"1.0","services":[[["com","net"],["https://rdap.verisign.com/com/v1/"]],[["co.uk","uk"],["http://rdap.nic.uk/","https://rdap.nominet.uk/uk/"]]]}`), "example.co.uk")
	f.Add([]byte(`{"version":"1.0","services":[[["test"]]]}`), "a.test")
	f.Add([]byte(`{"version":"1.0","services":[[[""],["https://x/"]]]}`), ".")
	f.Fuzz(func(t *testing.T, body []byte, domain string) {
		reg, err := parseBootstrap(body)
		if err != nil {
			return
		}
		if base, ok := reg.server(domain); ok && !strings.HasPrefix(base, "http") {
			t.Fatalf("server %q for %q is not an http(s) URL", base, domain)
		}
	})
}

func FuzzRegistrableDomain(f *testing.F) {
	for _, s := range []string{"https://dl.example.co.uk/app.zip", "acme.github.io", "bücher.example", "[::1]:80", "a..b", "xn--.com", "localhost:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := RegistrableDomain(in)
		if err != nil {
			return
		}
		if n.Domain == "" || !strings.Contains(n.Domain, ".") || !strings.HasSuffix(n.Host, n.Domain) {
			t.Fatalf("RegistrableDomain(%q) = %+v", in, n)
		}
	})
}
