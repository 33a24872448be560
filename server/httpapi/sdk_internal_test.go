package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

type nopStore struct{}

func (nopStore) Ping(context.Context) error { return nil }

// TestRealIP: X-Forwarded-For is believed only from a trusted proxy, and
// then only up to the first hop that is not itself a trusted proxy.
func TestRealIP(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	var got string
	h := s.realIP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
	serve := func(remote string, xff ...string) string {
		r := httptest.NewRequest("POST", "/v1/sdk/install", nil)
		r.RemoteAddr = remote
		for _, v := range xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got = ""
		h.ServeHTTP(httptest.NewRecorder(), r)
		return got
	}

	// No trusted proxy: the header is ignored.
	assert.Equal(t, "127.0.0.1:5000", serve("127.0.0.1:5000", "203.0.113.9"))

	s.services.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"127.0.0.1:5000", []string{"203.0.113.9"}, "203.0.113.9:5000"},
		{"127.0.0.1:5000", []string{"198.51.100.1, 10.1.1.1"}, "198.51.100.1:5000"},  // through two proxies
		{"127.0.0.1:5000", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1:5000"},   // the client cannot prepend
		{"127.0.0.1:5000", []string{"1.1.1.1", "198.51.100.1"}, "198.51.100.1:5000"}, // several header lines
		{"127.0.0.1:5000", []string{"garbage, 198.51.100.1"}, "198.51.100.1:5000"},   // garbage left of the client
		{"127.0.0.1:5000", []string{"198.51.100.1, garbage"}, "127.0.0.1:5000"},      // garbage from a proxy: trust nothing
		{"127.0.0.1:5000", nil, "127.0.0.1:5000"},                                    // no header
		{"192.0.2.1:5000", []string{"203.0.113.9"}, "192.0.2.1:5000"},                // not a trusted peer
		{"[::ffff:127.0.0.1]:5000", []string{"2001:db8::7"}, "[2001:db8::7]:5000"},   // mapped peer, IPv6 client
		{"127.0.0.1:5000", []string{"::ffff:203.0.113.9"}, "203.0.113.9:5000"},       // mapped client
		{"127.0.0.1:5000", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.1:5000"},          // every hop a proxy
	} {
		assert.Equal(t, c.want, serve(c.remote, c.xff...), "%s %v", c.remote, c.xff)
	}
}
