// Package gate is the vetting gate: it runs the five checks of an app's
// Score.gate (signed, malware_clean, domain_age_ok, bundle_match,
// contact_verified) as a background job and moves the app from pending to
// approved or rejected (docs/gate.md).
//
// Each check reaches its counterpart through one of the interfaces below.
// The real implementations live in the check libraries (server/gate/rdap,
// server/gate/clamav, server/gate/contact, and this package's HTTP fetcher);
// in test mode, server/gate/sandbox wraps them so that reserved names
// (RFC 2606) are answered by built-in counterparts, while every other name
// still goes through the real ones. Everything above these interfaces —
// reading the package, verifying its signature, the outcome rules — is the
// same code for both.
package gate

import (
	"context"
	"os"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/rdap"
)

// FetchRequest is what the gate asks a Fetcher for: the app's download.
type FetchRequest struct {
	URL string // the app's download_url
	// Platform and BundleID are what the app declared. A real fetcher
	// ignores them; the sandbox builds its package for them.
	Platform xpromo.Platform
	BundleID string
}

// Download is a fetched package, held in a temporary file until Close.
type Download struct {
	URL      string // as requested
	FinalURL string // after redirects
	Path     string // the temporary file holding the body
	Size     int64
	SHA256   string // hex
	// Sandbox is true when the test-mode sandbox served the download: its
	// signature is verified against the sandbox's own root (Service.SandboxRoots)
	// and never against the configured code-signing roots, and vice versa.
	Sandbox bool
}

// Open opens the downloaded file for reading.
func (d *Download) Open() (*os.File, error) { return os.Open(d.Path) }

// Close removes the temporary file.
func (d *Download) Close() error {
	if d == nil || d.Path == "" {
		return nil
	}
	err := os.Remove(d.Path)
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// Fetcher downloads an app's package. Errors are *CheckError with reason
// gate_download_failed (Transient for timeouts, connection failures and 5xx
// answers) or gate_package_too_large.
type Fetcher interface {
	Fetch(ctx context.Context, r FetchRequest) (*Download, error)
}

// Scanner scans a download for malware. *clamav.Client is the real one
// behind ClamdScanner; an error means the scan did not happen (transient).
type Scanner interface {
	Scan(ctx context.Context, d *Download) (clamav.Result, error)
}

// DomainChecker measures the age of the app's registrable domain.
// *rdap.Client satisfies it.
type DomainChecker interface {
	Check(ctx context.Context, hostOrURL string) rdap.Result
}

// CheckError is a check that could not pass, with its stable reason code.
type CheckError struct {
	Reason    string // a gate_* code (docs/errors.md)
	Transient bool   // may pass when retried later (the job retries it)
	Err       error
}

func (e *CheckError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Reason + ": " + e.Err.Error()
}

func (e *CheckError) Unwrap() error { return e.Err }
