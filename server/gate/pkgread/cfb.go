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
//
// Bounds (Limits): the FAT, the directory and every stream read into memory
// are at most MaxTOCBytes; at most MaxEntries directory entries; storages
// nest at most MaxDepth deep; every directory entry belongs to one storage
// (an entry reached twice, a cyclic sibling tree, is malformed); streams
// copied out (CopyStream, for the signature's digest) are bounded by their
// chain, and all of them together by twice the file's size, so
// cross-linked chains cannot multiply the bytes read.
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
	// children lists each storage's entries (by directory index), in
	// sibling-tree order.
	children map[uint32][]uint32
	copied   int64 // bytes CopyStream has produced, all streams together
}

type cfbEntry struct {
	name    string
	typ     uint8 // 1 storage, 2 stream, 5 root
	left    uint32
	right   uint32
	child   uint32
	start   uint32
	size    uint64
	nameLen uint16 // bytes, with the terminating NUL
	raw     []byte // the 128-byte directory entry
}

const (
	cfbEndOfChain = 0xFFFFFFFE
	cfbFree       = 0xFFFFFFFF
	cfbNoStream   = 0xFFFFFFFF
	cfbMaxSector  = 0xFFFFFFFA
)

var (
	errCFB         = errors.New("malformed compound file")
	errCFBTooLarge = errors.New("compound file over a bound")
	errCFBTooDeep  = errors.New("compound file storages nest too deep")
)

// cfbReason is the reason code of an openCFB or stream error.
func cfbReason(err error) Reason {
	switch {
	case errors.Is(err, errCFBTooLarge):
		return ReasonPackageTooLarge
	case errors.Is(err, errCFBTooDeep):
		return ReasonPackageTooDeep
	}
	return ReasonPackageUnreadable
}

func openCFB(r io.ReaderAt, size int64, lim Limits) (*cfb, error) {
	lim = lim.withDefaults()
	maxStream := lim.MaxTOCBytes
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
	if int64(numFAT)*c.sectorSize > maxStream {
		return nil, fmt.Errorf("%w: a FAT of %d sectors, more than %d bytes", errCFBTooLarge, numFAT, maxStream)
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
	if len(dirBytes)/128 > lim.MaxEntries {
		return nil, fmt.Errorf("%w: %d directory entries, more than %d", errCFBTooLarge, len(dirBytes)/128, lim.MaxEntries)
	}
	for off := 0; off+128 <= len(dirBytes); off += 128 {
		e := dirBytes[off : off+128 : off+128]
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
			nameLen: uint16(n), raw: e,
		})
	}
	if len(c.dir) == 0 || c.dir[0].typ != 5 {
		return nil, fmt.Errorf("%w: no root entry", errCFB)
	}
	if shift == 9 {
		for i := range c.dir { // version 3 files leave the high half of sizes undefined
			c.dir[i].size &= 0xFFFFFFFF
		}
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
			return nil, fmt.Errorf("%w: mini stream of %d bytes", errCFBTooLarge, c.dir[0].size)
		}
		c.miniStream, err = c.readChain(c.dir[0].start, c.fat, c.sectorSize, c.readSector, int64(c.dir[0].size))
		if err != nil {
			return nil, fmt.Errorf("mini stream: %w", err)
		}
	}
	if err := c.buildTree(lim.MaxDepth); err != nil {
		return nil, err
	}
	return c, nil
}

// buildTree lists every storage's entries, walking each storage's sibling
// tree (left, right) without recursion. Writers do not all balance the
// tree (a list of right children is common), so its depth is bounded only
// by the entry count; an entry reached twice (a cycle, or two storages
// sharing it) is malformed, which keeps the walk linear.
func (c *cfb) buildTree(maxDepth int) error {
	c.children = map[uint32][]uint32{}
	seen := make([]bool, len(c.dir))
	seen[0] = true
	type storage struct {
		index uint32
		depth int
	}
	storages := []storage{{0, 0}}
	for len(storages) > 0 {
		st := storages[len(storages)-1]
		storages = storages[:len(storages)-1]
		stack := []uint32{c.dir[st.index].child}
		var list []uint32
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if i == cfbNoStream {
				continue
			}
			if int(i) >= len(c.dir) || seen[i] {
				return fmt.Errorf("%w: directory entry %d is out of range or reached twice", errCFB, i)
			}
			seen[i] = true
			e := &c.dir[i]
			// right first, so the left subtree comes out first
			stack = append(stack, e.right, e.left)
			switch e.typ {
			case 1, 2:
				list = append(list, i)
			default:
				return fmt.Errorf("%w: directory entry %d of type %d inside a storage", errCFB, i, e.typ)
			}
			if e.typ == 1 {
				if st.depth+1 > maxDepth {
					return fmt.Errorf("%w: more than %d levels", errCFBTooDeep, maxDepth)
				}
				storages = append(storages, storage{i, st.depth + 1})
			}
		}
		c.children[st.index] = list
	}
	return nil
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
			return nil, fmt.Errorf("%w: stream longer than %d bytes", errCFBTooLarge, c.maxStream)
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

// rootStreams returns the streams directly in the root storage, by name.
func (c *cfb) rootStreams() map[string]*cfbEntry {
	out := map[string]*cfbEntry{}
	for _, i := range c.children[0] {
		if e := &c.dir[i]; e.typ == 2 {
			out[e.name] = e
		}
	}
	return out
}

// readStream returns a stream's bytes, up to maxStream.
func (c *cfb) readStream(e *cfbEntry) ([]byte, error) {
	if int64(e.size) > c.maxStream || e.size > uint64(c.size)*2 {
		return nil, fmt.Errorf("%w: stream %q of %d bytes", errCFBTooLarge, e.name, e.size)
	}
	if e.size < c.miniCutoff {
		return c.readChain(e.start, c.miniFAT, 64, c.readMiniSector, int64(e.size))
	}
	return c.readChain(e.start, c.fat, c.sectorSize, c.readSector, int64(e.size))
}

// copyStream writes a stream's bytes to w one sector at a time, whatever
// its size: nothing but a sector is held. The chain is followed as
// readChain does (a cycle is an error); all streams copied from one file
// together are at most twice its size.
func (c *cfb) copyStream(e *cfbEntry, w io.Writer) error {
	if e.size > uint64(c.size) {
		return fmt.Errorf("%w: stream %q of %d bytes in a file of %d", errCFB, e.name, e.size, c.size)
	}
	if c.copied += int64(e.size); c.copied > 2*c.size {
		return fmt.Errorf("%w: the streams add up to more than twice the file (cross-linked chains)", errCFBTooLarge)
	}
	table, secSize, read := c.fat, c.sectorSize, c.readSector
	if e.size < c.miniCutoff {
		table, secSize, read = c.miniFAT, 64, c.readMiniSector
	}
	buf := make([]byte, secSize)
	left := int64(e.size)
	for s, hops := e.start, 0; left > 0; hops++ {
		if s == cfbEndOfChain || int(s) >= len(table) || hops > len(table) {
			return fmt.Errorf("%w: broken sector chain in %q", errCFB, e.name)
		}
		if err := read(s, buf); err != nil {
			return err
		}
		n := min(left, secSize)
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		left -= n
		s = table[s]
	}
	return nil
}
