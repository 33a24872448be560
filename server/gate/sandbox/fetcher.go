package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/clamav"
)

// Fetcher serves downloads from reserved hosts with a package built for the
// request's platform and bundle id (docs/gate.md, "Test mode"), and passes
// every other URL to next.
func (s *Sandbox) Fetcher(next gate.Fetcher) gate.Fetcher { return &fetcher{s: s, next: next} }

type fetcher struct {
	s    *Sandbox
	next gate.Fetcher
}

func (f *fetcher) Fetch(ctx context.Context, r gate.FetchRequest) (*gate.Download, error) {
	if !Reserved(r.URL) {
		if f.next == nil {
			return nil, &gate.CheckError{Reason: "gate_download_failed", Err: errors.New("no fetcher is configured")}
		}
		return f.next.Fetch(ctx, r)
	}
	if err := ctx.Err(); err != nil {
		return nil, &gate.CheckError{Reason: "gate_download_failed", Transient: true, Err: err}
	}
	variant := variantOf(r.URL)
	if variant == variantMissing {
		return nil, &gate.CheckError{Reason: "gate_download_failed", Err: fmt.Errorf("GET %s: 404 Not Found (sandbox: missing.*)", r.URL)}
	}
	format := formatOf(r.Platform, r.URL)
	body, err := f.s.pkgs.get(packageKey{r.Platform, r.BundleID, variant, format}, func() ([]byte, error) {
		return f.s.build(r.Platform, r.BundleID, variant, format)
	})
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "xpromo-sandbox-download-*")
	if err != nil {
		return nil, &gate.CheckError{Reason: "gate_download_failed", Transient: true, Err: err}
	}
	_, werr := tmp.Write(body)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return nil, &gate.CheckError{Reason: "gate_download_failed", Transient: true, Err: werr}
	}
	sum := sha256.Sum256(body)
	return &gate.Download{
		URL: r.URL, FinalURL: r.URL, Path: tmp.Name(),
		Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Sandbox: true,
	}, nil
}

// Scanner scans sandbox downloads with next when there is one (a real
// clamd finds the EICAR file too) and otherwise with a built-in matcher
// that knows exactly one signature, the EICAR test file, anywhere in the
// download. Other downloads go to next; without one the scan is
// gate_scanner_unavailable (transient).
func (s *Sandbox) Scanner(next gate.Scanner) gate.Scanner { return &scanner{next: next} }

type scanner struct{ next gate.Scanner }

// EicarSignature is the name the built-in matcher reports, as ClamAV names
// the EICAR test file.
const EicarSignature = "Eicar-Test-Signature"

func (sc *scanner) Scan(ctx context.Context, d *gate.Download) (clamav.Result, error) {
	if sc.next != nil {
		return sc.next.Scan(ctx, d)
	}
	if !d.Sandbox {
		return clamav.Result{}, &gate.CheckError{Reason: clamav.ReasonScannerUnavailable, Transient: true, Err: errors.New("no malware scanner (clamd) is configured")}
	}
	f, err := d.Open()
	if err != nil {
		return clamav.Result{}, err
	}
	defer f.Close()
	return matchEICAR(ctx, f)
}

// matchEICAR reads r in chunks, keeping an overlap of one signature
// length, and reports whether the EICAR test string occurs in it.
func matchEICAR(ctx context.Context, r io.Reader) (clamav.Result, error) {
	var res clamav.Result
	buf := make([]byte, 0, 64<<10+len(eicar))
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return clamav.Result{}, err
		}
		n, err := r.Read(chunk)
		res.Bytes += int64(n)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, eicar) {
			res.Infected, res.Signature = true, EicarSignature
			// The verdict is known; the byte count is what was read so far.
			return res, nil
		}
		if keep := len(eicar) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return clamav.Result{}, err
		}
	}
}
