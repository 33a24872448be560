package gate

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// InspectOptions configure Inspect.
type InspectOptions struct {
	// BundleID is the bundle_id the app registers; "" takes the package's
	// primary identifier (what it declares first), so the other checks
	// still run.
	BundleID string
	// Platform is the app's platform; "" takes the package's own.
	Platform xpromo.Platform
	// Roots are the code-signing roots, as the server's --gate-roots-file;
	// nil trusts nothing (every signature is gate_untrusted_signer).
	Roots *x509.CertPool
	// Notary looks notarisation tickets up online, as the server's
	// --gate-notary-url; nil: only a stapled ticket counts.
	Notary NotaryLookup
	// Revocation checks the signer's chain over OCSP and CRL, as the
	// server's --gate-revocation on; nil: not checked ("unchecked").
	Revocation RevocationChecker
	Now        func() time.Time
}

// Inspection is what the gate would record of a package: the checks the
// file alone decides (bundle_match and signed), by the same code a gate
// job runs on a download (Service.checkPackage).
type Inspection struct {
	File      string             `json:"file"`
	Size      int64              `json:"size"`
	SHA256    string             `json:"sha256"`
	BundleID  string             `json:"bundle_id"`
	Platform  xpromo.Platform    `json:"platform"`
	Package   *PackageEvidence   `json:"package,omitempty"`
	Signature *SignatureEvidence `json:"signature,omitempty"`
	Checks    []InspectedCheck   `json:"checks"`
	// Pass: every check passed; the gate would record both true.
	Pass bool `json:"pass"`
	// Details explains each reason code, as a gate result's evidence does.
	Details map[string]string `json:"details,omitempty"`
}

// InspectedCheck is one check's outcome.
type InspectedCheck struct {
	Check   string   `json:"check"` // "bundle_match", "signed"
	Passed  bool     `json:"passed"`
	Reasons []string `json:"reasons,omitempty"`
}

// Inspect reads the package at path with the gate's readers and verifiers.
// An error is a file that could not be opened or a cancelled context; a
// package that fails a check is an Inspection with Pass false.
func Inspect(ctx context.Context, path string, o InspectOptions) (*Inspection, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ins := &Inspection{File: path, Size: st.Size(), SHA256: hex.EncodeToString(h.Sum(nil)), BundleID: o.BundleID, Platform: o.Platform}
	if ins.BundleID == "" || ins.Platform == "" {
		// What the package declares stands in for what was not given.
		var ra io.ReaderAt = f
		size := st.Size()
		if n, _ := pkgread.Unwrap(ctx, f, size, pkgread.Limits{}, 0); n != nil {
			defer n.Close()
			ra, size = n.File, n.Size
		}
		id, _ := pkgread.Reader{}.Read(ctx, ra, size)
		if id != nil && ins.BundleID == "" && len(id.BundleIDs) > 0 {
			ins.BundleID = id.BundleIDs[0]
		}
		if ins.Platform == "" {
			ins.Platform = xpromo.PlatformMac
			if id != nil && id.Platform == pkgread.Windows {
				ins.Platform = xpromo.PlatformWin
			}
		}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s := &Service{Roots: o.Roots, Notary: o.Notary, Revocation: o.Revocation, Now: now}
	rep := &report{}
	if err := s.checkPackage(ctx, f, st.Size(), false, apps.App{BundleID: ins.BundleID, Platform: ins.Platform}, rep); err != nil {
		return nil, err
	}
	res := rep.result()
	ins.Package, ins.Signature, ins.Details = rep.evidence.Package, rep.evidence.Signature, res.Evidence.Details
	// checkPackage records at most one bundle_match failure, first; every
	// other failure is signed's.
	bm := InspectedCheck{Check: "bundle_match", Passed: rep.gate.BundleMatch}
	sg := InspectedCheck{Check: "signed", Passed: rep.gate.Signed}
	for i, f := range rep.failures {
		if i == 0 && !bm.Passed {
			bm.Reasons = []string{f.reason}
		} else {
			sg.Reasons = append(sg.Reasons, f.reason)
		}
	}
	ins.Checks = []InspectedCheck{bm, sg}
	ins.Pass = bm.Passed && sg.Passed
	return ins, nil
}
