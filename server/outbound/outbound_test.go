package outbound_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/outbound"
)

// The SSRF matrix of issue 13, plus the forms a hand-written check tends to
// miss. Port 80 is used so the production guard judges the address, not the
// port. loopback marks the destinations TestOnlyAllowLoopback opens.
var forbidden = []struct {
	url      string
	loopback bool
}{
	{"http://127.0.0.1/", true},
	{"http://[::1]/", true},
	{"http://localhost/", true}, // a hostname resolving to loopback
	{"http://[::ffff:127.0.0.1]/", true},
	{"http://127.0.0.2/", false}, // the rest of 127/8 stays closed in tests
	{"http://10.0.0.1/", false},
	{"http://172.16.0.1/", false},
	{"http://192.168.1.1/", false},
	{"http://169.254.169.254/latest/meta-data/", false}, // cloud metadata
	{"http://100.64.0.1/", false},                       // CGNAT
	{"http://100.100.100.200/", false},                  // CGNAT, Alibaba's metadata service
	{"http://[fd00::1]/", false},                        // IPv6 ULA
	{"http://[fe80::1]/", false},                        // IPv6 link-local
	{"http://0.0.0.0/", false},
	{"http://[::]/", false},
	{"http://224.0.0.1/", false},            // multicast
	{"http://198.18.0.1/", false},           // benchmarking range
	{"http://[64:ff9b::a9fe:a9fe]/", false}, // NAT64 form of 169.254.169.254
	{"http://[2002:a9fe:a9fe::1]/", false},  // 6to4 form of 169.254.169.254
}

func get(t *testing.T, c *http.Client, url string) ([]byte, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestProductionRefusesEveryInternalDestination(t *testing.T) {
	c := outbound.New(outbound.Options{Timeout: 5 * time.Second})
	for _, d := range forbidden {
		t.Run(d.url, func(t *testing.T) {
			_, err := get(t, c, d.url)
			require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
			require.ErrorIs(t, err, ssrf.ErrProhibitedIP) // the address is the reason, not the port
		})
	}
}

func TestTestOnlyOptionOpensLoopbackAndNothingElse(t *testing.T) {
	c := outbound.New(outbound.Options{Timeout: 5 * time.Second, TestOnlyAllowLoopback: true})
	for _, d := range forbidden {
		if d.loopback {
			continue
		}
		t.Run(d.url, func(t *testing.T) {
			_, err := get(t, c, d.url)
			require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
		})
	}
}

func TestProductionRefusesLoopbackReceiver(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the receiver must never be reached")
	}))
	defer srv.Close()

	_, err := get(t, outbound.New(outbound.Options{}), srv.URL)
	require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
}

func TestAllowedRequestWorks(t *testing.T) {
	var gotUA, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA = r.Header.Get("User-Agent")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		fmt.Fprint(w, "received")
	}))
	defer srv.Close()
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true})

	resp, err := c.Post(srv.URL+"/hook", "application/json", strings.NewReader(`{"id":"evt_1"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "received", string(body))
	require.Equal(t, `{"id":"evt_1"}`, gotBody)
	require.Contains(t, gotUA, "xpromo")
}

func TestAllowedRequestWorksOverIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback on this machine:", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	body, err := get(t, outbound.New(outbound.Options{TestOnlyAllowLoopback: true}), srv.URL)
	require.NoError(t, err)
	require.Equal(t, "ok", string(body))
}

func redirector(to string) *httptest.Server {
	return httptest.NewServer(http.RedirectHandler(to, http.StatusFound))
}

func TestRedirectToInternalAddressIsRefused(t *testing.T) {
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true})
	for _, to := range []string{"http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00::1]/"} {
		t.Run(to, func(t *testing.T) {
			srv := redirector(to)
			defer srv.Close()
			_, err := get(t, c, srv.URL)
			require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
		})
	}
}

func TestRedirectToOtherSchemeIsRefused(t *testing.T) {
	srv := redirector("file:///etc/passwd")
	defer srv.Close()

	_, err := get(t, outbound.New(outbound.Options{TestOnlyAllowLoopback: true}), srv.URL)
	require.ErrorIs(t, err, outbound.ErrForbiddenScheme)
}

func TestOtherSchemesAreRefused(t *testing.T) {
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true})
	for _, u := range []string{"file:///etc/passwd", "ftp://127.0.0.1/", "gopher://127.0.0.1/"} {
		_, err := get(t, c, u)
		require.ErrorIs(t, err, outbound.ErrForbiddenScheme, u)
	}
}

func TestRedirectsAreBounded(t *testing.T) {
	var hits atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	}))
	defer srv.Close()

	_, err := get(t, outbound.New(outbound.Options{TestOnlyAllowLoopback: true, MaxRedirects: 3}), srv.URL)
	require.ErrorIs(t, err, outbound.ErrTooManyRedirects)
	require.EqualValues(t, 4, hits.Load(), "the first request and 3 redirects")
}

func TestRedirectWithinLimitIsFollowed(t *testing.T) {
	final := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "final")
	}))
	defer final.Close()
	srv := redirector(final.URL)
	defer srv.Close()

	body, err := get(t, outbound.New(outbound.Options{TestOnlyAllowLoopback: true}), srv.URL)
	require.NoError(t, err)
	require.Equal(t, "final", string(body))
}

func TestHTTPS(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the http server must never be reached")
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/downgrade" {
			http.Redirect(w, r, plain.URL, http.StatusFound)
			return
		}
		fmt.Fprint(w, "secure")
	}))
	defer secure.Close()
	roots := secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	live := outbound.New(outbound.Options{RequireHTTPS: true, RootCAs: roots, TestOnlyAllowLoopback: true})

	t.Run("https is fetched", func(t *testing.T) {
		body, err := get(t, live, secure.URL)
		require.NoError(t, err)
		require.Equal(t, "secure", string(body))
	})
	t.Run("http is refused when https is required", func(t *testing.T) {
		_, err := get(t, live, plain.URL)
		require.ErrorIs(t, err, outbound.ErrForbiddenScheme)
	})
	t.Run("a redirect from https to http is refused", func(t *testing.T) {
		_, err := get(t, live, secure.URL+"/downgrade")
		require.ErrorIs(t, err, outbound.ErrInsecureRedirect)
	})
	t.Run("even when https is not required", func(t *testing.T) {
		c := outbound.New(outbound.Options{RootCAs: roots, TestOnlyAllowLoopback: true})
		_, err := get(t, c, secure.URL+"/downgrade")
		require.ErrorIs(t, err, outbound.ErrInsecureRedirect)
	})
	t.Run("an untrusted certificate is refused", func(t *testing.T) {
		c := outbound.New(outbound.Options{RequireHTTPS: true, TestOnlyAllowLoopback: true})
		_, err := get(t, c, secure.URL)
		var certErr *tls.CertificateVerificationError
		require.ErrorAs(t, err, &certErr)
	})
}

func TestResponseSizeIsBounded(t *testing.T) {
	const limit = 64 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := limit
		if r.URL.Path == "/over" {
			n++
		}
		w.Write([]byte(strings.Repeat("x", n)))
	}))
	defer srv.Close()
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true, MaxResponseBytes: limit})

	body, err := get(t, c, srv.URL+"/at")
	require.NoError(t, err)
	require.Len(t, body, limit, "a body exactly at the limit is read whole")

	_, err = get(t, c, srv.URL+"/over")
	require.ErrorIs(t, err, outbound.ErrResponseTooLarge, "one byte over fails, it is not silently truncated")
}

func TestSlowServerTimesOut(t *testing.T) {
	slowHeaders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer slowHeaders.Close()
	slowBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer slowBody.Close()
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: 200 * time.Millisecond})

	for _, url := range []string{slowHeaders.URL, slowBody.URL} {
		_, err := get(t, c, url)
		require.ErrorIs(t, err, context.DeadlineExceeded, url)
		require.False(t, errors.Is(err, outbound.ErrForbiddenAddress))
	}
}

// A proxy dials the target itself, so the dial-time check would only see the
// proxy's address: the client must ignore HTTP_PROXY and friends. net/http
// reads the proxy variables once per process, so they are set for the whole
// run, before any request, and every test runs under them.
var proxyHits atomic.Int32

func TestMain(m *testing.M) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxyHits.Add(1)
		fmt.Fprint(w, "via proxy")
	}))
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		os.Setenv(k, proxy.URL)
	}
	code := m.Run()
	proxy.Close()
	os.Exit(code)
}

func TestProxyFromEnvironmentIsIgnored(t *testing.T) {
	_, err := get(t, outbound.New(outbound.Options{TestOnlyAllowLoopback: true}), "http://10.0.0.1/")
	require.ErrorIs(t, err, outbound.ErrForbiddenAddress)
	require.Zero(t, proxyHits.Load())
}
