package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/outbound"
)

// Reason codes of the download (docs/gate.md).
const (
	// ReasonDownloadFailed: download_url could not be fetched: a 4xx answer
	// or an address the server refuses (definitive), or a 5xx answer, a
	// timeout or a connection failure (transient, retried).
	ReasonDownloadFailed = "gate_download_failed"
	// ReasonPackageTooLarge: the download is larger than the configured
	// limit (pkgread uses the same code for its own bounds).
	ReasonPackageTooLarge = apperr.GatePackageTooLarge
)

// Download limits used when the HTTPFetcher field is zero.
const (
	DefaultMaxDownloadBytes = 1 << 30 // 1 GiB
	DefaultDownloadTimeout  = 10 * time.Minute
	DefaultMaxRedirects     = 5
)

// HTTPFetcher downloads an app's package over HTTP(S) with the SSRF-safe
// client (server/outbound): the destination is checked at dial time on
// every connection and every redirect, so download_url can reach no
// loopback, private, link-local or metadata address. The body streams to a
// temporary file while it is hashed; nothing is held in memory.
type HTTPFetcher struct {
	// Options are the outbound client's; Timeout, MaxResponseBytes and
	// MaxRedirects are overridden from the fields below. RequireHTTPS is
	// live mode's; TestOnlyAllowLoopback is for tests only.
	Options outbound.Options
	// MaxBytes bounds the download (0: DefaultMaxDownloadBytes).
	MaxBytes int64
	// Timeout bounds the whole download, redirects and body included
	// (0: DefaultDownloadTimeout).
	Timeout time.Duration
	// MaxRedirects bounds the redirect chain (0: DefaultMaxRedirects).
	MaxRedirects int
	// Dir is where temporary files go ("" : os.TempDir()).
	Dir string

	client *http.Client
}

// NewHTTPFetcher returns a fetcher for f's settings.
func NewHTTPFetcher(f HTTPFetcher) *HTTPFetcher {
	if f.MaxBytes <= 0 {
		f.MaxBytes = DefaultMaxDownloadBytes
	}
	if f.Timeout <= 0 {
		f.Timeout = DefaultDownloadTimeout
	}
	if f.MaxRedirects <= 0 {
		f.MaxRedirects = DefaultMaxRedirects
	}
	o := f.Options
	o.Timeout, o.MaxResponseBytes, o.MaxRedirects = f.Timeout, f.MaxBytes, f.MaxRedirects
	f.client = outbound.New(o)
	return &f
}

// Fetch downloads r.URL. Errors are *CheckError: ReasonDownloadFailed
// (Transient for 5xx, 408, 429, timeouts and connection failures) or
// ReasonPackageTooLarge.
func (f *HTTPFetcher) Fetch(ctx context.Context, r FetchRequest) (*Download, error) {
	if f.client == nil {
		return nil, errors.New("gate: HTTPFetcher used without NewHTTPFetcher")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, &CheckError{Reason: ReasonDownloadFailed, Err: err}
	}
	req.Header.Set("Accept", "*/*")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, &CheckError{Reason: ReasonDownloadFailed, Transient: transientFetch(err), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// 5xx, 408 and 429 may pass later; any other answer (404, 403, a
		// redirect beyond the limit's last hop, 204) will not by itself.
		transient := resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests
		return nil, &CheckError{Reason: ReasonDownloadFailed, Transient: transient,
			Err: fmt.Errorf("GET %s answered %s", resp.Request.URL.Redacted(), resp.Status)}
	}
	if resp.ContentLength > f.MaxBytes {
		return nil, &CheckError{Reason: ReasonPackageTooLarge, Err: fmt.Errorf("the download declares %d bytes, more than the limit of %d", resp.ContentLength, f.MaxBytes)}
	}

	tmp, err := os.CreateTemp(f.Dir, "xpromo-download-*")
	if err != nil {
		return nil, fmt.Errorf("gate: creating the download's temporary file: %w", err)
	}
	d := &Download{URL: r.URL, FinalURL: resp.Request.URL.String(), Path: tmp.Name()}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gate: writing the download: %w", cerr)
	}
	if err != nil {
		d.Close()
		switch {
		case errors.Is(err, outbound.ErrResponseTooLarge):
			return nil, &CheckError{Reason: ReasonPackageTooLarge, Err: fmt.Errorf("the download is larger than %d bytes", f.MaxBytes)}
		case errors.Is(err, os.ErrClosed), isFileError(err):
			return nil, err // our disk, not the app's server: a job error
		}
		return nil, &CheckError{Reason: ReasonDownloadFailed, Transient: true, Err: fmt.Errorf("reading the body: %w", err)}
	}
	d.Size, d.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return d, nil
}

// transientFetch tells a failure that may pass when retried (a timeout, a
// refused or reset connection, a DNS failure) from one that will not (an
// address or scheme the server refuses, too many redirects).
func transientFetch(err error) bool {
	switch {
	case errors.Is(err, outbound.ErrForbiddenAddress), errors.Is(err, outbound.ErrForbiddenScheme),
		errors.Is(err, outbound.ErrInsecureRedirect), errors.Is(err, outbound.ErrTooManyRedirects):
		return false
	}
	return true
}

func isFileError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}
