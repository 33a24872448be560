package webhooks

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/outbound"
)

func code(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// The SSRF matrix, refused when the endpoint is registered (an IP
// literal); host names are refused when a delivery dials (worker tests).
func TestCheckURLRefusesForbiddenAddresses(t *testing.T) {
	live := URLPolicy{Options: outbound.Options{RequireHTTPS: true}}
	test := URLPolicy{}
	loopback := URLPolicy{Options: outbound.Options{TestOnlyAllowLoopback: true}}
	for _, u := range []string{
		"https://127.0.0.1/x", "https://127.1.2.3/x", "https://[::1]/x", "https://10.0.0.1/x", "https://172.16.0.1/x",
		"https://172.31.255.255/x", "https://192.168.1.1/x", "https://169.254.169.254/latest/meta-data", "https://100.64.0.1/x",
		"https://[fd00::1]/x", "https://[fe80::1]/x", "https://0.0.0.0/x", "https://[::ffff:127.0.0.1]/x", "https://224.0.0.1/x",
		"https://example.com:8443/x", "https://93.184.216.34:22/x",
	} {
		for name, p := range map[string]URLPolicy{"live": live, "test": test} {
			if got := code(p.CheckURL(u)); got != apperr.WebhookURLForbidden {
				t.Errorf("%s: %s: got %q, want webhook_url_forbidden", name, u, got)
			}
		}
	}
	for _, u := range []string{"http://127.0.0.1:4242/hook", "http://[::1]:9/x", "http://localhost:4242/x"} {
		if err := loopback.CheckURL(u); err != nil {
			t.Errorf("loopback setting: %s: %v", u, err)
		}
	}
	if got := code(loopback.CheckURL("https://10.0.0.1/x")); got != apperr.WebhookURLForbidden {
		t.Errorf("the loopback setting opens loopback only: got %q", got)
	}
}

func TestCheckURL(t *testing.T) {
	live := URLPolicy{Options: outbound.Options{RequireHTTPS: true}}
	test := URLPolicy{}
	for _, c := range []struct {
		url        string
		live, test string // codes; "" accepted
	}{
		{"https://example.com/hooks", "", ""},
		{"https://93.184.216.34/hooks", "", ""},
		{"http://example.com/hooks", apperr.InvalidURL, ""},
		{"ftp://example.com/x", apperr.InvalidURL, apperr.InvalidURL},
		{"https://u:p@example.com/x", apperr.InvalidURL, apperr.InvalidURL},
		{"https://example.com/x#f", apperr.InvalidURL, apperr.InvalidURL},
		{"https:///x", apperr.InvalidURL, apperr.InvalidURL},
		{"example.com/x", apperr.InvalidURL, apperr.InvalidURL},
		{"", apperr.MissingField, apperr.MissingField},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), apperr.InvalidURL, apperr.InvalidURL},
	} {
		if got := code(live.CheckURL(c.url)); got != c.live {
			t.Errorf("live %q: got %q, want %q", c.url, got, c.live)
		}
		if got := code(test.CheckURL(c.url)); got != c.test {
			t.Errorf("test %q: got %q, want %q", c.url, got, c.test)
		}
	}
}

// Any string: a catalogued refusal or an absolute http(s) URL with a host.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://[::1]:80/", "https://10.0.0.1", "https://user@h/", "https://h:99999/", "https://[fe80::1%25eth0]/"} {
		f.Add(s)
	}
	p := URLPolicy{}
	f.Fuzz(func(t *testing.T, raw string) {
		err := p.CheckURL(raw)
		if err != nil {
			if code(err) == "" {
				t.Fatalf("%q: an uncatalogued error %v", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("%q accepted", raw)
		}
	})
}
