package codesign

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

func appVolumeFiles(exe, plist, ticket []byte) []fixture.HFSFile {
	files := []fixture.HFSFile{
		{Name: "Hello.app/Contents/Info.plist", Data: plist},
		{Name: "Hello.app/Contents/MacOS/Hello", Data: exe, Mode: 0o100755},
		{Name: "Hello.app/Contents/_CodeSignature/CodeResources", Data: codeResources},
		{Name: "Applications", Data: []byte("/Applications"), Mode: 0o120755},
	}
	if ticket != nil {
		files = append(files, fixture.HFSFile{Name: "Hello.app/Contents/CodeResources", Data: ticket})
	}
	return files
}

// dmgApp is a UDZO-shaped image of an HFS+ volume holding Hello.app,
// signed by the Developer ID leaf; its signature carries a stapled ticket
// when dmgTicket is set.
func dmgApp(volume []byte, dmgTicket bool) []byte {
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: volume, ChunkSectors: 8})
	var ticket []byte
	if dmgTicket {
		ticket = []byte("s8ChAAAA-dmg-ticket")
	}
	return fixture.SignDMG(img, testMacPKI().devID, ticket)
}

func verifyDMG(t *testing.T, v *Verifier, b []byte) (*Result, error) {
	t.Helper()
	return v.VerifyDMGApp(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func TestDMGAppNotarizedOnTheImage(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyDMG(t, v, dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(), helloPlist, nil)...), true))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Notarized || res.NotarySource != "stapled-dmg" || res.SigningIdentity != "com.example.hello" || res.TeamID != "TEAM123456" {
		t.Fatalf("%+v", res)
	}
	if res.Image == nil || res.Image.Kind != "dmg" || res.Image.TeamID != "TEAM123456" || res.Image.NotarySource != "stapled-signature" {
		t.Fatalf("the image's signature: %+v", res.Image)
	}
}

func TestDMGSignature(t *testing.T) {
	p := testMacPKI()
	v := &Verifier{Roots: p.root.Pool()}
	vol := fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(), helloPlist, nil)...)
	signed := dmgApp(vol, false)
	res, err := v.VerifyDMGSignature(context.Background(), bytes.NewReader(signed), int64(len(signed)))
	if err != nil || res.Notarized || res.SignerOrganization != "Example Ltd" {
		t.Fatalf("%+v %v", res, err)
	}
	// A byte of the resource fork changed after signing (whitespace, so the
	// image still reads): the page hashes catch it.
	tampered := bytes.Clone(signed)
	tampered[bytes.Index(tampered, []byte("\t<key>"))] = ' '
	_, err = verifyDMG(t, v, tampered)
	wantReason(t, err, ReasonSignatureInvalid)
	// An unsigned image of a signed app verifies (the app's signature is
	// what counts), but has no image ticket.
	unsigned := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: vol})
	_, err = verifyDMG(t, v, unsigned)
	wantReason(t, err, ReasonNotNotarized)
	_, err = v.VerifyDMGSignature(context.Background(), bytes.NewReader(unsigned), int64(len(unsigned)))
	wantReason(t, err, ReasonUnsigned)
	// A placeholder superblob (a CMS slot with no CMS) and a ticket: not a
	// signature, so the ticket does not count.
	fake := fixture.UDIF(fixture.Superblob(true), fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: vol})
	_, err = verifyDMG(t, v, fake)
	if r := ReasonOf(err); r != ReasonUnsigned && r != ReasonSignatureInvalid {
		t.Fatalf("a placeholder image signature: %v", err)
	}
	// The image signed by another team than the app's.
	other := p.root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Other (TEAM999999)", OrgUnit: "TEAM999999",
		EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true})
	_, err = verifyDMG(t, v, fixture.SignDMG(unsigned, other, []byte("ticket")))
	wantReason(t, err, ReasonSignatureInvalid)
}

// An app copied onto the volume with HFS+ compression (ditto
// --hfsCompression): every file decmpfs-compressed, the executable in the
// resource fork.
func TestDMGAppCompressed(t *testing.T) {
	files := appVolumeFiles(signedHelloApp(), helloPlist, nil)
	for i := range files {
		files[i].Compress = files[i].Mode != 0o120755
	}
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyDMG(t, v, dmgApp(fixture.HFSPlus("Hello", files...), true))
	if err != nil || res.NotarySource != "stapled-dmg" {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestDMGAppNotarizedInTheBundle(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyDMG(t, v, dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(), helloPlist, []byte("s8ChAAAAstapled"))...), false))
	if err != nil || res.NotarySource != "stapled-bundle" {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestDMGAppFailures(t *testing.T) {
	p := testMacPKI()
	for name, c := range map[string]struct {
		img  []byte
		want Reason
		v    *Verifier
	}{
		"without a ticket": {dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(), helloPlist, nil)...), false), ReasonNotNotarized, nil},
		"unsigned":         {dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(fixture.MachO(nil), helloPlist, nil)...), true), ReasonUnsigned, nil},
		"swapped Info.plist": {dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(),
			fixture.InfoPlist("com.example.impostor", "Hello", false), nil)...), true), ReasonSignatureInvalid, nil},
		"untrusted signer": {dmgApp(fixture.HFSPlus("Hello", appVolumeFiles(signedHelloApp(), helloPlist, nil)...), true), ReasonUntrustedSigner,
			&Verifier{Roots: p.other.Pool()}},
		"not a disk image": {fixture.Zip(), ReasonBinaryUnreadable, nil},
	} {
		t.Run(name, func(t *testing.T) {
			v := c.v
			if v == nil {
				v = &Verifier{Roots: p.root.Pool()}
			}
			_, err := verifyDMG(t, v, c.img)
			wantReason(t, err, c.want)
		})
	}
}

// TestDMGAppBuiltWithXorriso verifies a signed app on an HFS+ volume
// written by xorrisofs (another HFS+ writer than ours).
func TestDMGAppBuiltWithXorriso(t *testing.T) {
	tool := testtool.Command(t, "xorrisofs", "Debian: apt-get install xorriso; scripts/test-deps.sh installs it")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, f := range appVolumeFiles(signedHelloApp(), helloPlist, nil) {
		p := filepath.Join(src, f.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if f.Mode == 0o120755 {
			os.Symlink(string(f.Data), p)
		} else if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	iso := filepath.Join(dir, "hello.iso")
	if out, err := exec.Command(tool, "-quiet", "-hfsplus", "-V", "Hello", "-o", iso, src).CombinedOutput(); err != nil {
		t.Fatalf("xorrisofs: %v\n%s", err, out)
	}
	b, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyDMG(t, v, dmgApp(b[65536:], true)) // the APM's Apple_HFS partition starts at 64 KiB
	if err != nil || res.SigningIdentity != "com.example.hello" || !res.Notarized {
		t.Fatalf("%+v, %v", res, err)
	}
}
