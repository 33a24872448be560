package pkgread

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

func helloVolume(prefix, bundleID string) []byte {
	return fixture.HFSPlus("Hello",
		fixture.HFSFile{Name: prefix + "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist(bundleID, "Hello", false)},
		fixture.HFSFile{Name: prefix + "Hello.app/Contents/MacOS/Hello", Data: fixture.MachO(nil), Mode: 0o100755},
		fixture.HFSFile{Name: prefix + "Hello.app/Contents/Frameworks/Sparkle.framework/Resources/Autoupdate.app/Contents/Info.plist", Data: fixture.InfoPlist("org.sparkle-project.Autoupdate", "Autoupdate", false)},
		fixture.HFSFile{Name: "Applications", Data: []byte("/Applications"), Mode: 0o120755},
		fixture.HFSFile{Name: ".background/background.png", Data: []byte("png")},
	)
}

func helloDMG(prefix, bundleID string) []byte {
	return fixture.UDIF(fixture.Superblob(true),
		fixture.UDIFPartition{Name: "Protective Master Boot Record (MBR : 0)", Data: make([]byte, 512)},
		fixture.UDIFPartition{Name: "disk image (Apple_HFS : 1)", Data: helloVolume(prefix, bundleID), ChunkSectors: 16})
}

func TestDMGWithAnHFSPlusApp(t *testing.T) {
	for _, prefix := range []string{"", "Hello 1.2/"} {
		id := mustRead(t, helloDMG(prefix, "com.example.hello"))
		if id.Format != FormatDMG || id.Platform != MacOS || strings.Join(id.BundleIDs, ",") != "com.example.hello" {
			t.Fatalf("%s: %+v", prefix, id)
		}
		if id.AppPath != prefix+"Hello.app" || id.Executable != prefix+"Hello.app/Contents/MacOS/Hello" || len(id.InfoPlist) == 0 {
			t.Fatalf("%s: app %q exe %q", prefix, id.AppPath, id.Executable)
		}
		d := id.DMG
		if d == nil || d.Filesystem != "hfs+" || len(d.Partitions) != 2 || !d.Signed || !d.NotaryTicket || !strings.Contains(strings.Join(d.Chunks, ","), "zlib") {
			t.Fatalf("%s: %+v", prefix, d)
		}
	}
}

func TestDMGWithoutAnApp(t *testing.T) {
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: fixture.HFSPlus("Docs", fixture.HFSFile{Name: "README.txt", Data: []byte("hi")})})
	_, err := read(t, img)
	wantReason(t, err, ReasonBundleIDMissing)
}

func TestDMGWithAPFS(t *testing.T) {
	apfs := make([]byte, 8192)
	copy(apfs[32:], "NXSB")
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_APFS : 1)", Data: apfs})
	id, err := read(t, img)
	wantReason(t, err, ReasonAPFSUnsupported)
	if id.DMG == nil || id.DMG.Filesystem != "apfs" {
		t.Fatalf("%+v", id.DMG)
	}
}

func TestDMGWithUnknownChunks(t *testing.T) {
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: helloVolume("", "a.b"),
		Chunk: func(int, []byte) uint32 { return fixture.ChunkUnknown }})
	_, err := read(t, img)
	// The partition cannot even be probed: the reason names the chunks.
	wantReason(t, err, ReasonUnsupportedCompression)
}

func TestDMGBomb(t *testing.T) {
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: helloVolume("", "a.b"), Bomb: 80 << 20})
	_, err := read(t, img)
	wantReason(t, err, ReasonPackageTooLarge)
}

func TestDMGEveryChunkType(t *testing.T) {
	types := []uint32{fixture.ChunkRaw, fixture.ChunkZlib, fixture.ChunkADC, fixture.ChunkZero}
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: helloVolume("", "com.example.hello"), ChunkSectors: 3,
		Chunk: func(i int, b []byte) uint32 {
			if strings.Count(string(b), "\x00") == len(b) {
				return fixture.ChunkZero
			}
			return types[i%3]
		}})
	if id := mustRead(t, img); id.Executable != "Hello.app/Contents/MacOS/Hello" {
		t.Fatalf("%+v", id)
	}
}

// TestSevenZipListsTheApp holds the fixture writers (UDIF around HFS+) to
// 7-Zip's independent DMG and HFS readers.
func TestSevenZipListsTheApp(t *testing.T) {
	tool := testtool.Command(t, "7zz", "Debian: apt-get install 7zip; scripts/test-deps.sh installs it")
	p := filepath.Join(t.TempDir(), "hello.dmg")
	if err := os.WriteFile(p, helloDMG("", "com.example.hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "l", p).CombinedOutput()
	if err != nil {
		t.Fatalf("7zz l: %v\n%s", err, out)
	}
	for _, want := range []string{"Hello.app/Contents/Info.plist", "Hello.app/Contents/MacOS/Hello"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("7zz does not list %s:\n%s", want, out)
		}
	}
	if strings.Contains(strings.ToLower(string(out)), "error") {
		t.Errorf("7zz reports an error:\n%s", out)
	}
	plist, err := exec.Command(tool, "e", "-so", p, "Hello/Hello.app/Contents/Info.plist").Output()
	if err != nil || !strings.Contains(string(plist), "com.example.hello") {
		t.Errorf("7zz e: %v\n%s", err, plist)
	}
}
