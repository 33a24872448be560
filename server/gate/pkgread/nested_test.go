package pkgread

import (
	"bytes"
	"context"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

func unwrap(t *testing.T, z []byte, max int64) (*Nested, error) {
	t.Helper()
	n, err := Unwrap(context.Background(), bytes.NewReader(z), int64(len(z)), Limits{}, max)
	t.Cleanup(func() { n.Close() })
	return n, err
}

func TestUnwrapOneInstaller(t *testing.T) {
	msi := fixture.MSI(map[string]string{"ProductName": "com.example.hello"})
	exe := fixture.PE(map[string]string{"InternalName": "com.example.hello"})
	n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello 1.0/Hello.MSI", Data: msi}, fixture.File{Name: "Hello 1.0/readme.txt", Data: []byte("hi")},
		fixture.File{Name: "Hello 1.0/tools/helper.exe", Data: exe}), 0)
	if err != nil || n == nil || n.Path != "Hello 1.0/Hello.MSI" || n.Size != int64(len(msi)) {
		t.Fatalf("%+v %v", n, err)
	}
	id, err := Reader{}.Read(context.Background(), n.File, n.Size)
	if err != nil || id.Format != FormatMSI || id.BundleIDs[0] != "com.example.hello" {
		t.Fatalf("%+v %v", id, err)
	}
	// one .exe and no .msi
	if n, err := unwrap(t, fixture.Zip(fixture.File{Name: "setup.exe", Data: exe}), 0); err != nil || n == nil || n.Path != "setup.exe" {
		t.Fatalf("%+v %v", n, err)
	}
}

func TestUnwrapOneDiskImage(t *testing.T) {
	img := helloDMG("", "com.example.hello")
	n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello-1.0.dmg", Data: img}, fixture.File{Name: "LICENSE", Data: []byte("MIT")}), 0)
	if err != nil || n == nil || n.Path != "Hello-1.0.dmg" {
		t.Fatalf("%+v %v", n, err)
	}
	id, err := Reader{}.Read(context.Background(), n.File, n.Size)
	if err != nil || id.Format != FormatDMG || id.BundleIDs[0] != "com.example.hello" {
		t.Fatalf("%+v %v", id, err)
	}
	for name, z := range map[string][]byte{
		"two images":                fixture.Zip(fixture.File{Name: "a.dmg", Data: img}, fixture.File{Name: "b.dmg", Data: img}),
		"an image and an installer": fixture.Zip(fixture.File{Name: "a.dmg", Data: img}, fixture.File{Name: "setup.exe", Data: fixture.PE(map[string]string{"InternalName": "x"})}),
		"not an image":              fixture.Zip(fixture.File{Name: "a.dmg", Data: []byte("<html>")}),
	} {
		if n, err := unwrap(t, z, 0); err != nil || (n != nil && name != "an image and an installer") {
			t.Errorf("%s: %+v %v", name, n, err)
		} else if n != nil && n.Path != "setup.exe" {
			t.Errorf("%s: %+v", name, n)
		}
	}
}

func TestUnwrapLeavesOthersAlone(t *testing.T) {
	exe := fixture.PE(map[string]string{"InternalName": "x"})
	for name, z := range map[string][]byte{
		"two exes":        fixture.Zip(fixture.File{Name: "a.exe", Data: exe}, fixture.File{Name: "b.exe", Data: exe}),
		"an app":          fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("a.b", "Hello", false)}, fixture.File{Name: "setup.exe", Data: exe}),
		"an MSIX":         fixture.Zip(fixture.File{Name: "AppxManifest.xml", Data: fixture.AppxManifest("A.B", "CN=x", "1.0.0.0")}, fixture.File{Name: "a.exe", Data: exe}),
		"not a PE":        fixture.Zip(fixture.File{Name: "setup.exe", Data: []byte("<html>")}),
		"two levels deep": fixture.Zip(fixture.File{Name: "a/b/setup.exe", Data: exe}),
		"a zip in a zip":  fixture.Zip(fixture.File{Name: "inner.zip", Data: fixture.Zip(fixture.File{Name: "setup.exe", Data: exe})}),
		"not a zip":       exe,
	} {
		if n, err := unwrap(t, z, 0); n != nil || err != nil {
			t.Errorf("%s: %+v %v", name, n, err)
		}
	}
}

// An installer that inflates past the bound is refused while it streams
// to disk, with the bytes allocated independent of its size.
func TestBombNestedInstaller(t *testing.T) {
	z := fixture.Zip(fixture.File{Name: "setup.exe", Data: make([]byte, 8<<20)})
	var err error
	alloc := allocated(func() { _, err = unwrap(t, z, 1<<20) })
	wantReason(t, err, ReasonPackageTooLarge)
	if alloc > maxBombAlloc {
		t.Fatalf("allocated %d bytes", alloc)
	}
	// the header lies: declared 100 bytes, inflated it is 8 MiB
	i := bytes.Index(z, []byte("PK\x01\x02"))
	lying := bytes.Clone(z)
	lying[i+24], lying[i+25], lying[i+26], lying[i+27] = 100, 0, 0, 0
	_, err = unwrap(t, lying, 1<<20)
	wantReason(t, err, ReasonPackageUnreadable)
}

// An MSIX in a zip (a zip itself) is unwrapped when it reads as an MSIX;
// a zip named .msix that is not one is left alone.
func TestUnwrapOneMSIX(t *testing.T) {
	msix := fixture.MSIX(fixture.AppxManifest("Example.Hello", "CN=Example", "1.0.0.0"), fixture.File{Name: "Hello.exe", Data: fixture.PE(nil)})
	n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello-1.0.msix", Data: msix}), 0)
	if err != nil || n == nil || n.Path != "Hello-1.0.msix" {
		t.Fatalf("%+v %v", n, err)
	}
	id, err := Reader{}.Read(context.Background(), n.File, n.Size)
	if err != nil || id.Format != FormatMSIX || id.BundleIDs[0] != "Example.Hello" {
		t.Fatalf("%+v %v", id, err)
	}
	notMSIX := fixture.Zip(fixture.File{Name: "readme.txt", Data: []byte("hi")})
	if n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello.appx", Data: notMSIX}), 0); n != nil || err != nil {
		t.Fatalf("a zip named .appx: %+v %v", n, err)
	}
}
