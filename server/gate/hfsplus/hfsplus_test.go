package hfsplus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

func appFiles() []fixture.HFSFile {
	exe := make([]byte, 10000)
	rand.New(rand.NewSource(2)).Read(exe)
	frag := make([]byte, 25*4096-100)
	rand.New(rand.NewSource(3)).Read(frag)
	return []fixture.HFSFile{
		{Name: "Hello.app/Contents/Info.plist", Data: fixture.InfoPlist("com.example.hello", "Hello", false)},
		{Name: "Hello.app/Contents/MacOS/Hello", Data: exe, Mode: 0o100755},
		{Name: "Hello.app/Contents/Resources/", Mode: 0},
		{Name: "Applications", Data: []byte("/Applications"), Mode: 0o120755},
		{Name: ".background/bg.png", Data: bytes.Repeat([]byte("png"), 3000)},
		// 25 blocks in 20 runs: 8 in the catalog record, 12 in two extents
		// overflow records.
		{Name: "Hello.app/Contents/Resources/fragmented.bin", Data: frag, Extents: 20},
	}
}

func openVolume(t *testing.T, img []byte) *Volume {
	t.Helper()
	v, err := Open(bytes.NewReader(img), int64(len(img)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFixtureVolumeIsAnFS(t *testing.T) {
	files := appFiles()
	v := openVolume(t, fixture.HFSPlus("Hello", files...))
	if v.Name != "Hello" {
		t.Errorf("volume name %q", v.Name)
	}
	if err := fstest.TestFS(v, "Hello.app/Contents/Info.plist", "Hello.app/Contents/MacOS/Hello", ".background/bg.png"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name, "/") || f.Mode == 0o120755 {
			continue
		}
		got, err := fs.ReadFile(v, f.Name)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s: %d bytes, %v", f.Name, len(got), err)
		}
	}
	fi, err := fs.Stat(v, "Applications")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Applications: %v, %v (want a symlink)", fi, err)
	}
	if f, err := v.Open("Hello.app/Contents/Resources/fragmented.bin"); err != nil || len(f.(*File).data.(*forkFile).extents) != 20 {
		t.Errorf("the fragmented file: %v (want 20 extents, 12 from the overflow tree)", err)
	}
	// HFS+ names compare without case.
	if _, err := fs.Stat(v, "hello.app/contents/info.plist"); err != nil {
		t.Errorf("a case-insensitive lookup: %v", err)
	}
}

// Transparently compressed files (decmpfs zlib, LZVN and LZFSE, inline and
// in the resource fork) read as their data; sleuthkit's icat agrees (it
// reads zlib and LZVN, not LZFSE).
func TestCompressedFiles(t *testing.T) {
	for name, codec := range map[string]uint32{"zlib": 0, "lzvn": fixture.DecmpfsLZVN, "lzfse": fixture.DecmpfsLZFSE} {
		t.Run(name, func(t *testing.T) { compressedFiles(t, codec) })
	}
}

func compressedFiles(t *testing.T, codec uint32) {
	big := make([]byte, 200_000)
	rand.New(rand.NewSource(4)).Read(big[:100_000]) // half random, half zeros: several blocks
	small := fixture.InfoPlist("com.example.hello", "Hello", false)
	if codec == fixture.DecmpfsLZVN { // the fixture's LZVN encodes literals: keep it inline
		small = small[:min(len(small), 2500)]
	}
	img := fixture.HFSPlus("C",
		fixture.HFSFile{Name: "A.app/Contents/Info.plist", Data: small, Compress: true, CompressWith: codec},
		fixture.HFSFile{Name: "A.app/Contents/MacOS/A", Data: big, Compress: true, CompressWith: codec, Mode: 0o100755},
		fixture.HFSFile{Name: "A.app/Contents/Resources/plain.txt", Data: []byte("plain")})
	v := openVolume(t, img)
	for name, want := range map[string][]byte{"A.app/Contents/Info.plist": small, "A.app/Contents/MacOS/A": big, "A.app/Contents/Resources/plain.txt": []byte("plain")} {
		got, err := fs.ReadFile(v, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
		if fi, err := fs.Stat(v, name); err != nil || fi.Size() != int64(len(want)) {
			t.Errorf("%s: Stat %v, %v", name, fi, err)
		}
	}
	if codec == fixture.DecmpfsLZFSE {
		return
	}
	path := filepath.Join(t.TempDir(), "c.img")
	os.WriteFile(path, img, 0o644)
	out, err := exec.Command(needTool(t, "fls"), "-r", "-p", "-f", "hfs", path).CombinedOutput()
	if err != nil {
		t.Fatalf("fls: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(string(out), "\n") {
		_, p, ok := strings.Cut(line, ":\t")
		if !ok || (p != "A.app/Contents/Info.plist" && p != "A.app/Contents/MacOS/A") {
			continue
		}
		inode := strings.TrimSuffix(strings.Fields(line)[1], ":")
		got, err := exec.Command(needTool(t, "icat"), "-f", "hfs", path, inode).Output()
		want, _ := fs.ReadFile(v, p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("icat %s: %d bytes, %v", p, len(got), err)
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("fls listed %d of the 2 compressed files:\n%s", checked, out)
	}
}

func TestHostileCompressedFiles(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 200_000)
	rand.New(rand.NewSource(5)).Read(big[:20_000])
	img := fixture.HFSPlus("C", fixture.HFSFile{Name: "A", Data: big, Compress: true})
	i := bytes.Index(img, []byte("fpmc"))
	var e *Error
	// the decmpfs header's type: 0x99 is none the gate knows
	unknown := bytes.Clone(img)
	unknown[i+4] = 0x99
	_, err := fs.ReadFile(openVolume(t, unknown), "A")
	if !errors.As(err, &e) || e.Reason != ReasonUnsupportedCompression {
		t.Fatalf("type 0x99: %v", err)
	}
	// a zlib resource fork read as LZVN's offset table (type 8)
	lzvn := bytes.Clone(img)
	lzvn[i+4] = 8
	_, err = fs.ReadFile(openVolume(t, lzvn), "A")
	if !errors.As(err, &e) || e.Reason != ReasonUnreadable {
		t.Fatalf("type 8 over a zlib fork: %v", err)
	}
	// an uncompressed size of 2^40
	huge := bytes.Clone(img)
	huge[i+8+5] = 1
	_, err = fs.ReadFile(openVolume(t, huge), "A")
	if !errors.As(err, &e) || e.Reason != ReasonTooLarge {
		t.Fatalf("2^40 bytes: %v", err)
	}
	// the first block's offset pointing past the resource fork
	table := bytes.Index(img, []byte{4, 0, 0, 0, 36, 0, 0, 0})
	if table < 0 {
		t.Fatal("no block table in the fixture")
	}
	past := bytes.Clone(img)
	past[table+6] = 0x7f
	_, err = fs.ReadFile(openVolume(t, past), "A")
	if !errors.As(err, &e) || e.Reason != ReasonUnreadable {
		t.Fatalf("a block past the fork: %v", err)
	}
}

// catalogLeaf is the byte offset of the fixture's catalog leaf node.
const catalogLeaf = 6*4096 + 8192

func TestHostileCatalogs(t *testing.T) {
	good := fixture.HFSPlus("Hello", appFiles()...)
	be := binary.BigEndian
	for name, c := range map[string]struct {
		mut    func(b []byte)
		reason string
	}{
		"leaf chain loops": {func(b []byte) { be.PutUint32(b[catalogLeaf:], 1) }, ""},
		"record outside the node": {func(b []byte) {
			be.PutUint16(b[catalogLeaf+8192-4:], 9000)
		}, ReasonUnreadable},
		"too many records":   {func(b []byte) { be.PutUint16(b[catalogLeaf+10:], 5000) }, ReasonUnreadable},
		"tree too deep":      {func(b []byte) { be.PutUint16(b[6*4096+14:], 100) }, ReasonTooDeep},
		"root past the tree": {func(b []byte) { be.PutUint32(b[6*4096+16:], 99) }, ReasonUnreadable},
		"bad node size":      {func(b []byte) { be.PutUint16(b[6*4096+14+18:], 1000) }, ReasonUnreadable},
		"not a volume":       {func(b []byte) { b[1024] = 'X' }, ReasonUnreadable},
	} {
		t.Run(name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			c.mut(b)
			v, err := Open(bytes.NewReader(b), int64(len(b)), Limits{})
			if err == nil {
				_, err = fs.ReadFile(v, "Hello.app/Contents/Info.plist")
				if c.reason == "" { // only has to end
					return
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != c.reason {
				t.Fatalf("error %v, want %s", err, c.reason)
			}
		})
	}
	t.Run("node reads bounded", func(t *testing.T) {
		v, err := Open(bytes.NewReader(good), int64(len(good)), Limits{MaxNodeReads: 3})
		if err == nil {
			_, err = fs.ReadFile(v, "Hello.app/Contents/MacOS/Hello")
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonTooLarge {
			t.Fatalf("error %v, want %s", err, ReasonTooLarge)
		}
	})
}

// needTool finds an independent reader installed by scripts/test-deps.sh.
func needTool(t *testing.T, name string) string {
	t.Helper()
	return testtool.Command(t, name, "scripts/test-deps.sh installs it")
}

// xorrisoVolume builds an HFS+ volume with xorrisofs from files, as the
// partition a disk image would hold (the ISO's APM partition at 64 KiB).
func xorrisoVolume(t *testing.T, files []fixture.HFSFile) []byte {
	tool := needTool(t, "xorrisofs")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, f := range files {
		p := filepath.Join(src, f.Name)
		if strings.HasSuffix(f.Name, "/") {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if f.Mode == 0o120755 {
			os.Symlink(string(f.Data), p)
			continue
		}
		os.WriteFile(p, f.Data, 0o644)
	}
	iso := filepath.Join(dir, "v.iso")
	if b, err := exec.Command(tool, "-quiet", "-hfsplus", "-V", "Hello", "-o", iso, src).CombinedOutput(); err != nil {
		t.Fatalf("xorrisofs: %v\n%s", err, b)
	}
	b, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	return b[65536:]
}

// TestVolumesAgreeWithSleuthkit reads an xorrisofs volume and one of
// fixture.HFSPlus, and holds our listing and file bytes to sleuthkit's fls.
func TestVolumesAgreeWithSleuthkit(t *testing.T) {
	files := appFiles()
	for name, vol := range map[string]func() []byte{
		"xorrisofs": func() []byte { return xorrisoVolume(t, files) },
		"fixture":   func() []byte { return fixture.HFSPlus("Hello", files...) },
	} {
		t.Run(name, func(t *testing.T) {
			vol := vol()
			v := openVolume(t, vol)
			for _, f := range files {
				if strings.HasSuffix(f.Name, "/") || f.Mode == 0o120755 {
					continue
				}
				got, err := fs.ReadFile(v, f.Name)
				if err != nil || !bytes.Equal(got, f.Data) {
					t.Errorf("%s: %d bytes, %v", f.Name, len(got), err)
				}
			}
			var ours []string
			fs.WalkDir(v, ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != "." {
					ours = append(ours, p)
				}
				return err
			})
			fls := needTool(t, "fls")
			img := filepath.Join(t.TempDir(), "hfs.img")
			os.WriteFile(img, vol, 0o644)
			out, err := exec.Command(fls, "-r", "-p", "-f", "hfs", img).CombinedOutput()
			if err != nil {
				t.Fatalf("fls: %v\n%s", err, out)
			}
			var theirs []string
			icat := needTool(t, "icat")
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasSuffix(line, "\tHello.app/Contents/Resources/fragmented.bin") && name == "fixture" {
					// sleuthkit follows the extents overflow tree too
					inode := strings.TrimSuffix(strings.Fields(line)[1], ":")
					got, err := exec.Command(icat, "-f", "hfs", img, inode).Output()
					want, _ := fs.ReadFile(v, "Hello.app/Contents/Resources/fragmented.bin")
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("icat of the fragmented file: %d bytes, %v", len(got), err)
					}
				}
				// "r/r 20:	Hello.app/Contents/Info.plist"
				_, p, ok := strings.Cut(line, ":\t")
				if !ok || strings.HasPrefix(p, "$") || strings.HasPrefix(p, "^^^") || strings.Contains(p, "HFS+ Private Data") {
					continue
				}
				theirs = append(theirs, p)
			}
			sort.Strings(ours)
			sort.Strings(theirs)
			if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
				t.Fatalf("our listing:\n%s\nfls:\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
			}
		})
	}
}

func FuzzHFSPlus(f *testing.F) {
	f.Add(fixture.HFSPlus("Hello", appFiles()...))
	f.Add(fixture.HFSPlus("C", fixture.HFSFile{Name: "A.app/Contents/Info.plist", Data: []byte("<plist/>"), Compress: true},
		fixture.HFSFile{Name: "A.app/Contents/MacOS/A", Data: bytes.Repeat([]byte("exe"), 50_000), Compress: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Open(bytes.NewReader(b), int64(len(b)), Limits{MaxNodeReads: 10000})
		if err != nil {
			return
		}
		fs.WalkDir(v, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				fs.ReadFile(v, p)
			}
			return nil
		})
	})
}

// Hard links read as their targets: a file link names an iNode file of the
// private data folder, a folder link a dir_ folder of the private directory
// folder; a missing target, or a link to a link, is unreadable.
func TestHardLinks(t *testing.T) {
	exe := bytes.Repeat([]byte("executable "), 500)
	const files, dirs = "\x00\x00\x00\x00HFS+ Private Data/", ".HFS+ Private Directory Data\r/"
	img := fixture.HFSPlus("Links",
		fixture.HFSFile{Name: "Hello.app/Contents/MacOS/Hello", HardLink: 41, Mode: 0o100755},
		fixture.HFSFile{Name: "Other.app/Contents/MacOS/Hello", HardLink: 41, Mode: 0o100755},
		fixture.HFSFile{Name: files + "iNode41", Data: exe, Mode: 0o100755},
		fixture.HFSFile{Name: "Hello.app/Contents/Frameworks", HardLink: 7, DirLink: true},
		fixture.HFSFile{Name: dirs + "dir_7/Kit.framework/Kit", Data: []byte("kit")},
		fixture.HFSFile{Name: "missing", HardLink: 99},
		fixture.HFSFile{Name: "loop", HardLink: 42},
		fixture.HFSFile{Name: files + "iNode42", HardLink: 41},
	)
	v := openVolume(t, img)
	for _, p := range []string{"Hello.app/Contents/MacOS/Hello", "Other.app/Contents/MacOS/Hello"} {
		b, err := fs.ReadFile(v, p)
		if err != nil || !bytes.Equal(b, exe) {
			t.Fatalf("%s: %v (%d bytes)", p, err, len(b))
		}
	}
	if b, err := fs.ReadFile(v, "Hello.app/Contents/Frameworks/Kit.framework/Kit"); err != nil || string(b) != "kit" {
		t.Fatalf("through a folder hard link: %q, %v", b, err)
	}
	des, err := fs.ReadDir(v, "Hello.app/Contents")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range des {
		if d.Name() == "Frameworks" && !d.IsDir() || d.Name() == "MacOS" && !d.IsDir() {
			t.Fatalf("%s lists as %v", d.Name(), d.Type())
		}
	}
	fi, err := fs.Stat(v, "Hello.app/Contents/MacOS/Hello")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(exe)) || fi.Name() != "Hello" {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	for _, p := range []string{"missing", "loop"} {
		_, err := fs.ReadFile(v, p)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonUnreadable {
			t.Fatalf("%s: %v", p, err)
		}
	}
}
