package pkgread

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// The fuzz targets call each format's reader directly, without Read's
// recover, so a panic anywhere under it (ours or a library's) fails the
// fuzzer instead of being turned into ReasonPackageUnreadable.

// small limits keep each fuzz iteration cheap and exercise the bounds.
var fuzzLimits = Limits{MaxEntries: 200, MaxFileBytes: 64 << 10, MaxTOCBytes: 256 << 10, MaxDepth: 16, MaxNodes: 5000, MaxResourceEntries: 500}.withDefaults()

func checkResult(t *testing.T, id *Identity, err error) {
	t.Helper()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Reason == "" {
			t.Fatalf("error without a reason code: %v", err)
		}
		return
	}
	if id == nil {
		t.Fatal("nil identity without an error")
	}
}

func FuzzZip(f *testing.F) {
	f.Add(fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello", "Hello", true)},
		fixture.File{Name: "Hello.app/Contents/MacOS/Hello", Data: []byte("x")}))
	f.Add(fixture.Zip(fixture.File{Name: "AppxManifest.xml", Data: fixture.AppxManifest("A.B", "CN=x", "1.0.0.0")}))
	f.Add(fixture.Zip(fixture.File{Name: "AppxMetadata/AppxBundleManifest.xml", Data: fixture.AppxManifest("A.B", "CN=x", "1.0.0.0")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readZip(context.Background(), bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

func FuzzInfoPlist(f *testing.F) {
	f.Add(fixture.InfoPlist("com.example.hello", "Hello", false))
	f.Add(fixture.InfoPlist("com.example.hello", "Hello", true))
	f.Add([]byte(`{CFBundleIdentifier = "com.example.hello";}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseInfoPlist(b)
	})
}

func FuzzPE(f *testing.F) {
	f.Add(fixture.PE(map[string]string{"InternalName": "com.example.hello", "ProductName": "Hello"}))
	f.Add(fixture.PE(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readPE(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

func FuzzMSI(f *testing.F) {
	f.Add(fixture.MSI(map[string]string{"ProductName": "com.example.hello", "UpgradeCode": "{1}"}))
	f.Add(fixture.CFB(map[string][]byte{"big": bytes.Repeat([]byte("x"), 5000)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readMSI(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

func FuzzPKG(f *testing.F) {
	f.Add(fixture.XAR(fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"><bundle path="./A.app" id="a.b.c"/></pkg-info>`)}))
	f.Add(fixture.XAR(fixture.XARFile{Name: "Distribution", Data: []byte(`<installer-gui-script><pkg-ref id="x.y"/></installer-gui-script>`)},
		fixture.XARFile{Name: "x.pkg", Files: []fixture.XARFile{{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="x.y"/>`)}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readXAR(context.Background(), bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

func FuzzDMG(f *testing.F) {
	f.Add(fixture.UDIF(fixture.Superblob(true), fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: fixture.HFSPlus("Hello",
		fixture.HFSFile{Name: "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello", "Hello", false)},
		fixture.HFSFile{Name: "Hello.app/Contents/MacOS/Hello", Data: []byte("exe")})}))
	f.Add(fixture.DMG(nil, nil, false, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < kolySize {
			return // Detect never routes a shorter file here
		}
		id, err := readDMG(context.Background(), bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

func FuzzMachO(f *testing.F) {
	f.Add(fixture.MachO(fixture.InfoPlist("com.example.tool", "tool", false)))
	f.Add(fixture.Fat(fixture.MachO(nil), fixture.MachOFor(fixture.CPUARM64, nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := readMachO(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		checkResult(t, id, err)
	})
}

// FuzzRead drives the whole path, detection included.
func FuzzRead(f *testing.F) {
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Add(fixture.PE(map[string]string{"ProductName": "x"}))
	f.Add(fixture.MSI(map[string]string{"ProductName": "x"}))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := Reader{Limits: fuzzLimits}.Read(context.Background(), bytes.NewReader(b), int64(len(b)))
		checkResult(t, id, err)
		if err == nil && len(id.BundleIDs) == 0 {
			t.Fatal("success without an identifier")
		}
	})
}

// FuzzPlistBounds drives the structure walks that run before the plist
// decoder (binary object graphs, XML and text nesting).
func FuzzPlistBounds(f *testing.F) {
	f.Add(bplist(bpArray(1, 1), bpArray(2, 2), []byte{0x51, 'x'}))
	f.Add(bplist(bpArray(1), bpArray(0)))
	f.Add(deepXMLPlist(70))
	f.Add([]byte(`{a = (1, "(", /* ( */ 2);}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := checkPlist(b, fuzzLimits, FormatZip, "fuzz"); err != nil && ReasonOf(err) == "" {
			t.Fatalf("error without a reason code: %v", err)
		}
	})
}

func FuzzZipDirectory(f *testing.F) {
	f.Add(fixture.Zip(fixture.File{Name: "a", Data: []byte("x")}, fixture.File{Name: "b/c", Data: []byte("y")}))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := CheckZipDirectory(bytes.NewReader(b), int64(len(b)), fuzzLimits, FormatZip); err != nil && ReasonOf(err) == "" {
			t.Fatalf("error without a reason code: %v", err)
		}
	})
}

func FuzzVersionInfo(f *testing.F) {
	f.Add([]byte{0x5c, 0, 0x34, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseVersionInfo(b, map[string]string{})
	})
}
