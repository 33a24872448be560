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

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// The MSI fixtures are what publishers ship: built by msitools' wixl from
// WiX source (fixture.Wixl) and signed by osslsigncode, with certificates
// made here.

// buildMSI runs wixl with a payload file of the given bytes.
func buildMSI(t *testing.T, payload []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "payload.bin"), payload, 0o600)
	b, err := os.ReadFile(fixture.Wixl(t, dir))
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
