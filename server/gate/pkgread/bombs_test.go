package pkgread

import (
	"bytes"
	"context"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// Every bomb class a hostile download can carry is built here, read through
// the public Reader, and must end in its gate_* refusal with the bytes the
// read allocated (runtime.MemStats.TotalAlloc, all allocations made during
// the call, freed or not) under maxBombAlloc: never a panic, a hang, or
// memory that grows with what the bomb claims or unfolds to.
const maxBombAlloc = 16 << 20

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// sparse is a file of size bytes that holds data at its start and at off
// (when set) and zeros elsewhere: a bomb's claimed size costs nothing to
// build.
type sparse struct {
	size  int64
	parts map[int64][]byte
}

func (s sparse) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > s.size-off {
		n = int(s.size - off)
	}
	clear(p[:n])
	for at, b := range s.parts {
		for i := range b {
			if j := at + int64(i) - off; j >= 0 && j < int64(n) {
				p[j] = b[i]
			}
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func bombRead(t *testing.T, ra io.ReaderAt, size int64, want Reason) {
	t.Helper()
	var err error
	alloc := allocated(func() {
		_, err = Reader{}.Read(context.Background(), ra, size)
	})
	if got := ReasonOf(err); got != want {
		t.Fatalf("reason = %q (%v), want %q", got, err, want)
	}
	if alloc > maxBombAlloc {
		t.Fatalf("the refused read allocated %d bytes, more than %d", alloc, maxBombAlloc)
	}
	t.Logf("%s after %d KiB: %v", want, alloc>>10, err)
}

func bombBytes(t *testing.T, b []byte, want Reason) {
	t.Helper()
	bombRead(t, bytes.NewReader(b), int64(len(b)), want)
}

func zippedInfoPlist(plist []byte) []byte {
	return fixture.Zip(fixture.File{Name: "Hello.app/Contents/Info.plist", Data: plist},
		fixture.File{Name: "Hello.app/Contents/MacOS/Hello", Data: []byte("x")})
}

func TestBombZipDecompression(t *testing.T) {
	// 16 MiB of zeros deflate to 16 KiB; refused from the header's size.
	z := zippedInfoPlist(make([]byte, 16<<20))
	bombBytes(t, z, ReasonPackageTooLarge)
	// The same with headers that lie (declaring 100 bytes): inflating
	// stops at the declared size, which archive/zip enforces.
	i := bytes.Index(z, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(z[i+24:], 100)
	bombBytes(t, z, ReasonPackageUnreadable)
}

func TestBombZipEntryCount(t *testing.T) {
	// 100 001 real central-directory records (4.7 MB), each of which
	// archive/zip would turn into a File of a few hundred bytes.
	var b bytes.Buffer
	le := binary.LittleEndian
	const n = 100_001
	for i := 0; i < n; i++ {
		h := make([]byte, 46+1)
		le.PutUint32(h, 0x02014b50)
		le.PutUint16(h[28:], 1)
		h[46] = 'a'
		b.Write(h)
	}
	cd := b.Len()
	end := make([]byte, 22)
	le.PutUint32(end, 0x06054b50)
	le.PutUint16(end[8:], n%65536)
	le.PutUint16(end[10:], n%65536) // what a writer's 16-bit field holds
	le.PutUint32(end[12:], uint32(cd))
	b.Write(end)
	zip := append([]byte("PK\x03\x04"), b.Bytes()...) // local-header magic first, as Detect wants
	// the directory starts at offset 4 now
	le.PutUint32(zip[len(zip)-6:], 4)
	bombBytes(t, zip, ReasonPackageTooLarge)
}

func TestBombZipClaimedCount(t *testing.T) {
	// A zip64 end record claiming 2^40 entries in a 1 GiB file that is
	// otherwise empty: archive/zip would preallocate for the claim.
	le := binary.LittleEndian
	const size = 1 << 30
	rec := make([]byte, 56)
	le.PutUint32(rec, 0x06064b50)
	le.PutUint64(rec[32:], 1<<40)
	le.PutUint64(rec[40:], 46)
	le.PutUint64(rec[48:], 4)
	loc := make([]byte, 20)
	le.PutUint32(loc, 0x07064b50)
	le.PutUint64(loc[8:], size-22-20-56)
	le.PutUint32(loc[16:], 1)
	end := make([]byte, 22)
	le.PutUint32(end, 0x06054b50)
	le.PutUint16(end[10:], 0xffff)
	le.PutUint32(end[12:], 0xffffffff)
	le.PutUint32(end[16:], 0xffffffff)
	tail := append(append(rec, loc...), end...)
	bombRead(t, sparse{size: size, parts: map[int64][]byte{0: []byte("PK\x03\x04"), size - int64(len(tail)): tail}}, size, ReasonPackageTooLarge)
}

func deepXMLPlist(levels int) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">` +
		strings.Repeat("<array>", levels) + strings.Repeat("</array>", levels) + "</plist>")
}

func TestBombPlistDepthXML(t *testing.T) {
	bombBytes(t, zippedInfoPlist(deepXMLPlist(10_000)), ReasonPackageTooDeep)
}

func TestBombPlistDepthText(t *testing.T) {
	bombBytes(t, zippedInfoPlist([]byte(strings.Repeat("(", 10_000)+strings.Repeat(")", 10_000))), ReasonPackageTooDeep)
}

// bplist builds a binary plist from its encoded objects (object 0 on top),
// with 2-byte references and 4-byte offsets.
func bplist(objects ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("bplist00")
	offsets := make([]uint32, len(objects))
	for i, o := range objects {
		offsets[i] = uint32(b.Len())
		b.Write(o)
	}
	table := b.Len()
	for _, o := range offsets {
		binary.Write(&b, binary.BigEndian, o)
	}
	tr := make([]byte, 32)
	tr[6], tr[7] = 4, 2
	binary.BigEndian.PutUint64(tr[8:], uint64(len(objects)))
	binary.BigEndian.PutUint64(tr[24:], uint64(table))
	b.Write(tr)
	return b.Bytes()
}

// bpArray encodes an array of (up to 14) references.
func bpArray(refs ...int) []byte {
	o := []byte{0xA0 | byte(len(refs))}
	for _, r := range refs {
		o = binary.BigEndian.AppendUint16(o, uint16(r))
	}
	return o
}

func TestBombPlistBillionLaughs(t *testing.T) {
	// Ten arrays of ten references to the next: 110 bytes that unfold to
	// 10^10 objects.
	var objs [][]byte
	for i := 0; i < 10; i++ {
		refs := make([]int, 10)
		for j := range refs {
			refs[j] = i + 1
		}
		objs = append(objs, bpArray(refs...))
	}
	objs = append(objs, []byte{0x51, 'x'})
	bombBytes(t, zippedInfoPlist(bplist(objs...)), ReasonPackageTooLarge)
}

func TestBombPlistCycle(t *testing.T) {
	// An array that contains itself (through a second one).
	bombBytes(t, zippedInfoPlist(bplist(bpArray(1), bpArray(0))), ReasonPackageTooDeep)
}

func TestBombPlistDepthBinary(t *testing.T) {
	var objs [][]byte
	for i := 0; i < 10_000; i++ {
		objs = append(objs, bpArray(i+1))
	}
	objs = append(objs, []byte{0x51, 'x'})
	bombBytes(t, zippedInfoPlist(bplist(objs...)), ReasonPackageTooDeep)
}

func TestBombMSIXManifestDepth(t *testing.T) {
	m := `<Package>` + strings.Repeat("<a>", 10_000) + strings.Repeat("</a>", 10_000) + `</Package>`
	bombBytes(t, fixture.Zip(fixture.File{Name: "AppxManifest.xml", Data: []byte(m)}), ReasonPackageTooDeep)
}

func TestBombXARTOCDepth(t *testing.T) {
	leaf := fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"/>`)}
	for i := 0; i < 10_000; i++ {
		leaf = fixture.XARFile{Name: "d", Files: []fixture.XARFile{leaf}}
	}
	bombBytes(t, fixture.XAR(leaf), ReasonPackageTooDeep)
}

func TestBombDMGResourceForkDepth(t *testing.T) {
	x := deepXMLPlist(10_000)
	k := make([]byte, 512)
	copy(k, "koly")
	binary.BigEndian.PutUint64(k[216:], 0)
	binary.BigEndian.PutUint64(k[224:], uint64(len(x)))
	bombBytes(t, append(x, k...), ReasonPackageTooDeep)
}

func TestBombMachOLoadCommands(t *testing.T) {
	h := make([]byte, 32)
	binary.LittleEndian.PutUint32(h, 0xfeedfacf)
	binary.LittleEndian.PutUint32(h[16:], 0xffffffff) // ncmds
	binary.LittleEndian.PutUint32(h[20:], 0xfffffff0) // sizeofcmds
	bombRead(t, sparse{size: 1 << 30, parts: map[int64][]byte{0: h}}, 1<<30, ReasonPackageTooLarge)

	fat := make([]byte, 8)
	binary.BigEndian.PutUint32(fat, 0xcafebabe)
	binary.BigEndian.PutUint32(fat[4:], 19) // Detect's cap on a fat count (Java class files) is 20
	bombBytes(t, append(fat, make([]byte, 19*20)...), ReasonPackageTooLarge)
}

// peResources returns a fixture PE and the file offset of its resource
// directory, for tests that rewrite the tree.
func peResources(t *testing.T) ([]byte, int, int) {
	t.Helper()
	b := fixture.PE(map[string]string{"InternalName": "com.example.hello", "ProductName": "Hello"})
	f, err := pe.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	dd := f.OptionalHeader.(*pe.OptionalHeader64).DataDirectory[2]
	for _, s := range f.Sections {
		if dd.VirtualAddress >= s.VirtualAddress && dd.VirtualAddress < s.VirtualAddress+s.Size {
			off := int(s.Offset + dd.VirtualAddress - s.VirtualAddress)
			return b, off, int(s.Size - (dd.VirtualAddress - s.VirtualAddress))
		}
	}
	t.Fatal("no resource section")
	return nil, 0, 0
}

func TestBombPEResourceCount(t *testing.T) {
	b, off, _ := peResources(t)
	binary.LittleEndian.PutUint16(b[off+12:], 0xffff) // named entries
	binary.LittleEndian.PutUint16(b[off+14:], 0xffff) // ID entries
	bombBytes(t, b, ReasonPackageTooLarge)
}

func TestBombPEResourceSharedTree(t *testing.T) {
	// Eight directories of 8 entries, each entry pointing at the next
	// directory: a full walk of the tree (as saferwall/pe did) visits 8^8
	// entries. The reader follows one path and refuses a fourth level.
	b, off, room := peResources(t)
	const dirs, per = 8, 8
	if need := dirs * (16 + 8*per); need > room {
		t.Fatalf("resource section of %d bytes, need %d", room, need)
	}
	le := binary.LittleEndian
	for d := 0; d < dirs; d++ {
		at := off + d*(16+8*per)
		clear(b[at : at+16+8*per])
		le.PutUint16(b[at+14:], per)
		next := uint32((d+1)*(16+8*per)) | 0x80000000
		for e := 0; e < per; e++ {
			le.PutUint32(b[at+16+8*e:], rtVersion)
			le.PutUint32(b[at+16+8*e+4:], next)
		}
	}
	bombBytes(t, b, ReasonPackageTooDeep)
}

// cfbLayout reads back where a fixture compound file keeps its directory
// and FAT.
func cfbLayout(t *testing.T, b []byte) (dirOff func(i int) int, fatSector uint32, dirStart uint32) {
	t.Helper()
	le := binary.LittleEndian
	dirStart = le.Uint32(b[48:])
	fatSector = le.Uint32(b[76:])
	return func(i int) int { return int(dirStart+1)*512 + 128*i }, fatSector, dirStart
}

func TestBombCFBCyclicFAT(t *testing.T) {
	b := fixture.MSI(map[string]string{"ProductName": "com.example.hello"})
	_, fatSec, dirStart := cfbLayout(t, b)
	// the directory's chain points back at itself
	binary.LittleEndian.PutUint32(b[int(fatSec+1)*512+4*int(dirStart):], dirStart)
	bombBytes(t, b, ReasonPackageUnreadable)
}

func TestBombCFBCyclicSiblingTree(t *testing.T) {
	b := fixture.MSI(map[string]string{"ProductName": "com.example.hello"})
	dirOff, _, _ := cfbLayout(t, b)
	child := binary.LittleEndian.Uint32(b[dirOff(0)+76:])
	binary.LittleEndian.PutUint32(b[dirOff(int(child))+72:], child) // its right sibling is itself
	bombBytes(t, b, ReasonPackageUnreadable)
}

func TestBombCFBClaimedFAT(t *testing.T) {
	// A 1 GiB compound file whose header claims two million FAT sectors
	// through a DIFAT chain that loops on one sector: the FAT it describes
	// would be 1 GiB.
	le := binary.LittleEndian
	h := make([]byte, 512)
	copy(h, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1})
	le.PutUint16(h[26:], 3)
	le.PutUint16(h[28:], 0xFFFE)
	le.PutUint16(h[30:], 9)
	le.PutUint16(h[32:], 6)
	le.PutUint32(h[44:], 2_000_000) // FAT sectors
	le.PutUint32(h[68:], 0)         // DIFAT starts at sector 0 ...
	le.PutUint32(h[72:], 1)
	difat := make([]byte, 512)
	le.PutUint32(difat[508:], 0) // ... and continues at sector 0
	bombRead(t, sparse{size: 1 << 30, parts: map[int64][]byte{0: h, 512: difat}}, 1<<30, ReasonPackageTooLarge)
}

func TestBombsLeaveGoodPackagesAlone(t *testing.T) {
	// The bounds are far above what real packages use.
	info := fixture.InfoPlist("com.example.hello", "Hello", true)
	for name, b := range map[string][]byte{
		"zip": zippedInfoPlist(info),
		"pe":  fixture.PE(map[string]string{"InternalName": "com.example.hello"}),
		"msi": fixture.MSI(map[string]string{"ProductName": "com.example.hello"}),
	} {
		if _, err := read(t, b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_ = fmt.Sprint()
}
