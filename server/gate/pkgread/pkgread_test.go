package pkgread

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

func read(t *testing.T, b []byte) (*Identity, error) {
	t.Helper()
	return Reader{}.Read(context.Background(), bytes.NewReader(b), int64(len(b)))
}

func mustRead(t *testing.T, b []byte) *Identity {
	t.Helper()
	id, err := read(t, b)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return id
}

func wantReason(t *testing.T, err error, want Reason) {
	t.Helper()
	if got := ReasonOf(err); got != want {
		t.Fatalf("reason = %q (%v), want %q", got, err, want)
	}
}

func TestZippedApp(t *testing.T) {
	plistXML := fixture.InfoPlist("com.example.hello", "Hello", false)
	z := fixture.Zip(
		fixture.File{Name: "__MACOSX/Hello.app/Contents/._Info.plist", Data: []byte("junk")},
		fixture.File{Name: "Hello.app/Contents/Frameworks/Sparkle.framework/Resources/Info.plist", Data: fixture.InfoPlist("org.sparkle-project.Sparkle", "Sparkle", false)},
		fixture.File{Name: "Hello.app/Contents/Library/LoginItems/Helper.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello.helper", "Helper", true)},
		fixture.File{Name: "Hello.app/Contents/Info.plist", Data: plistXML},
		fixture.File{Name: "Hello.app/Contents/MacOS/Hello", Data: []byte("\xcf\xfa\xed\xfe"), Mode: 0o100755},
	)
	id := mustRead(t, z)
	if id.Format != FormatZip || id.Platform != MacOS {
		t.Fatalf("format %v %v", id.Format, id.Platform)
	}
	if len(id.BundleIDs) != 1 || id.BundleIDs[0] != "com.example.hello" {
		t.Fatalf("BundleIDs = %q: nested bundles must not count", id.BundleIDs)
	}
	if id.AppPath != "Hello.app" || id.Executable != "Hello.app/Contents/MacOS/Hello" {
		t.Fatalf("AppPath %q Executable %q", id.AppPath, id.Executable)
	}
	if !bytes.Equal(id.InfoPlist, plistXML) || id.Version != "1.2.3" || id.FeedURL != "https://app.example/appcast.xml" {
		t.Fatalf("plist fields: %q %q", id.Version, id.FeedURL)
	}
	if err := Match(id, "com.example.hello"); err != nil {
		t.Fatal(err)
	}
	err := Match(id, "com.example.other")
	wantReason(t, err, ReasonBundleMismatch)
	if !strings.Contains(err.Error(), `"com.example.hello"`) {
		t.Fatalf("mismatch should say what the package declares: %v", err)
	}
	wantReason(t, Match(id, "COM.EXAMPLE.HELLO"), ReasonBundleMismatch) // macOS ids compare exactly
}

func TestZippedAppInFolderWithBinaryPlist(t *testing.T) {
	z := fixture.Zip(
		fixture.File{Name: "Hello 1.2.3/", Mode: 0o40755},
		fixture.File{Name: "Hello 1.2.3/Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello", "Hello", true)},
	)
	id := mustRead(t, z)
	if id.BundleIDs[0] != "com.example.hello" || id.AppPath != "Hello 1.2.3/Hello.app" {
		t.Fatalf("%+v", id)
	}
	if id.Executable != "" {
		t.Fatalf("Executable %q names a file the zip does not hold", id.Executable)
	}
}

func TestZipWithoutApp(t *testing.T) {
	_, err := read(t, fixture.Zip(fixture.File{Name: "README.txt", Data: []byte("hi")},
		fixture.File{Name: "deep/er/than/three/X.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.deep", "X", false)}))
	wantReason(t, err, ReasonBundleIDMissing)
}

func TestZipBombIsRefused(t *testing.T) {
	// (The decompression bomb itself: TestBombZipDecompression.)
	files := make([]fixture.File, 20)
	for i := range files {
		files[i] = fixture.File{Name: strings.Repeat("a", i+1), Data: []byte("x")}
	}
	_, err := Reader{Limits: Limits{MaxEntries: 10}}.Read(context.Background(), bytes.NewReader(fixture.Zip(files...)), int64(len(fixture.Zip(files...))))
	wantReason(t, err, ReasonPackageTooLarge)
}

func TestMSIX(t *testing.T) {
	pub := "CN=Example Ltd, O=Example Ltd, C=GB"
	z := fixture.Zip(
		fixture.File{Name: "[Content_Types].xml", Data: []byte("<Types/>")},
		fixture.File{Name: "AppxManifest.xml", Data: fixture.AppxManifest("Example.Hello", pub, "1.2.3.0")},
	)
	id := mustRead(t, z)
	if id.Format != FormatMSIX || id.Platform != Windows || id.BundleIDs[0] != "Example.Hello" || id.Publisher != pub || id.Version != "1.2.3.0" || id.Name != "Hello App" {
		t.Fatalf("%+v", id)
	}
	if id.PackageFamilyName != PackageFamilyName("Example.Hello", pub) {
		t.Fatal(id.PackageFamilyName)
	}
	if err := Match(id, "example.hello"); err != nil {
		t.Fatalf("Windows package names compare without case: %v", err)
	}
}

func TestPackageFamilyName(t *testing.T) {
	// Vectors: russellbanks/package-family-name, and winget's own package.
	for _, tc := range []struct{ name, pub, want string }{
		{"AppName", "Publisher Software", "AppName_zj75k085cmj1a"},
		{"Microsoft.DesktopAppInstaller", "CN=Microsoft Corporation, O=Microsoft Corporation, L=Redmond, S=Washington, C=US", "Microsoft.DesktopAppInstaller_8wekyb3d8bbwe"},
	} {
		if got := PackageFamilyName(tc.name, tc.pub); got != tc.want {
			t.Errorf("PackageFamilyName(%q, %q) = %q, want %q", tc.name, tc.pub, got, tc.want)
		}
	}
}

func TestPEVersionInfo(t *testing.T) {
	exe := fixture.PE(map[string]string{
		"InternalName": "com.example.hello", "ProductName": "Hello App", "CompanyName": "Example Ltd",
		"OriginalFilename": "hello.exe", "FileDescription": "Hello",
	})
	id := mustRead(t, exe)
	if id.Format != FormatPE || id.Platform != Windows {
		t.Fatalf("%+v", id)
	}
	if len(id.BundleIDs) != 2 || id.BundleIDs[0] != "com.example.hello" || id.BundleIDs[1] != "Hello App" {
		t.Fatalf("BundleIDs = %q", id.BundleIDs)
	}
	if id.Publisher != "Example Ltd" || id.Version != "1.2.3.4" || id.VersionInfo["OriginalFilename"] != "hello.exe" {
		t.Fatalf("%+v", id)
	}

	// The same through a file on disk (memory-mapped path).
	p := filepath.Join(t.TempDir(), "setup.bin")
	if err := os.WriteFile(p, exe, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := Reader{}.ReadFile(context.Background(), p)
	if err != nil || id.BundleIDs[0] != "com.example.hello" {
		t.Fatalf("ReadFile: %v %+v", err, id)
	}
}

func TestPEWithoutVersionInfo(t *testing.T) {
	_, err := read(t, fixture.PE(nil))
	wantReason(t, err, ReasonBundleIDMissing)
}

func TestMSI(t *testing.T) {
	msi := fixture.MSI(map[string]string{
		"ProductName":    "com.example.hello",
		"ProductCode":    "{11111111-2222-3333-4444-555555555555}",
		"UpgradeCode":    "{12345678-1234-1234-1234-123456789ABC}",
		"Manufacturer":   "Example Ltd",
		"ProductVersion": "1.2.3",
		"ALLUSERS":       "1",
	})
	id := mustRead(t, msi)
	if id.Format != FormatMSI || id.Name != "com.example.hello" || id.UpgradeCode != "{12345678-1234-1234-1234-123456789ABC}" ||
		id.ProductCode != "{11111111-2222-3333-4444-555555555555}" || id.Publisher != "Example Ltd" || id.Version != "1.2.3" {
		t.Fatalf("%+v", id)
	}
	if err := Match(id, "{12345678-1234-1234-1234-123456789abc}"); err != nil {
		t.Fatal(err)
	}
}

func TestMSIWithoutPropertyTable(t *testing.T) {
	_, err := read(t, fixture.CFB(map[string][]byte{"hello": []byte("x")}))
	wantReason(t, err, ReasonPackageUnreadable)
}

func TestComponentPKG(t *testing.T) {
	pkg := fixture.XAR(
		fixture.XARFile{Name: "Bom", Data: []byte("BOMStore")},
		fixture.XARFile{Name: "Payload", Data: bytes.Repeat([]byte{0}, 1000)},
		fixture.XARFile{Name: "PackageInfo", Data: []byte(`<?xml version="1.0" encoding="utf-8"?>
<pkg-info format-version="2" identifier="com.example.hello.pkg" version="1.2.3" install-location="/Applications" auth="root">
  <payload numberOfFiles="12" installKBytes="300"/>
  <bundle path="./Hello.app" id="com.example.hello" CFBundleShortVersionString="1.2.3" CFBundleVersion="123">
    <bundle path="./Contents/Frameworks/Sparkle.framework" id="org.sparkle-project.Sparkle"/>
  </bundle>
  <bundle-version><bundle id="com.example.hello"/></bundle-version>
</pkg-info>`)},
	)
	id := mustRead(t, pkg)
	if id.Format != FormatPKG || len(id.BundleIDs) != 2 || id.BundleIDs[0] != "com.example.hello" || id.BundleIDs[1] != "com.example.hello.pkg" {
		t.Fatalf("%+v", id)
	}
}

func TestProductPKG(t *testing.T) {
	pkg := fixture.XAR(
		fixture.XARFile{Name: "Distribution", Data: []byte(`<?xml version="1.0" encoding="utf-8"?>
<installer-gui-script minSpecVersion="1">
  <title>Hello App</title>
  <product id="com.example.hello.product" version="1.2.3"/>
  <pkg-ref id="com.example.hello.pkg"/>
  <pkg-ref id="com.example.hello.pkg" version="1.2.3" onConclusion="none">#hello.pkg</pkg-ref>
  <pkg-ref id="com.example.hello.pkg">
    <bundle-version>
      <bundle CFBundleShortVersionString="1.2.3" CFBundleVersion="123" id="com.example.hello" path="Applications/Hello.app"/>
      <bundle id="org.sparkle-project.Sparkle" path="Applications/Hello.app/Contents/Frameworks/Sparkle.framework"/>
    </bundle-version>
  </pkg-ref>
</installer-gui-script>`)},
		fixture.XARFile{Name: "hello.pkg", Files: []fixture.XARFile{
			{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="com.example.hello.pkg" version="1.2.3"><bundle path="./Hello.app" id="com.example.hello"/></pkg-info>`)},
			{Name: "Payload", Data: []byte("payload")},
		}},
	)
	id := mustRead(t, pkg)
	want := []string{"com.example.hello", "com.example.hello.product", "com.example.hello.pkg"}
	if strings.Join(id.BundleIDs, ",") != strings.Join(want, ",") || id.Name != "Hello App" || id.Version != "1.2.3" {
		t.Fatalf("BundleIDs %q name %q version %q", id.BundleIDs, id.Name, id.Version)
	}
}

func TestPKGWithoutMetadata(t *testing.T) {
	_, err := read(t, fixture.XAR(fixture.XARFile{Name: "Payload", Data: []byte("x")}))
	wantReason(t, err, ReasonBundleIDMissing)
}

func TestDMGTrailerOnly(t *testing.T) {
	// A trailer whose blkx entries carry no chunk table: unreadable, with
	// the trailer's facts in the identity.
	img := fixture.DMG(make([]byte, 4096), []string{"Protective Master Boot Record (MBR : 0)", "disk image (Apple_HFS : 4)"}, true, true)
	id, err := read(t, img)
	wantReason(t, err, ReasonPackageUnreadable)
	if id == nil || id.Format != FormatDMG || id.DMG == nil {
		t.Fatalf("%+v", id)
	}
}

func TestDetectIgnoresNamesAndRefusesOtherFormats(t *testing.T) {
	for _, b := range [][]byte{
		[]byte("<!doctype html><title>404 Not Found</title>"),
		[]byte("\x7fELF\x02\x01\x01"),
		{0x1f, 0x8b, 0x08, 0},
		{},
		// a Java class file shares the universal-binary magic
		{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 61},
	} {
		_, err := read(t, b)
		wantReason(t, err, ReasonPackageUnknownFormat)
	}
}

func TestTruncatedPackagesAreUnreadable(t *testing.T) {
	for name, b := range map[string][]byte{
		"zip":  fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello", "Hello", false)}),
		"pe":   fixture.PE(map[string]string{"ProductName": "x"}),
		"msi":  fixture.MSI(map[string]string{"ProductName": "x"}),
		"pkg":  fixture.XAR(fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"/>`)}),
		"html": []byte("<html>"),
	} {
		t.Run(name, func(t *testing.T) {
			cut := b[:len(b)*2/3]
			id, err := read(t, cut)
			if err == nil {
				t.Fatalf("a truncated %s was read: %+v", name, id)
			}
			if ReasonOf(err) == "" {
				t.Fatalf("error without a reason: %v", err)
			}
		})
	}
}

func TestMachOEmbeddedInfoPlist(t *testing.T) {
	id := mustRead(t, fixture.MachO(fixture.InfoPlist("com.example.tool", "tool", false)))
	if id.Format != FormatMachO || id.BundleIDs[0] != "com.example.tool" || len(id.InfoPlist) == 0 {
		t.Fatalf("%+v", id)
	}
	_, err := read(t, fixture.MachO(nil)[:32+72]) // header and segment, no section data
	if err == nil {
		t.Fatal("a Mach-O without an Info.plist was read")
	}
}
