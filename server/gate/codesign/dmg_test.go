package codesign

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
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

// dmgApp is a UDZO-shaped image of an HFS+ volume holding Hello.app; its
// own signature superblob carries a stapled ticket when dmgTicket is set.
func dmgApp(volume []byte, dmgTicket bool) []byte {
	return fixture.UDIF(fixture.Superblob(dmgTicket), fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: volume, ChunkSectors: 8})
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
	tool, err := exec.LookPath("xorrisofs")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xorrisofs is not installed (scripts/test-deps.sh installs it)")
		}
		t.Skip("xorrisofs is not installed")
	}
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
