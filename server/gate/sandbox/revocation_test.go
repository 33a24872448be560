package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/gate/revocation"
)

// verifyAny runs the verifier the gate runs for the download's format.
func verifyAny(t *testing.T, s *Sandbox, d *gate.Download) (*codesign.Result, error) {
	t.Helper()
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	v := &codesign.Verifier{Roots: s.Roots(), Now: s.now}
	id, err := pkgread.Reader{}.Read(ctx, f, d.Size)
	if err != nil {
		t.Fatal(err)
	}
	switch format := id.Format; format {
	case pkgread.FormatZip:
		return v.VerifyApp(ctx, f, d.Size)
	case pkgread.FormatDMG:
		return v.VerifyDMGApp(ctx, f, d.Size)
	case pkgread.FormatPKG:
		return v.VerifyPKG(ctx, f, d.Size)
	case pkgread.FormatPE:
		return v.VerifyPE(ctx, f, d.Size)
	case pkgread.FormatMSI:
		return v.VerifyMSI(ctx, f, d.Size)
	case pkgread.FormatMSIX:
		return v.VerifyMSIX(ctx, f, d.Size)
	}
	t.Fatalf("format %s", id.Format)
	return nil, nil
}

// Every format the sandbox serves: the good package's signer is good (over
// OCSP for the macOS leaves, over the CRL for the Windows one, which names
// no responder), the revoked.* package's signature verifies but its
// signer is revoked (keyCompromise), so the rule fails it.
func TestRevocation(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	checker := s.Revocation()
	const id = "com.acme.hello-world"
	for _, c := range []struct {
		platform xpromo.Platform
		path     string
		source   string
	}{
		{xpromo.PlatformMac, "/Hello.zip", revocation.SourceOCSP},
		{xpromo.PlatformMac, "/Hello.dmg", revocation.SourceOCSP},
		{xpromo.PlatformMac, "/Hello.pkg", revocation.SourceOCSP},
		{xpromo.PlatformWin, "/Hello.exe", revocation.SourceCRL},
		{xpromo.PlatformWin, "/Hello.msi", revocation.SourceCRL},
		{xpromo.PlatformWin, "/Hello.msix", revocation.SourceCRL},
	} {
		t.Run(string(c.platform)+c.path, func(t *testing.T) {
			sig, err := verifyAny(t, s, fetch(t, f, c.platform, id, "https://example.com"+c.path))
			if err != nil {
				t.Fatal(err)
			}
			v := revocation.Decide(checker.Check(context.Background(), sig.Chain), sig.SigningTime, sig.Timestamped)
			if v.Fail || v.Status != revocation.Good || v.Decisive.Source != c.source {
				t.Fatalf("good: %+v", v)
			}
			want := ocspURL
			if c.source == revocation.SourceCRL {
				want = crlURL
			}
			if v.Decisive.URL != want {
				t.Fatalf("asked %s", v.Decisive.URL)
			}

			sig, err = verifyAny(t, s, fetch(t, f, c.platform, id, "https://revoked.example.com"+c.path))
			if err != nil {
				t.Fatalf("the revoked package's signature verifies: %v", err)
			}
			v = revocation.Decide(checker.Check(context.Background(), sig.Chain), sig.SigningTime, sig.Timestamped)
			if !v.Fail || v.Status != revocation.Revoked || v.Decisive.Reason != revocation.ReasonKeyCompromise ||
				v.Decisive.Source != c.source || v.Decisive.RevokedAt.Unix() != s.pki.revokedAt.Unix() {
				t.Fatalf("revoked: %+v", v)
			}
			if !strings.Contains(v.Detail, "keyCompromise") {
				t.Fatalf("detail %q", v.Detail)
			}
		})
	}
}
