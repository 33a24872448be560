package rdap_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/rdap"
	"github.com/xpromo/xpromo/server/outbound"
)

var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// domainAnswer is an RDAP domain object shaped like the ones registries
// serve (RFC 9083 §5.3, the example of §5.3 trimmed), with the given
// registration date.
func domainAnswer(ldh, registered string) string {
	return fmt.Sprintf(`{
  "rdapConformance": ["rdap_level_0", "icann_rdap_response_profile_1", "icann_rdap_technical_implementation_guide_1"],
  "objectClassName": "domain",
  "handle": "2336799_DOMAIN_COM-VRSN",
  "ldhName": %q,
  "links": [{"value": "https://rdap.test/domain/%s", "rel": "self", "href": "https://rdap.test/domain/%s", "type": "application/rdap+json"}],
  "status": ["client delete prohibited", "client transfer prohibited"],
  "entities": [{"objectClassName": "entity", "handle": "292", "roles": ["registrar"],
    "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Example Registrar"]]]}],
  "events": [
    {"eventAction": "registration", "eventDate": %q},
    {"eventAction": "expiration", "eventDate": "2030-08-13T04:00:00Z"},
    {"eventAction": "last changed", "eventDate": "2026-08-14T07:01:39Z"},
    {"eventAction": "last update of RDAP database", "eventDate": "2026-11-21T09:51:22Z"}
  ],
  "secureDNS": {"delegationSigned": false},
  "nameservers": [{"objectClassName": "nameserver", "ldhName": "A.IANA-SERVERS.NET"}],
  "notices": [{"title": "Terms of Use", "description": ["Service subject to Terms of Use."]}]
}`, strings.ToUpper(ldh), ldh, ldh, registered)
}

const notFoundAnswer = `{"rdapConformance":["rdap_level_0"],"errorCode":404,"title":"Not Found","description":["The object does not exist."]}`

// fakeRegistry is a local RDAP server and bootstrap file: /dns.json maps
// the TLDs "test" and "co.test" to /rdap/, and /rdap/domain/<name> answers
// from answers (or 404).
type fakeRegistry struct {
	*httptest.Server
	answers        map[string]func(w http.ResponseWriter)
	bootstrapHits  atomic.Int32
	lastAcceptSeen atomic.Value
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	f := &fakeRegistry{answers: map[string]func(http.ResponseWriter){}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dns.json", func(w http.ResponseWriter, r *http.Request) {
		f.bootstrapHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"version":"1.0","publication":"2026-11-20T19:00:01Z","description":"RDAP bootstrap file for Domain Name System registrations",
"services":[[["test","example"],["%[1]s/rdap/"]],[["nord"],[]],[["invalid-url"],["ftp://x/"]]]}`, f.URL)
	})
	mux.HandleFunc("GET /rdap/domain/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.lastAcceptSeen.Store(r.Header.Get("Accept"))
		answer, ok := f.answers[r.PathValue("name")]
		if !ok {
			w.Header().Set("Content-Type", "application/rdap+json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, notFoundAnswer)
			return
		}
		answer(w)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRegistry) answer(domain string, status int, body string) {
	f.answers[domain] = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/rdap+json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func loopbackHTTP() *http.Client {
	return outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: 10 * time.Second})
}

func newClient(t *testing.T, cfg rdap.Config) *rdap.Client {
	t.Helper()
	if cfg.HTTP == nil {
		cfg.HTTP = loopbackHTTP()
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return now }
	}
	c, err := rdap.New(cfg)
	require.NoError(t, err)
	return c
}

func TestCheckThroughBootstrap(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("old.test", 200, domainAnswer("old.test", "1997-09-15T04:00:00Z"))
	f.answer("young.test", 200, domainAnswer("young.test", "2026-08-31T12:00:00Z"))
	f.answer("sixmonths.test", 200, domainAnswer("sixmonths.test", "2026-05-21T10:00:00Z"))
	f.answer("noevent.test", 200, `{"objectClassName":"domain","ldhName":"noevent.test","events":[{"eventAction":"expiration","eventDate":"2027-01-01T00:00:00Z"}]}`)
	f.answer("twice.test", 200, `{"objectClassName":"domain","ldhName":"twice.test","events":[
		{"eventAction":"registration","eventDate":"2001-01-01T00:00:00Z"},
		{"eventAction":"registration","eventDate":"2026-10-01T00:00:00+02:00"}]}`)
	f.answer("broken.test", 500, `internal error`)
	f.answer("busy.test", 429, `{"errorCode":429,"title":"Too Many Requests"}`)
	f.answer("garbled.test", 200, `{"objectClassName":"domain","events":[{"eventAction":"registration"`)
	f.answer("entity.test", 200, `{"objectClassName":"entity","handle":"X"}`)
	f.answer("other.test", 200, domainAnswer("someone-else.test", "1997-09-15T04:00:00Z"))
	f.answer("baddate.test", 200, `{"objectClassName":"domain","ldhName":"baddate.test","events":[{"eventAction":"registration","eventDate":"15/09/1997"}]}`)
	f.answer("huge.test", 200, `{"objectClassName":"domain","x":"`+strings.Repeat("a", 2<<20)+`"}`)

	c := newClient(t, rdap.Config{BootstrapURL: f.URL + "/dns.json"})
	ctx := context.Background()

	t.Run("an old domain passes, measured on the registrable domain", func(t *testing.T) {
		r := c.Check(ctx, "https://downloads.cdn.old.test/app/Old-1.0.zip")
		require.True(t, r.Passed(), "%+v", r)
		assert.Equal(t, "old.test", r.Name.Domain)
		assert.Equal(t, f.URL+"/rdap/domain/old.test", r.URL)
		assert.Equal(t, time.Date(1997, 9, 15, 4, 0, 0, 0, time.UTC), r.RegisteredAt)
		assert.Equal(t, now.Sub(r.RegisteredAt), r.Age)
		assert.Equal(t, time.Date(1998, 3, 15, 4, 0, 0, 0, time.UTC), r.EligibleAt)
		assert.Contains(t, f.lastAcceptSeen.Load(), "application/rdap+json")
	})
	t.Run("a young domain is too young until six calendar months after registration", func(t *testing.T) {
		r := c.Check(ctx, "young.test")
		assert.Equal(t, rdap.ReasonDomainTooYoung, r.Reason)
		assert.False(t, r.Retryable())
		assert.Equal(t, time.Date(2026, 8, 31, 12, 0, 0, 0, time.UTC), r.RegisteredAt)
		// AddDate normalises 31 February to 3 March (2027 is not a leap year).
		assert.Equal(t, time.Date(2027, 3, 3, 12, 0, 0, 0, time.UTC), r.EligibleAt)
	})
	t.Run("exactly six months old passes", func(t *testing.T) {
		r := c.Check(ctx, "sixmonths.test")
		assert.True(t, r.Passed(), "%+v", r)
		assert.Equal(t, now, r.EligibleAt)
	})
	t.Run("of several registration events the latest counts", func(t *testing.T) {
		r := c.Check(ctx, "twice.test")
		assert.Equal(t, rdap.ReasonDomainTooYoung, r.Reason)
		assert.Equal(t, time.Date(2026, 9, 30, 22, 0, 0, 0, time.UTC), r.RegisteredAt)
	})

	unknown := map[string]error{
		"missing.test":              rdap.ErrNotFound,
		"noevent.test":              rdap.ErrNoRegistrationDate,
		"example.nord":              rdap.ErrNoServer, // listed without servers
		"example.invalid-url":       rdap.ErrNoServer, // listed with a non-http URL only
		"example.zz":                rdap.ErrNoServer, // not listed
		"https://127.0.0.1/app.zip": rdap.ErrInvalidDomain,
		"test":                      rdap.ErrInvalidDomain,
	}
	for target, want := range unknown {
		t.Run("unknown: "+target, func(t *testing.T) {
			r := c.Check(ctx, target)
			assert.Equal(t, rdap.ReasonDomainUnknown, r.Reason)
			assert.ErrorIs(t, r.Err, want)
			assert.False(t, r.Retryable())
			assert.True(t, r.RegisteredAt.IsZero())
		})
	}

	unavailable := map[string]error{
		"broken.test":  rdap.ErrUnavailable,
		"busy.test":    rdap.ErrUnavailable,
		"huge.test":    rdap.ErrUnavailable,
		"garbled.test": rdap.ErrMalformedAnswer,
		"entity.test":  rdap.ErrMalformedAnswer,
		"other.test":   rdap.ErrMalformedAnswer,
		"baddate.test": rdap.ErrMalformedAnswer,
	}
	for target, want := range unavailable {
		t.Run("unavailable: "+target, func(t *testing.T) {
			r := c.Check(ctx, target)
			assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason)
			assert.ErrorIs(t, r.Err, want)
			assert.True(t, r.Retryable())
		})
	}
}

func TestConfiguredBaseURLSkipsBootstrap(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("example.com", 200, domainAnswer("example.com", "1995-08-14T04:00:00Z"))
	c := newClient(t, rdap.Config{BaseURL: f.URL + "/rdap"}) // no trailing slash
	r := c.Check(context.Background(), "http://www.example.com")
	require.True(t, r.Passed(), "%+v", r)
	assert.Equal(t, f.URL+"/rdap/domain/example.com", r.URL)
	assert.Zero(t, f.bootstrapHits.Load())
}

func TestBootstrapFromFile(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("young.example", 200, domainAnswer("young.example", "2026-11-01T00:00:00Z"))
	path := filepath.Join(t.TempDir(), "dns.json")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil,
		`{"version":"1.0","services":[[["example"],["%s/rdap/"]]]}`, f.URL), 0o600))

	c := newClient(t, rdap.Config{BootstrapFile: path, BootstrapURL: "https://unused.invalid/dns.json"})
	r := c.Check(context.Background(), "young.example")
	assert.Equal(t, rdap.ReasonDomainTooYoung, r.Reason, "%+v", r)
	assert.Equal(t, time.Date(2027, 5, 1, 0, 0, 0, 0, time.UTC), r.EligibleAt)

	missing := newClient(t, rdap.Config{BootstrapFile: filepath.Join(t.TempDir(), "nope.json")})
	r = missing.Check(context.Background(), "young.example")
	assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason)
}

func TestBootstrapIsCachedForItsTTL(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("old.test", 200, domainAnswer("old.test", "1997-09-15T04:00:00Z"))
	clock := clocktest.New(now)
	c := newClient(t, rdap.Config{BootstrapURL: f.URL + "/dns.json", BootstrapTTL: time.Hour, Now: clock.Now})
	ctx := context.Background()
	for range 3 {
		require.True(t, c.Check(ctx, "old.test").Passed())
	}
	assert.EqualValues(t, 1, f.bootstrapHits.Load())
	clock.Advance(time.Hour)
	require.True(t, c.Check(ctx, "old.test").Passed())
	assert.EqualValues(t, 2, f.bootstrapHits.Load())
}

func TestUnreadableBootstrapIsUnavailable(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"500":         func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) },
		"not json":    func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>") },
		"bad version": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"version":"2","services":[]}`) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			c := newClient(t, rdap.Config{BootstrapURL: srv.URL})
			r := c.Check(context.Background(), "old.test")
			assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason)
			assert.True(t, r.Retryable())
		})
	}
}

// The client goes through server/outbound: without the test-only loopback
// option, a registry on a loopback address is refused before any request.
func TestRequestsGoThroughOutbound(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("old.test", 200, domainAnswer("old.test", "1997-09-15T04:00:00Z"))
	c := newClient(t, rdap.Config{BaseURL: f.URL + "/rdap/", HTTP: outbound.New(outbound.Options{})})
	r := c.Check(context.Background(), "old.test")
	assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason)
	assert.ErrorIs(t, r.Err, outbound.ErrForbiddenAddress)
}

func TestCancelledContextIsUnavailable(t *testing.T) {
	f := newFakeRegistry(t)
	f.answer("old.test", 200, domainAnswer("old.test", "1997-09-15T04:00:00Z"))
	c := newClient(t, rdap.Config{BaseURL: f.URL + "/rdap/"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := c.Check(ctx, "old.test")
	assert.Equal(t, rdap.ReasonRDAPUnavailable, r.Reason)
	assert.True(t, errors.Is(r.Err, context.Canceled), "%v", r.Err)
}

func TestNewRefusesBadURLs(t *testing.T) {
	for _, cfg := range []rdap.Config{
		{BaseURL: "rdap.example/"},
		{BaseURL: "ftp://rdap.example/"},
		{BootstrapURL: "file:///etc/passwd"},
	} {
		_, err := rdap.New(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func TestRegistrableDomain(t *testing.T) {
	for in, want := range map[string]rdap.Name{
		"example.com":                          {Host: "example.com", Domain: "example.com"},
		"https://dl.Example.COM./app.zip?x=1":  {Host: "dl.example.com", Domain: "example.com"},
		"https://user:pw@dl.example.com:8443/": {Host: "dl.example.com", Domain: "example.com"},
		"dl.example.co.uk:443":                 {Host: "dl.example.co.uk", Domain: "example.co.uk"},
		"a.b.c.example.test":                   {Host: "a.b.c.example.test", Domain: "example.test"},
		"https://bücher.example/x":             {Host: "xn--bcher-kva.example", Domain: "xn--bcher-kva.example"},
		"https://acme.github.io/releases":      {Host: "acme.github.io", Domain: "github.io", PrivateSuffix: "github.io"},
		"github.io":                            {Host: "github.io", Domain: "github.io"},
		"x.y.s3.amazonaws.com":                 {Host: "x.y.s3.amazonaws.com", Domain: "amazonaws.com", PrivateSuffix: "s3.amazonaws.com"},
	} {
		got, err := rdap.RegistrableDomain(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "https:///x", "localhost", "co.uk", "https://[::1]/", "10.0.0.1", "http://192.168.1.1:80/", "exa mple.com", "-x.com"} {
		_, err := rdap.RegistrableDomain(in)
		assert.ErrorIs(t, err, rdap.ErrInvalidDomain, in)
	}
}
