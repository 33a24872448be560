package codesign

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// The PE fixtures are signed by the real tool publishers use on Linux,
// osslsigncode, with certificates made here. CI installs it (.ci/run).
func needOsslsigncode(t *testing.T) {
	t.Helper()
	testtool.Command(t, "osslsigncode", "Debian: apt-get install osslsigncode; the Authenticode tests sign their fixtures with it")
}

type pki struct {
	root, leaf, wrongEKU, expiring, tsa *fixture.Cert
	other                               *fixture.Cert // a root nobody configured
}

var testPKI = sync1(func() *pki {
	root := fixture.NewRoot("Test Code Signing Root")
	return &pki{
		root:     root,
		leaf:     root.Issue(fixture.CertOptions{CommonName: "Test Publisher", Organization: "Example Ltd", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}),
		wrongEKU: root.Issue(fixture.CertOptions{CommonName: "TLS Server", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
		expiring: root.Issue(fixture.CertOptions{CommonName: "Short Lived Publisher", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
			NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(time.Hour)}),
		tsa:   root.Issue(fixture.CertOptions{CommonName: "Test TSA", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}, CriticalEKU: true}),
		other: fixture.NewRoot("Somebody Else's Root"),
	}
})

// sign runs osslsigncode on exe and returns the signed bytes.
func sign(t *testing.T, exe []byte, signer *fixture.Cert, args ...string) []byte {
	t.Helper()
	needOsslsigncode(t)
	dir := t.TempDir()
	certs, key := signer.WritePEM(dir)
	in, out := filepath.Join(dir, "in.exe"), filepath.Join(dir, "out.exe")
	if err := os.WriteFile(in, exe, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("osslsigncode", append([]string{"sign", "-certs", certs, "-key", key, "-n", "Hello App", "-in", in, "-out", out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("osslsigncode sign: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tsaArgs(t *testing.T) []string {
	dir := t.TempDir()
	certs, key := testPKI().tsa.WritePEM(dir)
	return []string{"-TSA-certs", certs, "-TSA-key", key}
}

func helloExe() []byte {
	return fixture.PE(map[string]string{"InternalName": "com.example.hello", "ProductName": "Hello App", "CompanyName": "Example Ltd"})
}

func verifyPE(t *testing.T, v *Verifier, b []byte) (*Result, error) {
	t.Helper()
	return v.VerifyPE(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func wantReason(t *testing.T, err error, want Reason) {
	t.Helper()
	if got := ReasonOf(err); got != want {
		t.Fatalf("reason = %q (%v), want %q", got, err, want)
	}
}

func TestAuthenticodeSigned(t *testing.T) {
	p := testPKI()
	signed := sign(t, helloExe(), p.leaf, "-h", "sha256")
	// osslsigncode's own verifier agrees the fixture is good.
	dir := t.TempDir()
	exe, ca := filepath.Join(dir, "s.exe"), filepath.Join(dir, "ca.pem")
	os.WriteFile(exe, signed, 0o600)
	root := &fixture.Cert{Cert: p.root.Cert, Key: p.root.Key}
	caCerts, _ := root.WritePEM(dir)
	os.Rename(caCerts, ca)
	if b, err := exec.Command("osslsigncode", "verify", "-in", exe, "-CAfile", ca).CombinedOutput(); err != nil {
		t.Fatalf("osslsigncode verify: %v\n%s", err, b)
	}

	res, err := verifyPE(t, &Verifier{Roots: p.root.Pool()}, signed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "authenticode" || res.SignerCommonName != "Test Publisher" || res.SignerOrganization != "Example Ltd" ||
		res.DigestAlgorithm != "SHA-256" || res.Timestamped || len(res.Chain) != 2 {
		t.Fatalf("%+v", res)
	}
}

func TestAuthenticodeUnsigned(t *testing.T) {
	_, err := verifyPE(t, &Verifier{Roots: testPKI().root.Pool()}, helloExe())
	wantReason(t, err, ReasonUnsigned)
}

func TestAuthenticodeTampered(t *testing.T) {
	p := testPKI()
	signed := sign(t, helloExe(), p.leaf, "-h", "sha256")
	signed[0x200] ^= 0xff // the first byte of .text
	_, err := verifyPE(t, &Verifier{Roots: p.root.Pool()}, signed)
	wantReason(t, err, ReasonSignatureInvalid)
}

func TestAuthenticodeUntrustedSigner(t *testing.T) {
	p := testPKI()
	signed := sign(t, helloExe(), p.leaf, "-h", "sha256")
	_, err := verifyPE(t, &Verifier{Roots: p.other.Pool()}, signed)
	wantReason(t, err, ReasonUntrustedSigner)

	// A valid chain for the wrong purpose (a TLS certificate) is not a publisher.
	signed = sign(t, helloExe(), p.wrongEKU, "-h", "sha256")
	_, err = verifyPE(t, &Verifier{Roots: p.root.Pool()}, signed)
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestAuthenticodeExpiredSignerNeedsATimestamp(t *testing.T) {
	p := testPKI()
	later := func() time.Time { return p.expiring.Cert.NotAfter.Add(48 * time.Hour) }
	plain := sign(t, helloExe(), p.expiring, "-h", "sha256")
	_, err := verifyPE(t, &Verifier{Roots: p.root.Pool(), Now: later}, plain)
	wantReason(t, err, ReasonUntrustedSigner)

	stamped := sign(t, helloExe(), p.expiring, append([]string{"-h", "sha256"}, tsaArgs(t)...)...)
	res, err := verifyPE(t, &Verifier{Roots: p.root.Pool(), Now: later}, stamped)
	if err != nil {
		t.Fatalf("a timestamped signature outlives its certificate: %v", err)
	}
	if !res.Timestamped || res.SigningTime.After(p.expiring.Cert.NotAfter) {
		t.Fatalf("%+v", res)
	}
	// ... but only when the timestamp authority is trusted too.
	_, err = verifyPE(t, &Verifier{Roots: p.root.Pool(), TimestampRoots: p.other.Pool(), Now: later}, stamped)
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestAuthenticodeWeakDigest(t *testing.T) {
	p := testPKI()
	signed := sign(t, helloExe(), p.leaf, "-h", "sha1")
	_, err := verifyPE(t, &Verifier{Roots: p.root.Pool()}, signed)
	wantReason(t, err, ReasonSignatureInvalid)
	if !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("say why: %v", err)
	}
}

func TestAuthenticodeNotAPE(t *testing.T) {
	_, err := verifyPE(t, &Verifier{Roots: testPKI().root.Pool()}, []byte("PK\x03\x04 not an exe"))
	wantReason(t, err, ReasonBinaryUnreadable)
}
