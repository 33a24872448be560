package udif

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/internal/testtool"
)

// disk is 40 sectors of random bytes, 8 of zeros, then 20 of text: each
// region in its own chunk when chunks are 4 sectors.
func disk() []byte {
	rnd := rand.New(rand.NewSource(1))
	b := make([]byte, 40*512)
	rnd.Read(b)
	b = append(b, make([]byte, 8*512)...)
	return append(b, bytes.Repeat([]byte("hello, disk image "), 20*512/18+1)[:20*512]...)
}

func open(t *testing.T, img []byte, lim Limits) *Image {
	t.Helper()
	im, err := Open(bytes.NewReader(img), int64(len(img)), lim)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func wantReason(t *testing.T, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Reason != want {
		t.Fatalf("error %v, want reason %s", err, want)
	}
}

func readAll(t *testing.T, p *Partition) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(p, 0, p.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEveryChunkTypeDecodes(t *testing.T) {
	d := disk()
	types := []uint32{fixture.ChunkRaw, fixture.ChunkZlib, fixture.ChunkADC}
	img := fixture.UDIF(nil,
		fixture.UDIFPartition{Name: "Apple_partition_map", Data: make([]byte, 1024)},
		fixture.UDIFPartition{Name: "disk image (Apple_HFS : 1)", Data: d, ChunkSectors: 4, Chunk: func(i int, b []byte) uint32 {
			if bytes.Count(b, []byte{0}) == len(b) {
				return fixture.ChunkZero
			}
			return types[i%len(types)]
		}})
	im := open(t, img, Limits{CacheChunks: 1})
	if len(im.Partitions) != 2 || im.Partitions[1].Name != "disk image (Apple_HFS : 1)" || im.Partitions[1].FirstSector != 2 {
		t.Fatalf("partitions %+v", im.Partitions)
	}
	p := im.Partitions[1]
	if got := readAll(t, p); !bytes.Equal(got, d) {
		t.Fatal("the decoded partition differs from the disk written")
	}
	if got := p.ChunkTypes(); len(got) != 4 {
		t.Fatalf("chunk types %v, want adc, ignore, raw, zlib", got)
	}
	// A read across chunk boundaries, from the middle of one.
	b := make([]byte, 3000)
	if _, err := p.ReadAt(b, 7*512+100); err != nil || !bytes.Equal(b, d[7*512+100:7*512+3100]) {
		t.Fatalf("ReadAt across chunks: %v", err)
	}
	if n, err := p.ReadAt(make([]byte, 10), p.Size()-4); n != 4 || err != io.EOF {
		t.Fatalf("a read past the end: %d, %v", n, err)
	}
}

func TestDmg2imgAgrees(t *testing.T) {
	tool := testtool.Command(t, "dmg2img", "Debian: apt-get install dmg2img; scripts/test-deps.sh installs it")
	d := disk()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "a.dmg"), filepath.Join(dir, "a.img")
	if err := os.WriteFile(in, fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: d, ChunkSectors: 8}), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, in, out).CombinedOutput(); err != nil {
		t.Fatalf("dmg2img: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(in)
	if got := readAll(t, open(t, raw, Limits{}).Partitions[0]); !bytes.Equal(got, want) {
		t.Fatalf("our decoding (%d bytes) differs from dmg2img's (%d bytes)", len(got), len(want))
	}
}

func TestUnknownChunksAreRefused(t *testing.T) {
	img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: disk(), Chunk: func(int, []byte) uint32 { return fixture.ChunkUnknown }})
	p := open(t, img, Limits{}).Partitions[0]
	_, err := p.ReadAt(make([]byte, 512), 0)
	wantReason(t, err, ReasonUnsupportedCompression)
}

// bigDisk is 600 KiB: random, zeros, text and a repeat of the random part
// (matches reaching back across LZFSE blocks), in 256 KiB chunks.
func bigDisk() []byte {
	d := disk()
	rnd := make([]byte, 150<<10)
	rand.New(rand.NewSource(2)).Read(rnd)
	b := append(append([]byte(nil), rnd...), make([]byte, 100<<10)...)
	b = append(b, bytes.Repeat(d[40*512:], 10)...)
	b = append(b, rnd...)
	return append(b, make([]byte, 600<<10-len(b))...)
}

// LZFSE (ULFO) and LZMA (ULMO) chunks decode to the disk written, and
// 7-Zip, an independent reader of both, decodes the same images to the same
// bytes (the LZFSE chunks come from the fixture's own encoder: no other
// LZFSE encoder is at hand here).
func TestLZFSEAndLZMAChunks(t *testing.T) {
	d := bigDisk()
	for _, c := range []struct {
		name string
		typ  uint32
	}{{"lzfse", fixture.ChunkLZFSE}, {"lzma", fixture.ChunkLZMA}} {
		t.Run(c.name, func(t *testing.T) {
			img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: d, ChunkSectors: 512, Chunk: func(i int, b []byte) uint32 {
				if i == 1 {
					return fixture.ChunkZlib // mixed with another type, as hdiutil never does but may
				}
				return c.typ
			}})
			p := open(t, img, Limits{CacheChunks: 1}).Partitions[0]
			if got := readAll(t, p); !bytes.Equal(got, d) {
				t.Fatal("the decoded partition differs from the disk written")
			}
			if got := p.ChunkTypes(); len(got) != 2 || got[0] != c.name && got[1] != c.name {
				t.Fatalf("chunk types %v", got)
			}
			tool := testtool.Command(t, "7zz", "Debian: apt-get install 7zip; scripts/test-deps.sh installs it")
			path := filepath.Join(t.TempDir(), "a.dmg")
			if err := os.WriteFile(path, img, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tool, "e", "-so", "-tdmg", path, "0.hfs").Output()
			if err != nil || !bytes.Equal(out, d) {
				t.Fatalf("7zz decodes %d bytes (%v), equal: %v", len(out), err, bytes.Equal(out, d))
			}
		})
	}
}

func TestDamagedLZFSEAndLZMAChunksAreUnreadable(t *testing.T) {
	for _, typ := range []uint32{fixture.ChunkLZFSE, fixture.ChunkLZMA} {
		good := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: disk(), ChunkSectors: 16, Chunk: func(int, []byte) uint32 { return typ }})
		for name, mut := range map[string]func([]byte){
			"flipped bytes": func(b []byte) { b[40] ^= 0xff; b[41] ^= 0x55; b[300] ^= 0x0f },
			"header":        func(b []byte) { b[1] ^= 0xff },
		} {
			t.Run(ChunkTypeName(typ)+" "+name, func(t *testing.T) {
				b := append([]byte(nil), good...)
				mut(b)
				p := open(t, b, Limits{}).Partitions[0]
				_, err := io.ReadAll(io.NewSectionReader(p, 0, p.Size()))
				wantReason(t, err, ReasonUnreadable)
			})
		}
	}
}

func TestBombsAreRefused(t *testing.T) {
	zeros := make([]byte, 8<<20)
	t.Run("expansion ratio", func(t *testing.T) {
		// zlib of 8 MiB of zeros is ~8 KiB: a ratio over 1000.
		img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: zeros, ChunkSectors: 16384, Chunk: func(int, []byte) uint32 { return fixture.ChunkZlib }})
		_, err := Open(bytes.NewReader(img), int64(len(img)), Limits{MaxRatio: 100})
		wantReason(t, err, ReasonTooLarge)
	})
	t.Run("chunk size", func(t *testing.T) {
		img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: zeros, ChunkSectors: 16384})
		_, err := Open(bytes.NewReader(img), int64(len(img)), Limits{MaxChunkBytes: 1 << 20})
		wantReason(t, err, ReasonTooLarge)
	})
	t.Run("total decompressed", func(t *testing.T) {
		img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: disk(), ChunkSectors: 4, Chunk: func(int, []byte) uint32 { return fixture.ChunkZlib }})
		p := open(t, img, Limits{MaxDecompressedBytes: 16 << 10, CacheChunks: 1}).Partitions[0]
		_, err := io.ReadAll(io.NewSectionReader(p, 0, p.Size()))
		wantReason(t, err, ReasonTooLarge)
	})
	t.Run("chunk count", func(t *testing.T) {
		img := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: disk(), ChunkSectors: 1})
		_, err := Open(bytes.NewReader(img), int64(len(img)), Limits{MaxChunks: 10})
		wantReason(t, err, ReasonTooLarge)
	})
}

func TestDamagedImagesAreUnreadable(t *testing.T) {
	good := fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: disk(), ChunkSectors: 4})
	for name, mut := range map[string]func([]byte) []byte{
		"truncated":    func(b []byte) []byte { return b[100:] },
		"no trailer":   func(b []byte) []byte { return b[:len(b)-1] },
		"xml past end": func(b []byte) []byte { b[len(b)-512+216] = 0x7f; return b },
		"broken zlib":  func(b []byte) []byte { b[10] ^= 0xff; b[11] ^= 0xff; b[12] ^= 0xff; return b },
	} {
		t.Run(name, func(t *testing.T) {
			b := mut(append([]byte(nil), good...))
			im, err := Open(bytes.NewReader(b), int64(len(b)), Limits{})
			if err == nil {
				_, err = io.ReadAll(io.NewSectionReader(im.Partitions[0], 0, im.Partitions[0].Size()))
			}
			wantReason(t, err, ReasonUnreadable)
		})
	}
}

func TestADC(t *testing.T) {
	// literal "abc", then a 2-byte copy of length 3 at distance 3 ("abc"),
	// then a 3-byte copy of 4 bytes at distance 1 ("bcbc").
	src := []byte{0x82, 'a', 'b', 'c', 0x00, 2, 0x40, 0, 1}
	dst := make([]byte, 10)
	n, err := decodeADC(dst, src)
	if err != nil || string(dst[:n]) != "abcabcbcbc" {
		t.Fatalf("decodeADC = %q, %v", dst[:n], err)
	}
	if _, err := decodeADC(make([]byte, 8), []byte{0x00, 5}); err == nil {
		t.Fatal("a copy from before the start decoded")
	}
}

func FuzzUDIF(f *testing.F) {
	f.Add(fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_HFS : 0)", Data: disk(), ChunkSectors: 16}))
	f.Add(fixture.UDIF(fixture.Superblob(true), fixture.UDIFPartition{Name: "p", Data: disk(), ChunkSectors: 4, Chunk: func(i int, b []byte) uint32 {
		return []uint32{fixture.ChunkRaw, fixture.ChunkADC, fixture.ChunkZero}[i%3]
	}}))
	for _, typ := range []uint32{fixture.ChunkLZFSE, fixture.ChunkLZMA} {
		f.Add(fixture.UDIF(nil, fixture.UDIFPartition{Name: "p", Data: disk()[:16<<10], ChunkSectors: 16, Chunk: func(int, []byte) uint32 { return typ }}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := Open(bytes.NewReader(b), int64(len(b)), Limits{MaxDecompressedBytes: 8 << 20, MaxChunkBytes: 1 << 20})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		for _, p := range im.Partitions {
			buf := make([]byte, 4096)
			for off := int64(0); off < min(p.Size(), 256<<10); off += 4096 {
				if _, err := p.ReadAt(buf, off); err != nil && err != io.EOF {
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("a read error without a reason: %v", err)
					}
					break
				}
			}
		}
	})
}
