package gate_test

import (
	"archive/zip"
	"bytes"
	"crypto/x509"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// A flat .pkg signed by a Developer ID Installer certificate of the
// configured root, stapled, declaring the bundle id in its PackageInfo.

var pkgSigners = sync.OnceValues(func() (installer, application *fixture.Cert) {
	p := gatetest.Certs()
	return p.Root.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: Example Ltd (TEAM123456)", Organization: "Example Ltd",
		OrgUnit: "TEAM123456", DeveloperIDInstaller: true}), p.DevID
})

func componentPKG(bundleID string, extra ...fixture.XARFile) []byte {
	return fixture.PKG(append([]fixture.XARFile{
		{Name: "Bom", Data: []byte("BOMStore")},
		{Name: "Payload", Data: []byte("the app's files")},
		{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="` + bundleID + `.pkg" version="1.0"><bundle path="./Snip.app" id="` + bundleID + `"/></pkg-info>`)},
	}, extra...)...)
}

func signedPKG(bundleID string) []byte {
	installer, _ := pkgSigners()
	return pkgread.StapleXAR(fixture.SignPKG(componentPKG(bundleID), installer), []byte("s8ChAAAA ticket"))
}

func TestGateApprovesASignedPKG(t *testing.T) {
	for _, container := range []string{"pkg", "zip around a pkg"} {
		t.Run(container, func(t *testing.T) {
			sandboxWorlds(t, func(t *testing.T, w *world) {
				pkg := signedPKG("com.snip.pkg")
				if container != "pkg" {
					pkg = fixture.Zip(fixture.File{Name: "Snip 1.0/Snip.pkg", Data: pkg}, fixture.File{Name: "Snip 1.0/README.txt", Data: []byte("open Snip.pkg")})
				}
				a := w.register(appSpec{bundleID: "com.snip.pkg", pkg: pkg})
				w.run()
				m, ok := w.inbox.Last(a.ContactEmail)
				require.True(t, ok)
				_, err := w.gate.VerifyCode(ctx, a.ID, m.Code)
				require.NoError(t, err)
				w.run()
				sc := w.score(a.ID)
				assert.Equal(t, xpromo.AppStatusApproved, sc.Status, sc.Reasons)
				res := w.lastResult(a.ID)
				assert.Equal(t, "pkg", res.Evidence.Package.Format)
				assert.Equal(t, []string{"com.snip.pkg", "com.snip.pkg.pkg"}, res.Evidence.Package.BundleIDs)
				assert.Equal(t, "pkg", res.Evidence.Signature.Kind)
				assert.Equal(t, "TEAM123456", res.Evidence.Signature.TeamID)
				assert.True(t, res.Evidence.Signature.Notarized)
				assert.Equal(t, "stapled-trailer", res.Evidence.Signature.NotarySource)
				if container != "pkg" {
					assert.Equal(t, "zip:Snip 1.0/Snip.pkg", res.Evidence.Package.Container)
				}
			})
		})
	}
}

func TestGatePKGRejections(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		installer, application := pkgSigners()
		p := gatetest.Certs()
		tampered := signedPKG("com.snip.pkg")
		x, err := pkgread.ReadXARSignature(bytes.NewReader(tampered), int64(len(tampered)), pkgread.Limits{})
		require.NoError(t, err)
		tampered[x.Files[1].Offset+x.Files[1].Length-1] ^= 1 // the Payload's last byte
		okGate := xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}
		cases := []struct {
			name, reason string
			pkg          []byte
			gate         xpromo.Gate
		}{
			{"unsigned", "gate_unsigned_binary", componentPKG("com.snip.pkg"), okGate},
			{"not stapled", "gate_not_notarized", fixture.SignPKG(componentPKG("com.snip.pkg"), installer), okGate},
			{"signed by a Developer ID Application certificate", "gate_untrusted_signer",
				pkgread.StapleXAR(fixture.SignPKG(componentPKG("com.snip.pkg"), application), []byte("t")), okGate},
			{"signed under an unknown root", "gate_untrusted_signer", pkgread.StapleXAR(fixture.SignPKG(componentPKG("com.snip.pkg"),
				p.Other.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: Mallory", DeveloperIDInstaller: true})), []byte("t")), okGate},
			{"changed after signing", "gate_signature_invalid", tampered, okGate},
			{"another bundle", "gate_bundle_mismatch", signedPKG("com.other.pkg"), xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true}},
			{"a TOC bomb", apperr.GatePackageTooLarge, componentPKG("com.snip.pkg", fixture.XARFile{Name: "x",
				Files: []fixture.XARFile{{Name: strings.Repeat("n", 17<<20)}}}), xpromo.Gate{MalwareClean: true, DomainAgeOK: true}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w.t = t
				w.rejected(appSpec{bundleID: "com.snip.pkg", pkg: c.pkg}, c.reason, c.gate)
			})
		}
	})
}

// gate inspect reads and verifies a .pkg as a gate job does.
func TestInspectPKG(t *testing.T) {
	roots := gatetest.Certs().Root.Pool()
	ins := inspectFile(t, signedPKG("com.snip.pkg"), gate.InspectOptions{BundleID: "com.snip.pkg", Roots: roots})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "pkg", ins.Package.Format)
	assert.Equal(t, "stapled-trailer", ins.Signature.NotarySource)
	ins = inspectFile(t, componentPKG("com.snip.pkg"), gate.InspectOptions{BundleID: "com.snip.pkg", Roots: roots})
	assert.Equal(t, []string{"gate_unsigned_binary"}, ins.Checks[1].Reasons)
	ins = inspectFile(t, signedMSIX("com.snip.msix", gatetest.Certs().PE), gate.InspectOptions{Roots: roots})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "appx", ins.Signature.Kind)
}

func signedMSIX(name string, signer *fixture.Cert) []byte {
	return fixture.SignMSIX(fixture.MSIX(fixture.AppxManifest(name, "CN=placeholder", "1.0.0.0"),
		fixture.File{Name: "Snip.exe", Data: fixture.PE(nil)}), signer)
}

func TestGateApprovesASignedMSIX(t *testing.T) {
	for _, container := range []string{"msix", "zip around an msix"} {
		t.Run(container, func(t *testing.T) {
			sandboxWorlds(t, func(t *testing.T, w *world) {
				pkg := signedMSIX("com.snip.msix", gatetest.Certs().PE)
				if container != "msix" {
					pkg = fixture.Zip(fixture.File{Name: "Snip.msix", Data: pkg})
				}
				a := w.register(appSpec{platform: "win", bundleID: "com.snip.msix", pkg: pkg})
				w.run()
				m, ok := w.inbox.Last(a.ContactEmail)
				require.True(t, ok)
				_, err := w.gate.VerifyCode(ctx, a.ID, m.Code)
				require.NoError(t, err)
				w.run()
				sc := w.score(a.ID)
				assert.Equal(t, xpromo.AppStatusApproved, sc.Status, sc.Reasons)
				res := w.lastResult(a.ID)
				assert.Equal(t, "msix", res.Evidence.Package.Format)
				assert.Equal(t, "appx", res.Evidence.Signature.Kind)
				assert.Equal(t, res.Evidence.Package.Publisher, res.Evidence.Signature.DeclaredPublisher)
				assert.Contains(t, res.Evidence.Signature.DeclaredPublisher, "O=Example Ltd")
			})
		})
	}
}

func TestGateMSIXRejections(t *testing.T) {
	sandboxWorlds(t, func(t *testing.T, w *world) {
		p := gatetest.Certs()
		good := signedMSIX("com.snip.msix", p.PE)
		zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		require.NoError(t, err)
		tampered := bytes.Clone(good)
		for _, f := range zr.File {
			if f.Name == "Snip.exe" {
				off, err := f.DataOffset()
				require.NoError(t, err)
				tampered[off+10] ^= 1
			}
		}
		okGate := xpromo.Gate{MalwareClean: true, DomainAgeOK: true, BundleMatch: true}
		cases := []struct {
			name, reason string
			pkg          []byte
			gate         xpromo.Gate
		}{
			{"unsigned", "gate_unsigned_binary", fixture.MSIX(fixture.AppxManifest("com.snip.msix", "CN=x", "1.0.0.0")), okGate},
			{"signed under an unknown root", "gate_untrusted_signer", signedMSIX("com.snip.msix",
				p.Other.Issue(fixture.CertOptions{CommonName: "Example Publisher", Organization: "Example Ltd", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})), okGate},
			{"changed after signing", "gate_signature_invalid", tampered, okGate},
			{"another bundle", "gate_bundle_mismatch", signedMSIX("com.other.msix", p.PE), xpromo.Gate{Signed: true, MalwareClean: true, DomainAgeOK: true}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w.t = t
				w.rejected(appSpec{platform: "win", bundleID: "com.snip.msix", pkg: c.pkg}, c.reason, c.gate)
			})
		}
	})
}

// An MSIX binds when its manifest Publisher is exactly its signer's
// subject (Windows refuses to install it otherwise).
func TestBindSignerMSIX(t *testing.T) {
	sig := &codesign.Result{Kind: "appx", Publisher: "CN=Example Ltd, O=Example Ltd, C=GB"}
	assert.Empty(t, gate.BindSigner(sig, &pkgread.Identity{Format: pkgread.FormatMSIX, Publisher: "CN=Example Ltd, O=Example Ltd, C=GB"}, "x"))
	assert.Contains(t, gate.BindSigner(sig, &pkgread.Identity{Format: pkgread.FormatMSIX, Publisher: "CN=Mallory"}, "x"), "CN=Mallory")
}
