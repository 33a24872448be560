package codesign

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/xpromo/xpromo/server/internal/testtool"
)

// The MSI fixtures are what publishers ship: built by msitools' wixl from
// WiX source and signed by osslsigncode, with certificates made here.

const helloWXS = `<?xml version="1.0" encoding="utf-8"?>
<Wix xmlns="http://schemas.microsoft.com/wix/2006/wi">
  <Product Id="11111111-2222-3333-4444-555555555555" Name="com.example.hello" Language="1033" Version="1.2.3"
           Manufacturer="Example Ltd" UpgradeCode="12345678-1234-1234-1234-123456789abc">
    <Package InstallerVersion="200" Compressed="yes" InstallScope="perMachine"/>
    <Media Id="1" Cabinet="hello.cab" EmbedCab="yes"/>
    <Directory Id="TARGETDIR" Name="SourceDir">
      <Directory Id="ProgramFiles64Folder">
        <Directory Id="INSTALLDIR" Name="Hello">
          <Component Id="Main" Guid="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"><File Id="Payload" Source="payload.bin"/></Component>
        </Directory>
      </Directory>
    </Directory>
    <Feature Id="Main" Level="1"><ComponentRef Id="Main"/></Feature>
  </Product>
</Wix>`

// buildMSI runs wixl on helloWXS with a payload file of the given bytes.
func buildMSI(t *testing.T, payload []byte) []byte {
	t.Helper()
	testtool.Command(t, "wixl", "Debian: apt-get install wixl; the MSI signature tests build their fixtures with it")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.wxs"), []byte(helloWXS), 0o600)
	os.WriteFile(filepath.Join(dir, "payload.bin"), payload, 0o600)
	cmd := exec.Command("wixl", "-a", "x64", "-o", "hello.msi", "hello.wxs")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wixl: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "hello.msi"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signMSI(t *testing.T, msi []byte, signer interface {
	WritePEM(string) (string, string)
}, args ...string) []byte {
	t.Helper()
	needOsslsigncode(t)
	dir := t.TempDir()
	certs, key := signer.WritePEM(dir)
	in, out := filepath.Join(dir, "in.msi"), filepath.Join(dir, "out.msi")
	os.WriteFile(in, msi, 0o600)
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

func verifyMSI(t *testing.T, v *Verifier, b []byte) (*Result, error) {
	t.Helper()
	return v.VerifyMSI(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func TestMSISigned(t *testing.T) {
	p := testPKI()
	msi := buildMSI(t, []byte("hello\n"))
	for name, args := range map[string][]string{"plain": nil, "with MsiDigitalSignatureEx": {"-add-msi-dse"}} {
		t.Run(name, func(t *testing.T) {
			signed := signMSI(t, msi, p.leaf, args...)
			res, err := verifyMSI(t, &Verifier{Roots: p.root.Pool()}, signed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind != "authenticode" || res.SignerCommonName != "Test Publisher" || res.SignerOrganization != "Example Ltd" || res.DigestAlgorithm != "SHA-256" {
				t.Fatalf("%+v", res)
			}
		})
	}
}

func TestMSIUnsigned(t *testing.T) {
	_, err := verifyMSI(t, &Verifier{Roots: testPKI().root.Pool()}, buildMSI(t, []byte("hello\n")))
	wantReason(t, err, ReasonUnsigned)
}

func TestMSITampered(t *testing.T) {
	p := testPKI()
	signed := signMSI(t, buildMSI(t, []byte("hello\n")), p.leaf)
	i := bytes.Index(signed, []byte("com.example.hello"))
	if i < 0 {
		t.Fatal("the product name is not in the file")
	}
	tampered := bytes.Clone(signed)
	tampered[i] = 'C'
	_, err := verifyMSI(t, &Verifier{Roots: p.root.Pool()}, tampered)
	wantReason(t, err, ReasonSignatureInvalid)
}

func TestMSIWrongSigner(t *testing.T) {
	p := testPKI()
	signed := signMSI(t, buildMSI(t, []byte("hello\n")), p.leaf)
	_, err := verifyMSI(t, &Verifier{Roots: p.other.Pool()}, signed)
	wantReason(t, err, ReasonUntrustedSigner)
	_, err = verifyMSI(t, &Verifier{Roots: p.root.Pool()}, signMSI(t, buildMSI(t, []byte("hello\n")), p.wrongEKU))
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestMSIWeakDigest(t *testing.T) {
	p := testPKI()
	_, err := verifyMSI(t, &Verifier{Roots: p.root.Pool()}, signMSI(t, buildMSI(t, []byte("hello\n")), p.leaf, "-h", "sha1"))
	wantReason(t, err, ReasonSignatureInvalid)
}

// A signed MSI whose FAT is then made cyclic is refused, not looped on
// (relic's own reader would loop).
func TestMSICyclicFAT(t *testing.T) {
	p := testPKI()
	signed := signMSI(t, buildMSI(t, []byte("hello\n")), p.leaf)
	le := binary.LittleEndian
	fat := int(le.Uint32(signed[76:])+1) * 512
	dir := le.Uint32(signed[48:])
	bad := bytes.Clone(signed)
	le.PutUint32(bad[fat+4*int(dir):], dir)
	_, err := verifyMSI(t, &Verifier{Roots: p.root.Pool()}, bad)
	wantReason(t, err, ReasonBinaryUnreadable)
}

// The digest streams the cabinet: verifying a 6 MiB MSI allocates a small
// fraction of it (runtime.MemStats.TotalAlloc around the call).
func TestMSIDigestStreams(t *testing.T) {
	p := testPKI()
	payload := make([]byte, 6<<20)
	rand.Read(payload) // incompressible: the cabinet is as large
	signed := signMSI(t, buildMSI(t, payload), p.leaf)
	if len(signed) < 6<<20 {
		t.Fatalf("the MSI is only %d bytes", len(signed))
	}
	path := filepath.Join(t.TempDir(), "big.msi")
	os.WriteFile(path, signed, 0o600)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = (&Verifier{Roots: p.root.Pool()}).VerifyMSI(context.Background(), f, int64(len(signed)))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 1 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Fatalf("verifying a %d-byte MSI allocated %d bytes, more than %d", len(signed), got, bound)
	} else {
		t.Logf("verifying a %d-byte MSI allocated %d bytes", len(signed), got)
	}
}
