// Package cfb reads Compound File Binary files ([MS-CFB]: MSI databases,
// their signatures' streams) from hostile bytes, within explicit bounds.
// It is the gate's own rather than relic's lib/comdoc because every chain
// it follows comes from the file: relic's follows a FAT chain until it
// ends, so a cyclic FAT loops forever.
package cfb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
)

// File is a read-only compound file: its storages and streams. Every
// sector chain is bounded by the number of sectors in the file, so a
// cyclic FAT is an error instead of an endless loop.
//
// Bounds (Limits): the FAT, the directory and every stream read into memory
// are at most MaxBytes; at most MaxEntries directory entries; storages
// nest at most MaxDepth deep; every directory entry belongs to one storage
// (an entry reached twice, a cyclic sibling tree, is malformed); streams
// copied out (CopyStream, for a signature's digest) are bounded by their
// chain, and all of them together by twice the file's size, so
// cross-linked chains cannot multiply the bytes read.
type File struct {
	r          io.ReaderAt
	size       int64
	sectorSize int64
	fat        []uint32
	miniFAT    []uint32
	miniCutoff uint64
	dir        []Entry
	miniStream []byte
	maxStream  int64
	// children lists each storage's entries (by directory index), in
	// sibling-tree order.
	children map[uint32][]uint32
	copied   int64 // bytes CopyStream has produced, all streams together
}

// Entry is a directory entry: a storage, a stream, or the root storage.
type Entry struct {
	Name    string
	Type    uint8 // TypeStorage, TypeStream, TypeRoot
	left    uint32
	right   uint32
	child   uint32
	start   uint32
	Size    uint64
	nameLen uint16 // bytes, with the terminating NUL
	index   uint32
	raw     []byte // the 128-byte directory entry
}

const (
	cfbEndOfChain = 0xFFFFFFFE
	cfbFree       = 0xFFFFFFFF
	cfbNoStream   = 0xFFFFFFFF
	cfbMaxSector  = 0xFFFFFFFA
)

// Entry types.
const (
	TypeStorage = 1
	TypeStream  = 2
	TypeRoot    = 5
)

// The errors of Open and the stream readers wrap one of these.
var (
	ErrMalformed = errors.New("malformed compound file")
	ErrTooLarge  = errors.New("compound file over a bound")
	ErrTooDeep   = errors.New("compound file storages nest too deep")
)

// Limits bound a read; a zero field means its default.
type Limits struct {
	MaxBytes   int64 // the FAT, the directory, the mini stream, a stream read whole; 16 MiB
	MaxEntries int   // directory entries; 100 000
	MaxDepth   int   // storage nesting; 64
}

// Open reads the header, the FAT, the directory and the mini stream, and
// checks the storage tree.
func Open(r io.ReaderAt, size int64, lim Limits) (*File, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = 16 << 20
	}
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = 100_000
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = 64
	}
	maxStream := lim.MaxBytes
	hdr := make([]byte, 512)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	le := binary.LittleEndian
	if le.Uint16(hdr[28:]) != 0xFFFE {
		return nil, fmt.Errorf("%w: byte order mark", ErrMalformed)
	}
	shift := le.Uint16(hdr[30:])
	if shift != 9 && shift != 12 {
		return nil, fmt.Errorf("%w: sector shift %d", ErrMalformed, shift)
	}
	if le.Uint16(hdr[32:]) != 6 {
		return nil, fmt.Errorf("%w: mini sector shift", ErrMalformed)
	}
	c := &File{r: r, size: size, sectorSize: 1 << shift, miniCutoff: uint64(le.Uint32(hdr[56:])), maxStream: maxStream}
	numSectors := uint32(size / c.sectorSize)

	// The FAT's own sectors: 109 in the header, then the DIFAT chain.
	numFAT := le.Uint32(hdr[44:])
	if numFAT > numSectors {
		return nil, fmt.Errorf("%w: %d FAT sectors in a file of %d", ErrMalformed, numFAT, numSectors)
	}
	if int64(numFAT)*c.sectorSize > maxStream {
		return nil, fmt.Errorf("%w: a FAT of %d sectors, more than %d bytes", ErrTooLarge, numFAT, maxStream)
	}
	fatSectors := make([]uint32, 0, numFAT)
	for i := 0; i < 109 && uint32(len(fatSectors)) < numFAT; i++ {
		fatSectors = append(fatSectors, le.Uint32(hdr[76+4*i:]))
	}
	difat := le.Uint32(hdr[68:])
	buf := make([]byte, c.sectorSize)
	for hops := uint32(0); uint32(len(fatSectors)) < numFAT; hops++ {
		if difat > cfbMaxSector || hops > numSectors {
			return nil, fmt.Errorf("%w: DIFAT chain", ErrMalformed)
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
		return nil, fmt.Errorf("%w: %d directory entries, more than %d", ErrTooLarge, len(dirBytes)/128, lim.MaxEntries)
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
		c.dir = append(c.dir, Entry{
			Name: string(utf16.Decode(units)), Type: e[66],
			left: le.Uint32(e[68:]), right: le.Uint32(e[72:]), child: le.Uint32(e[76:]),
			start: le.Uint32(e[116:]), Size: le.Uint64(e[120:]),
			nameLen: uint16(n), raw: e, index: uint32(len(c.dir)),
		})
	}
	if len(c.dir) == 0 || c.dir[0].Type != 5 {
		return nil, fmt.Errorf("%w: no root entry", ErrMalformed)
	}
	if shift == 9 {
		for i := range c.dir { // version 3 files leave the high half of sizes undefined
			c.dir[i].Size &= 0xFFFFFFFF
		}
	}

	miniFATBytes, err := c.readChain(le.Uint32(hdr[60:]), c.fat, c.sectorSize, c.readSector, -1)
	if err != nil {
		return nil, fmt.Errorf("mini FAT: %w", err)
	}
	for i := 0; i+4 <= len(miniFATBytes); i += 4 {
		c.miniFAT = append(c.miniFAT, le.Uint32(miniFATBytes[i:]))
	}
	if c.dir[0].Size > 0 {
		if int64(c.dir[0].Size) > maxStream {
			return nil, fmt.Errorf("%w: mini stream of %d bytes", ErrTooLarge, c.dir[0].Size)
		}
		c.miniStream, err = c.readChain(c.dir[0].start, c.fat, c.sectorSize, c.readSector, int64(c.dir[0].Size))
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
func (c *File) buildTree(maxDepth int) error {
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
				return fmt.Errorf("%w: directory entry %d is out of range or reached twice", ErrMalformed, i)
			}
			seen[i] = true
			e := &c.dir[i]
			// right first, so the left subtree comes out first
			stack = append(stack, e.right, e.left)
			switch e.Type {
			case TypeStorage, TypeStream:
				list = append(list, i)
			default:
				return fmt.Errorf("%w: directory entry %d of type %d inside a storage", ErrMalformed, i, e.Type)
			}
			if e.Type == TypeStorage {
				if st.depth+1 > maxDepth {
					return fmt.Errorf("%w: more than %d levels", ErrTooDeep, maxDepth)
				}
				storages = append(storages, storage{i, st.depth + 1})
			}
		}
		c.children[st.index] = list
	}
	return nil
}

func (c *File) readSector(s uint32, buf []byte) error {
	if s > cfbMaxSector {
		return fmt.Errorf("%w: sector id %#x", ErrMalformed, s)
	}
	off := (int64(s) + 1) * c.sectorSize
	if off+int64(len(buf)) > c.size {
		return fmt.Errorf("%w: sector %d beyond the end of the file", ErrMalformed, s)
	}
	_, err := c.r.ReadAt(buf, off)
	return err
}

func (c *File) readMiniSector(s uint32, buf []byte) error {
	off := int64(s) * 64
	if off+64 > int64(len(c.miniStream)) {
		return fmt.Errorf("%w: mini sector %d beyond the mini stream", ErrMalformed, s)
	}
	copy(buf, c.miniStream[off:off+64])
	return nil
}

// readChain concatenates the sectors of a chain, stopping at want bytes (all
// of the chain when want < 0), never longer than maxStream, and failing on a
// chain longer than the table (a cycle).
func (c *File) readChain(start uint32, table []uint32, secSize int64, read func(uint32, []byte) error, want int64) ([]byte, error) {
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
			return nil, fmt.Errorf("%w: broken sector chain", ErrMalformed)
		}
		if int64(len(out))+secSize > c.maxStream+secSize {
			return nil, fmt.Errorf("%w: stream longer than %d bytes", ErrTooLarge, c.maxStream)
		}
		if err := read(s, buf); err != nil {
			return nil, err
		}
		out = append(out, buf...)
		s = table[s]
	}
	if want >= 0 {
		if int64(len(out)) < want {
			return nil, fmt.Errorf("%w: stream shorter than its size", ErrMalformed)
		}
		out = out[:want]
	}
	return out, nil
}

// Root is the root storage.
func (c *File) Root() *Entry { return &c.dir[0] }

// Children lists a storage's storages and streams, in directory order.
func (c *File) Children(e *Entry) []*Entry {
	var out []*Entry
	for _, i := range c.children[e.index] {
		out = append(out, &c.dir[i])
	}
	return out
}

// CLSID is a storage's class id (zero for streams).
func (e *Entry) CLSID() []byte { return e.raw[80:96] }

// Raw is the 128-byte directory entry as stored.
func (e *Entry) Raw() []byte { return e.raw }

// NameBytes is the entry's name as stored: UTF-16LE, without the NUL.
func (e *Entry) NameBytes() []byte {
	n := int(e.nameLen)
	if n < 2 {
		return nil
	}
	return e.raw[:n-2]
}

// ReadStream returns a stream's bytes, up to maxStream.
func (c *File) ReadStream(e *Entry) ([]byte, error) {
	if int64(e.Size) > c.maxStream || e.Size > uint64(c.size)*2 {
		return nil, fmt.Errorf("%w: stream %q of %d bytes", ErrTooLarge, e.Name, e.Size)
	}
	if e.Size < c.miniCutoff {
		return c.readChain(e.start, c.miniFAT, 64, c.readMiniSector, int64(e.Size))
	}
	return c.readChain(e.start, c.fat, c.sectorSize, c.readSector, int64(e.Size))
}

// CopyStream writes a stream's bytes to w one sector at a time, whatever
// its size: nothing but a sector is held. The chain is followed as
// readChain does (a cycle is an error); all streams copied from one file
// together are at most twice its size.
func (c *File) CopyStream(e *Entry, w io.Writer) error {
	if e.Size > uint64(c.size) {
		return fmt.Errorf("%w: stream %q of %d bytes in a file of %d", ErrMalformed, e.Name, e.Size, c.size)
	}
	if c.copied += int64(e.Size); c.copied > 2*c.size {
		return fmt.Errorf("%w: the streams add up to more than twice the file (cross-linked chains)", ErrTooLarge)
	}
	table, secSize, read := c.fat, c.sectorSize, c.readSector
	if e.Size < c.miniCutoff {
		table, secSize, read = c.miniFAT, 64, c.readMiniSector
	}
	buf := make([]byte, secSize)
	left := int64(e.Size)
	for s, hops := e.start, 0; left > 0; hops++ {
		if s == cfbEndOfChain || int(s) >= len(table) || hops > len(table) {
			return fmt.Errorf("%w: broken sector chain in %q", ErrMalformed, e.Name)
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
