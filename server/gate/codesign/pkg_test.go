package codesign

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sassoftware/relic/v7/lib/certloader"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// The .pkg fixtures are what productsign writes: a flat package with SHA-1
// checksums (fixture.PKG), signed with relic's xar signer (RSA + CMS) by a
// Developer ID Installer-shaped certificate made here, stapled with a
// ticket trailer as stapler appends it.

type pkgPKI struct {
	root, installer, application *fixture.Cert
}

var testPkgPKI = sync1(func() pkgPKI {
	root := fixture.NewRoot("Test Apple Root")
	return pkgPKI{
		root:        root,
		installer:   root.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: Example Ltd (TEAM123456)", Organization: "Example Ltd", OrgUnit: "TEAM123456", DeveloperIDInstaller: true}),
		application: root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Example Ltd (TEAM123456)", Organization: "Example Ltd", OrgUnit: "TEAM123456", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true}),
	}
})

var pkgTicket = []byte("s8ChAAAA test notarisation ticket")

func helloPKG() []byte {
	return fixture.PKG(
		fixture.XARFile{Name: "Bom", Data: []byte("BOMStore")},
		fixture.XARFile{Name: "Payload", Data: bytes.Repeat([]byte("payload "), 200)},
		fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="com.example.hello.pkg" version="1.2.3"><bundle path="./Hello.app" id="com.example.hello"/></pkg-info>`)},
	)
}

func verifyPKG(t *testing.T, v *Verifier, b []byte) (*Result, error) {
	t.Helper()
	return v.VerifyPKG(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func TestPKGSignedAndStapled(t *testing.T) {
	p := testPkgPKI()
	pkg := pkgread.StapleXAR(fixture.SignPKG(helloPKG(), p.installer), pkgTicket)
	res, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "pkg" || res.DigestAlgorithm != "SHA-1" || res.TeamID != "TEAM123456" || !res.Notarized ||
		res.NotarySource != "stapled-trailer" || res.SignerOrganization != "Example Ltd" || len(res.CDHashes) != 1 {
		t.Fatalf("%+v", res)
	}
	// The package still reads as a package, with its identity.
	id, err := pkgread.Reader{}.Read(context.Background(), bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil || id.BundleIDs[0] != "com.example.hello" {
		t.Fatalf("%+v %v", id, err)
	}
}

func TestPKGIndependentReader(t *testing.T) {
	testtool.Command(t, "7zz", "Debian: apt-get install 7zip; an independent xar reader for the .pkg fixtures")
	p := testPkgPKI()
	path := filepath.Join(t.TempDir(), "hello.pkg")
	os.WriteFile(path, fixture.SignPKG(helloPKG(), p.installer), 0o600)
	out, err := exec.Command("7zz", "l", "-tXar", path).CombinedOutput()
	if err != nil {
		t.Fatalf("7zz: %v\n%s", err, out)
	}
	for _, name := range []string{"PackageInfo", "Payload", "Bom"} {
		if !strings.Contains(string(out), name) {
			t.Fatalf("7zz does not list %s:\n%s", name, out)
		}
	}
}

func TestPKGNotStapled(t *testing.T) {
	p := testPkgPKI()
	res, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, fixture.SignPKG(helloPKG(), p.installer))
	wantReason(t, err, ReasonNotNotarized)
	if res == nil || res.Notarized || res.SignerCommonName == "" {
		t.Fatalf("the verified signature should come with the reason: %+v", res)
	}
}

func TestPKGUnsigned(t *testing.T) {
	_, err := verifyPKG(t, &Verifier{Roots: testPkgPKI().root.Pool()}, helloPKG())
	wantReason(t, err, ReasonUnsigned)
}

func TestPKGSignerNotInstaller(t *testing.T) {
	p := testPkgPKI()
	// A Developer ID Application certificate signs code, not packages.
	_, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, pkgread.StapleXAR(fixture.SignPKG(helloPKG(), p.application), pkgTicket))
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestPKGUntrustedRoot(t *testing.T) {
	p := testPkgPKI()
	_, err := verifyPKG(t, &Verifier{Roots: fixture.NewRoot("Another Root").Pool()}, fixture.SignPKG(helloPKG(), p.installer))
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestPKGExpiredSigner(t *testing.T) {
	p := testPkgPKI()
	later := func() time.Time { return time.Now().AddDate(3, 0, 0) }
	_, err := verifyPKG(t, &Verifier{Roots: p.root.Pool(), Now: later}, fixture.SignPKG(helloPKG(), p.installer))
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestPKGTampered(t *testing.T) {
	p := testPkgPKI()
	signed := fixture.SignPKG(helloPKG(), p.installer)
	x, err := pkgread.ReadXARSignature(bytes.NewReader(signed), int64(len(signed)), pkgread.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a heap file", func(t *testing.T) {
		b := bytes.Clone(signed)
		last := x.Files[len(x.Files)-1]
		b[last.Offset+last.Length-1] ^= 1
		_, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, b)
		wantReason(t, err, ReasonSignatureInvalid)
	})
	t.Run("the stored TOC checksum", func(t *testing.T) {
		b := bytes.Clone(signed)
		i := bytes.Index(b, x.StoredChecksum)
		b[i] ^= 1
		_, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, b)
		wantReason(t, err, ReasonSignatureInvalid)
	})
	t.Run("the signatures", func(t *testing.T) {
		b := bytes.Clone(signed)
		i := bytes.Index(b, x.RSASignature)
		b[i+10] ^= 1
		_, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, b)
		wantReason(t, err, ReasonSignatureInvalid)
	})
}

// An ECDSA key makes a CMS signature only (there is no classic RSA one).
func TestPKGECDSASignerCMSOnly(t *testing.T) {
	p := testPkgPKI()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(77), Subject: pkix.Name{CommonName: "Developer ID Installer: EC Ltd (ECTEAM0001)", Organization: []string{"EC Ltd"}, OrganizationalUnit: []string{"ECTEAM0001"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		UnknownExtKeyUsage: []asn1.ObjectIdentifier{oidEKUPackageSigning},
		ExtraExtensions:    []pkix.Extension{{Id: oidDeveloperIDInstaller, Critical: true, Value: []byte{5, 0}}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.root.Cert, &key.PublicKey, p.root.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	signed := fixture.SignPKGWith(helloPKG(), &certloader.Certificate{Leaf: leaf, Certificates: []*x509.Certificate{leaf, p.root.Cert}, PrivateKey: key})
	res, err := verifyPKG(t, &Verifier{Roots: p.root.Pool()}, pkgread.StapleXAR(signed, pkgTicket))
	if err != nil || res.TeamID != "ECTEAM0001" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestBERToDER(t *testing.T) {
	// SEQUENCE (indefinite) { INTEGER 5, [0] (indefinite) { OCTET STRING "ab" } } 00 00, then padding
	ber := []byte{0x30, 0x80, 0x02, 0x01, 0x05, 0xa0, 0x80, 0x04, 0x02, 'a', 'b', 0, 0, 0, 0, 0, 0, 0}
	der, err := berToDER(ber)
	want := []byte{0x30, 0x09, 0x02, 0x01, 0x05, 0xa0, 0x04, 0x04, 0x02, 'a', 'b'}
	if err != nil || !bytes.Equal(der, want) {
		t.Fatalf("%x %v, want %x", der, err, want)
	}
	deep := bytes.Repeat([]byte{0x30, 0x80}, 100)
	if _, err := berToDER(deep); err == nil {
		t.Fatal("nesting past the bound was accepted")
	}
	for _, bad := range [][]byte{{0x30}, {0x30, 0x85, 1, 2, 3, 4, 5}, {0x04, 0x80, 0, 0}, {0x30, 0x84, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := berToDER(bad); err == nil {
			t.Fatalf("%x accepted", bad)
		}
	}
}

func FuzzVerifyPKG(f *testing.F) {
	p := testPkgPKI()
	f.Add(helloPKG())
	f.Add(pkgread.StapleXAR(fixture.SignPKG(helloPKG(), p.installer), pkgTicket))
	v := &Verifier{Roots: fixture.NewRoot("Another Root").Pool()} // nothing fuzzed may pass
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := v.VerifyPKG(context.Background(), bytes.NewReader(b), int64(len(b)))
		if err == nil || ReasonOf(err) == "" || (res != nil && ReasonOf(err) != ReasonNotNotarized) {
			t.Fatalf("no reason code: res=%v err=%v", res, err)
		}
	})
}
