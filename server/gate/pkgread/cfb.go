package pkgread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
)

// cfb is a read-only Compound File Binary ([MS-CFB]) reader, just enough for
// the MSI tables: the root storage's streams. It is written here rather than
// borrowed because every chain it follows comes from hostile bytes: each
// sector chain is bounded by the number of sectors in the file, so a cyclic
// FAT is an error instead of an endless loop.
type cfb struct {
	r          io.ReaderAt
	size       int64
	sectorSize int64
	fat        []uint32
	miniFAT    []uint32
	miniCutoff uint64
	dir        []cfbEntry
	miniStream []byte
	maxStream  int64
}

type cfbEntry struct {
	name  string
	typ   uint8 // 1 storage, 2 stream, 5 root
	left  uint32
	right uint32
	child uint32
	start uint32
	size  uint64
}

const (
	cfbEndOfChain = 0xFFFFFFFE
	cfbFree       = 0xFFFFFFFF
	cfbNoStream   = 0xFFFFFFFF
	cfbMaxSector  = 0xFFFFFFFA
)

var errCFB = errors.New("malformed compound file")

func openCFB(r io.ReaderAt, size, maxStream int64) (*cfb, error) {
	hdr := make([]byte, 512)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errCFB, err)
	}
	le := binary.LittleEndian
	if le.Uint16(hdr[28:]) != 0xFFFE {
		return nil, fmt.Errorf("%w: byte order mark", errCFB)
	}
	shift := le.Uint16(hdr[30:])
	if shift != 9 && shift != 12 {
		return nil, fmt.Errorf("%w: sector shift %d", errCFB, shift)
	}
	if le.Uint16(hdr[32:]) != 6 {
		return nil, fmt.Errorf("%w: mini sector shift", errCFB)
	}
	c := &cfb{r: r, size: size, sectorSize: 1 << shift, miniCutoff: uint64(le.Uint32(hdr[56:])), maxStream: maxStream}
	numSectors := uint32(size / c.sectorSize)

	// The FAT's own sectors: 109 in the header, then the DIFAT chain.
	numFAT := le.Uint32(hdr[44:])
	if numFAT > numSectors {
		return nil, fmt.Errorf("%w: %d FAT sectors in a file of %d", errCFB, numFAT, numSectors)
	}
	fatSectors := make([]uint32, 0, numFAT)
	for i := 0; i < 109 && uint32(len(fatSectors)) < numFAT; i++ {
		fatSectors = append(fatSectors, le.Uint32(hdr[76+4*i:]))
	}
	difat := le.Uint32(hdr[68:])
	buf := make([]byte, c.sectorSize)
	for hops := uint32(0); uint32(len(fatSectors)) < numFAT; hops++ {
		if difat > cfbMaxSector || hops > numSectors {
			return nil, fmt.Errorf("%w: DIFAT chain", errCFB)
		}
		if err := c.readSector(difat, buf); err != nil {
			return nil, err
		}
		per := int(c.sectorSize/4) - 1
		for i := 0; i < per && uint32(len(fatSectors)) < numFAT; i++ {
			fatSectors = append(fatSectors, le.Uint32(buf[4*i:]))
		}
		difat = le.Uint32(buf[4*per:])
	}
	c.fat = make([]uint32, 0, int64(numFAT)*c.sectorSize/4)
	for _, s := range fatSectors {
		if err := c.readSector(s, buf); err != nil {
			return nil, err
		}
		for i := int64(0); i < c.sectorSize/4; i++ {
			c.fat = append(c.fat, le.Uint32(buf[4*i:]))
		}
	}

	dirBytes, err := c.readChain(le.Uint32(hdr[48:]), c.fat, c.sectorSize, c.readSector, -1)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	for off := 0; off+128 <= len(dirBytes); off += 128 {
		e := dirBytes[off : off+128]
		n := int(le.Uint16(e[64:]))
		if n > 64 {
			n = 64
		}
		units := make([]uint16, 0, 32)
		for i := 0; i+1 < n; i += 2 {
			if u := le.Uint16(e[i:]); u != 0 {
				units = append(units, u)
			}
		}
		c.dir = append(c.dir, cfbEntry{
			name: string(utf16.Decode(units)), typ: e[66],
			left: le.Uint32(e[68:]), right: le.Uint32(e[72:]), child: le.Uint32(e[76:]),
			start: le.Uint32(e[116:]), size: le.Uint64(e[120:]),
		})
	}
	if len(c.dir) == 0 || c.dir[0].typ != 5 {
		return nil, fmt.Errorf("%w: no root entry", errCFB)
	}
	if shift == 9 {
		c.dir[0].size &= 0xFFFFFFFF // version 3 files leave the high half undefined
	}

	miniFATBytes, err := c.readChain(le.Uint32(hdr[60:]), c.fat, c.sectorSize, c.readSector, -1)
	if err != nil {
		return nil, fmt.Errorf("mini FAT: %w", err)
	}
	for i := 0; i+4 <= len(miniFATBytes); i += 4 {
		c.miniFAT = append(c.miniFAT, le.Uint32(miniFATBytes[i:]))
	}
	if c.dir[0].size > 0 {
		if int64(c.dir[0].size) > maxStream {
			return nil, fmt.Errorf("%w: mini stream of %d bytes", errCFB, c.dir[0].size)
		}
		c.miniStream, err = c.readChain(c.dir[0].start, c.fat, c.sectorSize, c.readSector, int64(c.dir[0].size))
		if err != nil {
			return nil, fmt.Errorf("mini stream: %w", err)
		}
	}
	return c, nil
}

func (c *cfb) readSector(s uint32, buf []byte) error {
	if s > cfbMaxSector {
		return fmt.Errorf("%w: sector id %#x", errCFB, s)
	}
	off := (int64(s) + 1) * c.sectorSize
	if off+int64(len(buf)) > c.size {
		return fmt.Errorf("%w: sector %d beyond the end of the file", errCFB, s)
	}
	_, err := c.r.ReadAt(buf, off)
	return err
}

func (c *cfb) readMiniSector(s uint32, buf []byte) error {
	off := int64(s) * 64
	if off+64 > int64(len(c.miniStream)) {
		return fmt.Errorf("%w: mini sector %d beyond the mini stream", errCFB, s)
	}
	copy(buf, c.miniStream[off:off+64])
	return nil
}

// readChain concatenates the sectors of a chain, stopping at want bytes (all
// of the chain when want < 0), never longer than maxStream, and failing on a
// chain longer than the table (a cycle).
func (c *cfb) readChain(start uint32, table []uint32, secSize int64, read func(uint32, []byte) error, want int64) ([]byte, error) {
	var out []byte
	buf := make([]byte, secSize)
	for s, hops := start, 0; s != cfbEndOfChain; hops++ {
		if want >= 0 && int64(len(out)) >= want {
			break
		}
		if s == cfbFree && want < 0 && len(out) == 0 {
			break // an absent optional structure (no mini FAT)
		}
		if int(s) >= len(table) || hops > len(table) {
			return nil, fmt.Errorf("%w: broken sector chain", errCFB)
		}
		if int64(len(out))+secSize > c.maxStream+secSize {
			return nil, fmt.Errorf("%w: stream longer than %d bytes", errCFB, c.maxStream)
		}
		if err := read(s, buf); err != nil {
			return nil, err
		}
		out = append(out, buf...)
		s = table[s]
	}
	if want >= 0 {
		if int64(len(out)) < want {
			return nil, fmt.Errorf("%w: stream shorter than its size", errCFB)
		}
		out = out[:want]
	}
	return out, nil
}

// rootStreams returns the streams directly in the root storage, by name,
// walking the sibling tree with a visited set (the tree is hostile too).
func (c *cfb) rootStreams() map[string]*cfbEntry {
	out := map[string]*cfbEntry{}
	seen := map[uint32]bool{}
	var walk func(i uint32, depth int)
	walk = func(i uint32, depth int) {
		if i == cfbNoStream || int(i) >= len(c.dir) || seen[i] || depth > len(c.dir) {
			return
		}
		seen[i] = true
		e := &c.dir[i]
		if e.typ == 2 {
			out[e.name] = e
		}
		walk(e.left, depth+1)
		walk(e.right, depth+1)
	}
	walk(c.dir[0].child, 0)
	return out
}

// readStream returns a stream's bytes, up to maxStream.
func (c *cfb) readStream(e *cfbEntry) ([]byte, error) {
	if int64(e.size) > c.maxStream || e.size > uint64(c.size)*2 {
		return nil, fmt.Errorf("%w: stream %q of %d bytes", errCFB, e.name, e.size)
	}
	if e.size < c.miniCutoff {
		return c.readChain(e.start, c.miniFAT, 64, c.readMiniSector, int64(e.size))
	}
	return c.readChain(e.start, c.fat, c.sectorSize, c.readSector, int64(e.size))
}
