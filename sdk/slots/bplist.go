package slots

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// This file is a minimal reader of Apple's binary property list format
// ("bplist00"), just enough for the macOS download-provenance attribute
// com.apple.metadata:kMDItemWhereFroms, which browsers write as a binary
// plist holding an array of strings (the download URL, then the referring
// page). It reads strings and arrays of strings and refuses everything
// else; every offset is bounds-checked, since the bytes come from a file
// any program can tag.
//
// Layout (from CFBinaryPList.c): an 8-byte header, the objects, an offset
// table (one big-endian offset per object), and a 32-byte trailer: 6 unused
// bytes, the size of an offset-table entry, the size of an object
// reference, then three big-endian uint64: object count, top object index,
// and the offset of the offset table.

// maxWhereFromsSize bounds the attribute we are willing to parse; real
// values are a few hundred bytes.
const maxWhereFromsSize = 1 << 20

// errBplist is wrapped by every parse failure of ParseWhereFroms.
var errBplist = errors.New("slots: malformed binary plist")

const bplistTrailerSize = 32

type bplist struct {
	data       []byte
	offSize    int    // bytes per offset-table entry
	refSize    int    // bytes per object reference
	numObjects uint64 // objects in the offset table
	top        uint64 // index of the root object
	offTable   uint64 // byte offset of the offset table
}

// ParseWhereFroms decodes the value of the macOS extended attribute
// com.apple.metadata:kMDItemWhereFroms: a binary plist whose root is an
// array of strings (or, from some writers, a single string). It returns
// the strings in order; browsers put the download URL first and the page
// it was started from second.
func ParseWhereFroms(b []byte) ([]string, error) {
	if len(b) > maxWhereFromsSize {
		return nil, fmt.Errorf("%w: %d bytes is too large", errBplist, len(b))
	}
	p, err := openBplist(b)
	if err != nil {
		return nil, err
	}
	off, err := p.objectOffset(p.top)
	if err != nil {
		return nil, err
	}
	switch b[off] >> 4 {
	case 0x5, 0x6:
		s, err := p.readString(p.top)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	case 0xA:
		n, start, err := p.count(off)
		if err != nil {
			return nil, err
		}
		if n > (p.offTable-start)/uint64(p.refSize) {
			return nil, fmt.Errorf("%w: array of %d runs past the objects", errBplist, n)
		}
		out := make([]string, 0, n)
		for i := uint64(0); i < n; i++ {
			ref := readUint(b[start+i*uint64(p.refSize):], p.refSize)
			s, err := p.readString(ref)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: root object is not an array of strings (marker %#x)", errBplist, b[off])
	}
}

func openBplist(b []byte) (*bplist, error) {
	const header = 8
	if len(b) < header+1+bplistTrailerSize {
		return nil, fmt.Errorf("%w: %d bytes is too short", errBplist, len(b))
	}
	if string(b[:7]) != "bplist0" {
		return nil, fmt.Errorf("%w: no bplist0x header", errBplist)
	}
	t := b[len(b)-bplistTrailerSize:]
	p := &bplist{
		data:       b,
		offSize:    int(t[6]),
		refSize:    int(t[7]),
		numObjects: binary.BigEndian.Uint64(t[8:16]),
		top:        binary.BigEndian.Uint64(t[16:24]),
		offTable:   binary.BigEndian.Uint64(t[24:32]),
	}
	if p.offSize < 1 || p.offSize > 8 || p.refSize < 1 || p.refSize > 8 {
		return nil, fmt.Errorf("%w: bad trailer sizes %d/%d", errBplist, p.offSize, p.refSize)
	}
	end := uint64(len(b) - bplistTrailerSize)
	if p.offTable < header+1 || p.offTable > end {
		return nil, fmt.Errorf("%w: offset table at %d outside the file", errBplist, p.offTable)
	}
	if p.numObjects == 0 || p.numObjects > (end-p.offTable)/uint64(p.offSize) {
		return nil, fmt.Errorf("%w: %d objects do not fit the offset table", errBplist, p.numObjects)
	}
	if p.top >= p.numObjects {
		return nil, fmt.Errorf("%w: root object %d of %d", errBplist, p.top, p.numObjects)
	}
	return p, nil
}

// objectOffset returns the byte offset of object i, which lies between the
// header and the offset table.
func (p *bplist) objectOffset(i uint64) (uint64, error) {
	if i >= p.numObjects {
		return 0, fmt.Errorf("%w: reference %d of %d objects", errBplist, i, p.numObjects)
	}
	off := readUint(p.data[p.offTable+i*uint64(p.offSize):], p.offSize)
	if off < 8 || off >= p.offTable {
		return 0, fmt.Errorf("%w: object %d at %d outside the object area", errBplist, i, off)
	}
	return off, nil
}

// count decodes the length nibble of the object at off, with its extended
// form (nibble 0xF followed by an integer object), and returns the length
// and the offset of the object's payload.
func (p *bplist) count(off uint64) (n, start uint64, err error) {
	info := p.data[off] & 0x0F
	if info != 0x0F {
		return uint64(info), off + 1, nil
	}
	if off+2 > p.offTable {
		return 0, 0, fmt.Errorf("%w: truncated length at %d", errBplist, off)
	}
	m := p.data[off+1]
	if m>>4 != 0x1 || m&0x0F > 3 {
		return 0, 0, fmt.Errorf("%w: bad length marker %#x at %d", errBplist, m, off+1)
	}
	size := uint64(1) << (m & 0x0F)
	if off+2+size > p.offTable {
		return 0, 0, fmt.Errorf("%w: truncated length at %d", errBplist, off)
	}
	n = readUint(p.data[off+2:], int(size))
	if size == 8 && n>>63 != 0 { // an 8-byte integer is signed in bplist
		return 0, 0, fmt.Errorf("%w: negative length at %d", errBplist, off)
	}
	return n, off + 2 + size, nil
}

// readString reads object i, which must be an ASCII (0x5) or UTF-16BE
// (0x6) string.
func (p *bplist) readString(i uint64) (string, error) {
	off, err := p.objectOffset(i)
	if err != nil {
		return "", err
	}
	kind := p.data[off] >> 4
	if kind != 0x5 && kind != 0x6 {
		return "", fmt.Errorf("%w: object %d is not a string (marker %#x)", errBplist, i, p.data[off])
	}
	n, start, err := p.count(off)
	if err != nil {
		return "", err
	}
	avail := p.offTable - start
	if kind == 0x5 {
		if n > avail {
			return "", fmt.Errorf("%w: string of %d bytes runs past the objects", errBplist, n)
		}
		// "ASCII" strings are one byte per character; decode them as
		// Latin-1 so the result is always valid UTF-8.
		raw := p.data[start : start+n]
		r := make([]rune, len(raw))
		for k, c := range raw {
			r[k] = rune(c)
		}
		return string(r), nil
	}
	if n > avail/2 {
		return "", fmt.Errorf("%w: string of %d UTF-16 units runs past the objects", errBplist, n)
	}
	u := make([]uint16, n)
	for k := range u {
		u[k] = binary.BigEndian.Uint16(p.data[start+uint64(2*k):])
	}
	return string(utf16.Decode(u)), nil
}

// readUint reads an n-byte big-endian unsigned integer (1 ≤ n ≤ 8).
func readUint(b []byte, n int) uint64 {
	var v uint64
	for k := 0; k < n; k++ {
		v = v<<8 | uint64(b[k])
	}
	return v
}
