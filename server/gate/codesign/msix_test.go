package codesign

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/x509"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// The MSIX fixtures are written in the test (stored files, then the
// manifest) and signed in-process with relic's appx signer, which adds
// the block map, [Content_Types].xml and AppxSignature.p7x as signtool does.

var testMSIXPKI = sync1(func() struct{ root, leaf *fixture.Cert } {
	root := fixture.NewRoot("Test Windows Root")
	return struct{ root, leaf *fixture.Cert }{root, root.Issue(fixture.CertOptions{CommonName: "Example Ltd", Organization: "Example Ltd",
		EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})}
})

func helloMSIX() []byte {
	big := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160 000 bytes: three blocks
	return fixture.MSIX(fixture.AppxManifest("Example.Hello", "CN=placeholder", "1.2.3.0"),
		fixture.File{Name: "Hello.exe", Data: fixture.PE(nil)}, fixture.File{Name: "Assets/big.bin", Data: big})
}

func verifyMSIX(t *testing.T, v *Verifier, b []byte) (*Result, error) {
	t.Helper()
	return v.VerifyMSIX(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func TestMSIXSigned(t *testing.T) {
	p := testMSIXPKI()
	signed := fixture.SignMSIX(helloMSIX(), p.leaf)
	res, err := verifyMSIX(t, &Verifier{Roots: p.root.Pool()}, signed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "appx" || res.DigestAlgorithm != "SHA-256" || res.SignerOrganization != "Example Ltd" || res.Publisher != MSIXPublisher(p.leaf.Cert.RawSubject) {
		t.Fatalf("%+v", res)
	}
	// The manifest pkgread reads names the signer as its publisher.
	id, err := pkgread.Reader{}.Read(context.Background(), bytes.NewReader(signed), int64(len(signed)))
	if err != nil || id.Format != pkgread.FormatMSIX || id.Publisher != res.Publisher || id.BundleIDs[0] != "Example.Hello" {
		t.Fatalf("%+v %v", id, err)
	}
}

func TestMSIXUnsigned(t *testing.T) {
	_, err := verifyMSIX(t, &Verifier{Roots: testMSIXPKI().root.Pool()}, helloMSIX())
	wantReason(t, err, ReasonUnsigned)
}

func TestMSIXUntrusted(t *testing.T) {
	p := testMSIXPKI()
	_, err := verifyMSIX(t, &Verifier{Roots: fixture.NewRoot("Another Root").Pool()}, fixture.SignMSIX(helloMSIX(), p.leaf))
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestMSIXTampered(t *testing.T) {
	p := testMSIXPKI()
	signed := fixture.SignMSIX(helloMSIX(), p.leaf)
	v := &Verifier{Roots: p.root.Pool()}
	zr, err := zip.NewReader(bytes.NewReader(signed), int64(len(signed)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "AppxSignature.p7x" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			off, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			b := bytes.Clone(signed)
			b[off+int64(f.CompressedSize64)/2] ^= 1
			_, err = verifyMSIX(t, v, b)
			if r := ReasonOf(err); r != ReasonSignatureInvalid && r != ReasonBinaryUnreadable {
				t.Fatalf("reason %q (%v)", r, err)
			}
		})
	}
}

func TestMSIXBundleUnsupported(t *testing.T) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, _ := w.Create("AppxMetadata/AppxBundleManifest.xml")
	fw.Write([]byte(`<Bundle/>`))
	fw, _ = w.Create("AppxSignature.p7x")
	fw.Write([]byte("PKCX"))
	w.Close()
	_, err := verifyMSIX(t, &Verifier{Roots: testMSIXPKI().root.Pool()}, buf.Bytes())
	wantReason(t, err, ReasonUnsupported)
}

// Entries over their bound are refused from their declared size, before
// anything is decompressed.
func TestBombMSIXSignatureEntry(t *testing.T) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, _ := w.Create("AppxManifest.xml")
	fw.Write(fixture.AppxManifest("A.B", "CN=x", "1.0.0.0"))
	fw, _ = w.Create("AppxSignature.p7x")
	fw.Write(append([]byte("PKCX"), make([]byte, 2<<20)...))
	w.Close()
	_, err := verifyMSIX(t, &Verifier{Roots: testMSIXPKI().root.Pool()}, buf.Bytes())
	wantReason(t, err, ReasonSignatureInvalid)
}

func FuzzVerifyMSIX(f *testing.F) {
	p := testMSIXPKI()
	small := fixture.MSIX(fixture.AppxManifest("A.B", "CN=x", "1.0.0.0"), fixture.File{Name: "a.txt", Data: []byte("hello")})
	f.Add(small)
	f.Add(fixture.SignMSIX(small, p.leaf))
	v := &Verifier{Roots: fixture.NewRoot("Another Root").Pool()} // nothing fuzzed may pass
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := v.VerifyMSIX(context.Background(), bytes.NewReader(b), int64(len(b)))
		if err == nil || ReasonOf(err) == "" {
			t.Fatalf("no reason code: res=%v err=%v", res, err)
		}
	})
}
