package gate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/outbound"
)

func fetcher(t *testing.T, f gate.HTTPFetcher) (*gate.HTTPFetcher, string) {
	t.Helper()
	f.Dir = t.TempDir()
	return gate.NewHTTPFetcher(f), f.Dir
}

func loopback() outbound.Options { return outbound.Options{TestOnlyAllowLoopback: true} }

func wantCheckError(t *testing.T, err error, reason string, transient bool) *gate.CheckError {
	t.Helper()
	var ce *gate.CheckError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, reason, ce.Reason, ce.Error())
	assert.Equal(t, transient, ce.Transient, ce.Error())
	return ce
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no temporary file is left behind")
}

// A download streams to a temporary file with its SHA-256; redirects are
// followed and the final URL recorded; Close removes the file.
func TestFetchDownloads(t *testing.T) {
	body := strings.Repeat("package bytes ", 10000)
	mux := http.NewServeMux()
	mux.HandleFunc("/app.zip", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) })
	mux.Handle("/latest", http.RedirectHandler("/app.zip", http.StatusFound))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f, dir := fetcher(t, gate.HTTPFetcher{Options: loopback()})

	d, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/latest"})
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(body))
	assert.Equal(t, hex.EncodeToString(sum[:]), d.SHA256)
	assert.Equal(t, int64(len(body)), d.Size)
	assert.Equal(t, srv.URL+"/latest", d.URL)
	assert.Equal(t, srv.URL+"/app.zip", d.FinalURL)
	assert.False(t, d.Sandbox)
	got, err := os.ReadFile(d.Path)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
	require.NoError(t, d.Close())
	emptyDir(t, dir)
}

// 4xx is definitive, 5xx, 429 and 408 transient; the answer's body is never
// kept.
func TestFetchStatuses(t *testing.T) {
	for status, transient := range map[int]bool{404: false, 403: false, 410: false, 500: true, 503: true, 429: true, 408: true, 204: false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		f, dir := fetcher(t, gate.HTTPFetcher{Options: loopback()})
		_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/app.zip"})
		wantCheckError(t, err, gate.ReasonDownloadFailed, transient)
		emptyDir(t, dir)
		srv.Close()
	}
}

// Over the size limit: refused from Content-Length, and cut off when the
// body has none (chunked) or lies.
func TestFetchSizeLimit(t *testing.T) {
	big := strings.Repeat("x", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		w.Write([]byte(big))
	}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/declared", "/chunked"} {
		f, dir := fetcher(t, gate.HTTPFetcher{Options: loopback(), MaxBytes: 1000})
		_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + path})
		wantCheckError(t, err, gate.ReasonPackageTooLarge, false)
		emptyDir(t, dir)
	}
	// Exactly at the limit passes.
	f, _ := fetcher(t, gate.HTTPFetcher{Options: loopback(), MaxBytes: int64(len(big))})
	d, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/chunked"})
	require.NoError(t, err)
	d.Close()
}

// A server that never finishes runs into the time limit: transient.
func TestFetchTimeLimit(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("start"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	f, dir := fetcher(t, gate.HTTPFetcher{Options: loopback(), Timeout: 200 * time.Millisecond})
	_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/slow"})
	wantCheckError(t, err, gate.ReasonDownloadFailed, true)
	emptyDir(t, dir)
}

// Redirects are bounded; nobody listening is transient; live mode refuses
// http.
func TestFetchRedirectsAndSchemes(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+r.URL.Path+"x", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	f, _ := fetcher(t, gate.HTTPFetcher{Options: loopback(), MaxRedirects: 3})
	_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/a"})
	ce := wantCheckError(t, err, gate.ReasonDownloadFailed, false)
	assert.ErrorIs(t, ce, outbound.ErrTooManyRedirects)

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = f.Fetch(context.Background(), gate.FetchRequest{URL: closed.URL + "/app.zip"})
	wantCheckError(t, err, gate.ReasonDownloadFailed, true)

	live, _ := fetcher(t, gate.HTTPFetcher{Options: outbound.Options{RequireHTTPS: true, TestOnlyAllowLoopback: true}})
	_, err = live.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/app.zip"})
	ce = wantCheckError(t, err, gate.ReasonDownloadFailed, false)
	assert.ErrorIs(t, ce, outbound.ErrForbiddenScheme)
}

// The SSRF matrix of the webhooks issue holds for download_url: with the
// production options every internal destination is refused at dial time,
// definitively (gate_download_failed, not retried), and nothing reaches
// it; a host name resolving to loopback is refused after DNS; a redirect
// from a public-looking server to an internal address is refused.
func TestFetchSSRFMatrix(t *testing.T) {
	f, dir := fetcher(t, gate.HTTPFetcher{}) // as in production
	for _, u := range []string{
		"http://127.0.0.1/app.zip", "http://127.0.0.2/app.zip", "http://[::1]/app.zip", "http://localhost/app.zip",
		"http://[::ffff:127.0.0.1]/app.zip", "http://10.0.0.1/app.zip", "http://172.16.0.1/app.zip", "http://192.168.1.1/app.zip",
		"http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/app.zip", "http://100.100.100.200/app.zip",
		"http://[fd00::1]/app.zip", "http://[fe80::1]/app.zip", "http://0.0.0.0/app.zip", "http://[::]/app.zip",
		"http://224.0.0.1/app.zip", "http://198.18.0.1/app.zip", "http://[64:ff9b::a9fe:a9fe]/app.zip", "http://[2002:a9fe:a9fe::1]/app.zip",
		"https://169.254.169.254/app.zip", "http://8.8.8.8:8080/app.zip", // only ports 80 and 443
	} {
		t.Run(u, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: u})
			ce := wantCheckError(t, err, gate.ReasonDownloadFailed, false)
			assert.ErrorIs(t, ce, outbound.ErrForbiddenAddress)
		})
	}
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/app.zip", "gopher://example.com/"} {
		_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: u})
		ce := wantCheckError(t, err, gate.ReasonDownloadFailed, false)
		assert.True(t, errors.Is(ce, outbound.ErrForbiddenScheme), u)
	}
	emptyDir(t, dir)

	// A redirect to an internal address: the test server is reachable
	// (loopback allowed for the test), its redirect target is not.
	tf, _ := fetcher(t, gate.HTTPFetcher{Options: loopback()})
	for _, to := range []string{"http://10.0.0.1/app.zip", "http://169.254.169.254/latest/meta-data/", "http://[fd00::1]/app.zip", "http://127.0.0.2/app.zip"} {
		srv := httptest.NewServer(http.RedirectHandler(to, http.StatusFound))
		_, err := tf.Fetch(context.Background(), gate.FetchRequest{URL: srv.URL + "/app.zip"})
		ce := wantCheckError(t, err, gate.ReasonDownloadFailed, false)
		assert.ErrorIs(t, ce, outbound.ErrForbiddenAddress, to)
		srv.Close()
	}
}
