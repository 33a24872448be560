package gate_test

import (
	"crypto/x509"
	"math/big"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/gate/revocation"
	"github.com/xpromo/xpromo/server/outbound"
)

// revocationPKI is the test root's revocation service on a local HTTP
// server (the project's Responder: real OCSP and CRL bytes signed by the
// root's key) and, for each signer shape, a good leaf and a revoked one
// (keyCompromise) naming it: the macOS leaves an OCSP responder and a CRL,
// the Authenticode ones only a CRL.
type revocationPKI struct {
	devID, installer, pe [2]*fixture.Cert // good, revoked
}

var revPKI = sync.OnceValue(func() *revocationPKI {
	root := gatetest.Certs().Root
	var revoked []*big.Int
	var mu sync.Mutex
	resp := &revocation.Responder{Issuer: root.Cert, Key: root.Key,
		Known: func(*big.Int) bool { return true },
		Revoked: func(s *big.Int) (time.Time, int, bool) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range revoked {
				if r.Cmp(s) == 0 {
					return time.Now().Add(-time.Minute).UTC().Truncate(time.Second), revocation.ReasonKeyCompromise, true
				}
			}
			return time.Time{}, 0, false
		},
		Serials: func() []*big.Int { mu.Lock(); defer mu.Unlock(); return append([]*big.Int(nil), revoked...) },
	}
	srv := httptest.NewServer(resp) // lives as long as the test process
	ocspURL, crlURL := []string{srv.URL + "/ocsp"}, []string{srv.URL + "/root.crl"}
	p := &revocationPKI{}
	for i := range 2 {
		p.devID[i] = root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Example Ltd (TEAM123456)", Organization: "Example Ltd",
			OrgUnit: "TEAM123456", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true, OCSPServer: ocspURL, CRLDistributionPoints: crlURL})
		p.installer[i] = root.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: Example Ltd (TEAM123456)", Organization: "Example Ltd",
			OrgUnit: "TEAM123456", DeveloperIDInstaller: true, OCSPServer: ocspURL, CRLDistributionPoints: crlURL})
		p.pe[i] = root.Issue(fixture.CertOptions{CommonName: "Example Publisher", Organization: "Example Ltd",
			EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, CRLDistributionPoints: crlURL})
	}
	revoked = []*big.Int{p.devID[1].Cert.SerialNumber, p.installer[1].Cert.SerialNumber, p.pe[1].Cert.SerialNumber}
	return p
})

// Every format: signed by a good leaf, the gate approves with evidence
// saying so; signed by a revoked one, it rejects with
// gate_signature_revoked (the signature itself verifies).
func TestGateRevocation(t *testing.T) {
	p := revPKI()
	formats := []struct {
		name, platform, bundleID, source string
		build                            func(t *testing.T, signer int) []byte
	}{
		{"zipped app", "mac", "com.snip.app", "ocsp", func(t *testing.T, i int) []byte {
			return gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.devID[i], Notarized: true})
		}},
		{"dmg", "mac", "com.snip.app", "ocsp", func(t *testing.T, i int) []byte {
			return gatetest.DMG("com.snip.app", gatetest.AppOptions{Signer: p.devID[i], Notarized: true})
		}},
		{"pkg", "mac", "com.snip.pkg", "ocsp", func(t *testing.T, i int) []byte {
			return pkgread.StapleXAR(fixture.SignPKG(componentPKG("com.snip.pkg"), p.installer[i]), []byte("s8ChAAAA ticket"))
		}},
		{"exe", "win", "com.snip.win", "crl", func(t *testing.T, i int) []byte { return gatetest.PE(t, "com.snip.win", p.pe[i]) }},
		{"msi", "win", "com.snip.win", "crl", func(t *testing.T, i int) []byte { return gatetest.SignedMSI(t, "com.snip.win", p.pe[i]) }},
		{"msix", "win", "com.snip.msix", "crl", func(t *testing.T, i int) []byte { return signedMSIX("com.snip.msix", p.pe[i]) }},
		{"zip around an msi", "win", "com.snip.win", "crl", func(t *testing.T, i int) []byte {
			return fixture.Zip(fixture.File{Name: "Snip 1.0/Snip.msi", Data: gatetest.SignedMSI(t, "com.snip.win", p.pe[i])})
		}},
	}
	sandboxWorlds(t, func(t *testing.T, w *world) {
		w.gate.Revocation = &revocation.Client{Now: w.clock.Now,
			HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true, MaxResponseBytes: revocation.MaxCRLBytes + 1})}
		for _, f := range formats {
			t.Run(f.name, func(t *testing.T) {
				w.t = t
				good, revoked := f.build(t, 0), f.build(t, 1)

				a := w.register(appSpec{platform: f.platform, bundleID: f.bundleID, pkg: good})
				w.run()
				m, ok := w.inbox.Last(a.ContactEmail)
				require.True(t, ok)
				_, err := w.gate.VerifyCode(ctx, a.ID, m.Code)
				require.NoError(t, err)
				w.run()
				sc := w.score(a.ID)
				assert.Equal(t, xpromo.AppStatusApproved, sc.Status, sc.Reasons)
				sig := w.lastResult(a.ID).Evidence.Signature
				require.NotNil(t, sig)
				assert.Equal(t, "good", sig.RevocationStatus)
				assert.Equal(t, f.source, sig.RevocationSource)
				assert.NotEmpty(t, sig.RevocationURL)
				assert.Nil(t, sig.RevokedAt)

				a = w.register(appSpec{platform: f.platform, bundleID: f.bundleID, pkg: revoked})
				w.run()
				sc = w.score(a.ID)
				assert.Equal(t, xpromo.AppStatusRejected, sc.Status)
				require.NotEmpty(t, sc.Reasons)
				assert.Equal(t, gate.ReasonSignatureRevoked, sc.Reasons[0], sc.Reasons)
				assert.False(t, sc.Gate.Signed)
				assert.True(t, sc.Gate.BundleMatch)
				res := w.lastResult(a.ID)
				sig = res.Evidence.Signature
				assert.Equal(t, "revoked", sig.RevocationStatus)
				assert.Equal(t, f.source, sig.RevocationSource)
				assert.Equal(t, "keyCompromise", sig.RevocationReason)
				require.NotNil(t, sig.RevokedAt)
				assert.Contains(t, res.Evidence.Details[gate.ReasonSignatureRevoked], "keyCompromise")
			})
		}
	})
}

// An unreachable responder soft-fails: the app passes, the evidence says
// the status is unknown and why.
func TestGateRevocationSoftFail(t *testing.T) {
	p := revPKI()
	sandboxWorlds(t, func(t *testing.T, w *world) {
		// server/outbound without the test-only loopback: the local
		// responder is refused, as an unreachable one would be.
		w.gate.Revocation = &revocation.Client{Now: w.clock.Now, HTTP: outbound.New(outbound.Options{})}
		a := w.register(appSpec{pkg: gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.devID[1], Notarized: true})})
		w.run()
		sc := w.score(a.ID)
		assert.True(t, sc.Gate.Signed, sc.Reasons)
		sig := w.lastResult(a.ID).Evidence.Signature
		assert.Equal(t, "unknown", sig.RevocationStatus)
		assert.Contains(t, sig.RevocationDetail, "soft-fail")
	})
}

// gate inspect shows the revocation outcome.
func TestInspectRevocation(t *testing.T) {
	p := revPKI()
	checker := &revocation.Client{HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true, MaxResponseBytes: revocation.MaxCRLBytes + 1})}
	ins := inspectFile(t, gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.devID[1], Notarized: true}),
		gate.InspectOptions{Roots: gatetest.Certs().Roots(), Revocation: checker})
	assert.False(t, ins.Pass)
	assert.Equal(t, []string{gate.ReasonSignatureRevoked}, ins.Checks[1].Reasons)
	assert.Equal(t, "revoked", ins.Signature.RevocationStatus)
	ins = inspectFile(t, gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.devID[0], Notarized: true}),
		gate.InspectOptions{Roots: gatetest.Certs().Roots(), Revocation: checker})
	assert.True(t, ins.Pass, ins.Details)
	assert.Equal(t, "good", ins.Signature.RevocationStatus)
	ins = inspectFile(t, gatetest.App("com.snip.app", gatetest.AppOptions{Signer: p.devID[1], Notarized: true}),
		gate.InspectOptions{Roots: gatetest.Certs().Roots()})
	assert.True(t, ins.Pass, "checking off")
	assert.Equal(t, "unchecked", ins.Signature.RevocationStatus)
}
