package hfsplus

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"sync"
	"unicode/utf16"

	"github.com/xpromo/xpromo/server/gate/lzfse"
)

// HFS+ transparent compression (decmpfs): a file flagged UF_COMPRESSED has
// an empty data fork and a "com.apple.decmpfs" extended attribute: a
// 16-byte header ("fpmc", the compression type, the uncompressed size,
// little-endian) and, for type 3, the zlib data inline; for type 4, the
// data is in the resource fork as zlib blocks of 64 KiB each, behind a
// block table. A block (or inline data) whose first byte is 0xFF is stored
// uncompressed after it. Types 7/8 (LZVN) and 11/12 (LZFSE) are the same
// with those codecs (server/gate/lzfse): 7 and 11 inline, 8 and 12 in the
// resource fork, whose blocks follow a table of block count + 1
// little-endian offsets from the fork's start (no resource map); an LZVN
// block whose first byte is 0x06 (its end-of-stream opcode) is stored
// uncompressed after it.
const (
	decmpfsName       = "com.apple.decmpfs"
	decmpfsMagic      = "fpmc"
	decmpfsBlock      = 64 << 10
	maxInlineDecoded  = 16 << 20 // an inline attribute is at most a few KiB of zlib
	maxCompressedFile = 1 << 30  // the gate's executable bound
	attrInlineData    = 0x10
)

// openCompressed returns the decompressed data of a decmpfs file.
func (v *Volume) openCompressed(e *entry) (io.ReaderAt, int64, error) {
	attr, err := v.attribute(e.id, decmpfsName)
	if err != nil {
		return nil, 0, err
	}
	if len(attr) < 16 || string(attr[:4]) != decmpfsMagic {
		return nil, 0, fail(ReasonUnreadable, "file %d: no decmpfs header", e.id)
	}
	le := binary.LittleEndian
	typ, size := le.Uint32(attr[4:]), le.Uint64(attr[8:])
	if size > maxCompressedFile {
		return nil, 0, fail(ReasonTooLarge, "file %d decompresses to %d bytes, more than %d", e.id, size, maxCompressedFile)
	}
	switch typ {
	case 1: // stored in the attribute, uncompressed
		if uint64(len(attr)-16) < size {
			return nil, 0, fail(ReasonUnreadable, "file %d: decmpfs data shorter than its size", e.id)
		}
		return bytes.NewReader(attr[16 : 16+size]), int64(size), nil
	case 3, 7, 11:
		if size > maxInlineDecoded {
			return nil, 0, fail(ReasonTooLarge, "file %d: inline decmpfs data decompresses to %d bytes, more than %d", e.id, size, maxInlineDecoded)
		}
		b, err := decodeBlock(typ, attr[16:], int(size))
		if err != nil {
			return nil, 0, fail(ReasonUnreadable, "file %d: decmpfs data: %v", e.id, err)
		}
		return bytes.NewReader(b), int64(size), nil
	case 4:
		rf, err := v.fullFork(e.id, 0xff, e.rsrc)
		if err != nil {
			return nil, 0, err
		}
		br, err := newBlockReader(e.id, rf, int64(size))
		if err != nil {
			return nil, 0, err
		}
		return br, int64(size), nil
	case 8, 12:
		rf, err := v.fullFork(e.id, 0xff, e.rsrc)
		if err != nil {
			return nil, 0, err
		}
		br, err := newOffsetBlockReader(e.id, typ, rf, int64(size))
		if err != nil {
			return nil, 0, err
		}
		return br, int64(size), nil
	}
	return nil, 0, fail(ReasonUnsupportedCompression, "file %d is transparently compressed with decmpfs type %d, which the gate does not decode", e.id, typ)
}

// decodeBlock decodes one block (or inline data) of want bytes of a
// decmpfs file of type typ.
func decodeBlock(typ uint32, src []byte, want int) ([]byte, error) {
	switch typ {
	case 7, 8, 11, 12:
		stored := len(src) > 0 && (src[0] == 0xff || (typ == 7 || typ == 8) && src[0] == 0x06)
		if stored {
			if len(src)-1 < want {
				return nil, io.ErrUnexpectedEOF
			}
			return src[1 : 1+want], nil
		}
		out := make([]byte, want)
		decode := lzfse.Decode
		if typ == 7 || typ == 8 {
			decode = lzfse.DecodeLZVN
		}
		n, err := decode(out, src)
		if err != nil {
			return nil, err
		}
		if n != want {
			return nil, io.ErrUnexpectedEOF
		}
		return out, nil
	}
	return inflateBlock(src, want)
}

// newOffsetBlockReader reads the block table of a type 8 or 12 resource
// fork: count+1 offsets from the fork's start, the first just past the
// table, each block at most twice the block size.
func newOffsetBlockReader(id, typ uint32, rf *forkFile, size int64) (*blockReader, error) {
	le := binary.LittleEndian
	n := (size + decmpfsBlock - 1) / decmpfsBlock
	raw := make([]byte, 4*(n+1))
	if _, err := rf.ReadAt(raw, 0); err != nil {
		return nil, fail(ReasonUnreadable, "file %d: decmpfs block table: %v", id, err)
	}
	if int64(le.Uint32(raw)) != 4*(n+1) {
		return nil, fail(ReasonUnreadable, "file %d: decmpfs block table (%d bytes for %d blocks)", id, le.Uint32(raw), n)
	}
	br := &blockReader{id: id, typ: typ, rf: rf, size: size, index: -1}
	for i := int64(0); i < n; i++ {
		off, end := le.Uint32(raw[4*i:]), le.Uint32(raw[4*i+4:])
		if end <= off || end-off > 2*decmpfsBlock || int64(end) > rf.size {
			return nil, fail(ReasonUnreadable, "file %d: decmpfs block %d (%d to %d) is outside the resource fork", id, i, off, end)
		}
		br.blocks = append(br.blocks, [2]uint32{off, end - off})
	}
	return br, nil
}

// inflateBlock decodes one decmpfs block of want bytes: stored after a
// 0xFF byte, else zlib.
func inflateBlock(src []byte, want int) ([]byte, error) {
	if len(src) > 0 && src[0] == 0xff {
		if len(src)-1 < want {
			return nil, io.ErrUnexpectedEOF
		}
		return src[1 : 1+want], nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	out := make([]byte, want)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, err
	}
	return out, nil
}

// blockReader decodes a type-4 file's resource fork a 64 KiB block at a
// time, keeping the last one.
type blockReader struct {
	id     uint32
	typ    uint32 // the decmpfs type: 4 (zlib), 8 (LZVN) or 12 (LZFSE)
	rf     io.ReaderAt
	size   int64
	blocks [][2]uint32 // offset (from the table's start), stored size
	table  int64       // where the block table starts in the fork

	mu    sync.Mutex
	index int
	cache []byte
}

func newBlockReader(id uint32, rf *forkFile, size int64) (*blockReader, error) {
	be, le := binary.BigEndian, binary.LittleEndian
	head := make([]byte, 4)
	if _, err := rf.ReadAt(head, 0); err != nil {
		return nil, fail(ReasonUnreadable, "file %d: decmpfs resource fork header: %v", id, err)
	}
	table := int64(be.Uint32(head)) + 4 // the resource data, after its length
	n := (size + decmpfsBlock - 1) / decmpfsBlock
	count := make([]byte, 4)
	if _, err := rf.ReadAt(count, table); err != nil || int64(le.Uint32(count)) != n {
		return nil, fail(ReasonUnreadable, "file %d: decmpfs block table (%d blocks for %d bytes)", id, le.Uint32(count), size)
	}
	raw := make([]byte, 8*n)
	if _, err := rf.ReadAt(raw, table+4); err != nil {
		return nil, fail(ReasonUnreadable, "file %d: decmpfs block table: %v", id, err)
	}
	br := &blockReader{id: id, typ: 4, rf: rf, size: size, table: table, index: -1}
	for i := int64(0); i < n; i++ {
		off, sz := le.Uint32(raw[8*i:]), le.Uint32(raw[8*i+4:])
		if sz == 0 || sz > 2*decmpfsBlock || table+int64(off)+int64(sz) > rf.size {
			return nil, fail(ReasonUnreadable, "file %d: decmpfs block %d (%d bytes at %d) is outside the resource fork", id, i, sz, off)
		}
		br.blocks = append(br.blocks, [2]uint32{off, sz})
	}
	return br, nil
}

func (br *blockReader) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fail(ReasonUnreadable, "negative offset")
	}
	if off >= br.size {
		return 0, io.EOF
	}
	want := len(b)
	if int64(want) > br.size-off {
		b = b[:br.size-off]
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	n := 0
	for n < len(b) {
		pos := off + int64(n)
		i := int(pos / decmpfsBlock)
		if i != br.index {
			blk := br.blocks[i]
			src := make([]byte, blk[1])
			if _, err := br.rf.ReadAt(src, br.table+int64(blk[0])); err != nil {
				return n, fail(ReasonUnreadable, "file %d: decmpfs block %d: %v", br.id, i, err)
			}
			length := min(decmpfsBlock, br.size-int64(i)*decmpfsBlock)
			data, err := decodeBlock(br.typ, src, int(length))
			if err != nil {
				return n, fail(ReasonUnreadable, "file %d: decmpfs block %d: %v", br.id, i, err)
			}
			br.index, br.cache = i, data
		}
		n += copy(b[n:], br.cache[pos-int64(i)*decmpfsBlock:])
	}
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// attribute returns the inline data of a file's extended attribute.
func (v *Volume) attribute(fileID uint32, name string) ([]byte, error) {
	t := v.attributes
	if t == nil {
		return nil, fail(ReasonUnreadable, "file %d is compressed but the volume has no attributes tree", fileID)
	}
	be := binary.BigEndian
	// Key: pad (2), file ID (4), start block (4), name (length + UTF-16).
	keyOf := func(key []byte) (uint32, string, bool) {
		if len(key) < 12 {
			return 0, "", false
		}
		n := int(be.Uint16(key[10:]))
		if n > maxNameUnits || 12+2*n > len(key) {
			return 0, "", false
		}
		u := make([]uint16, n)
		for i := range u {
			u[i] = be.Uint16(key[12+2*i:])
		}
		return be.Uint32(key[2:]), string(utf16.Decode(u)), true
	}
	leaf, err := v.seek(t, func(key []byte) bool { id, _, ok := keyOf(key); return ok && id < fileID })
	if err != nil || leaf == 0 {
		return nil, fail(ReasonUnreadable, "file %d has no %s attribute", fileID, name)
	}
	var found []byte
	err = v.scan(t, leaf, func(key, data []byte) (bool, error) {
		id, n, ok := keyOf(key)
		if !ok || id > fileID {
			return false, nil
		}
		if id < fileID || n != name {
			return true, nil
		}
		if len(data) < 16 || be.Uint32(data) != attrInlineData {
			return false, fail(ReasonUnsupportedCompression, "file %d: the %s attribute is not inline data", fileID, name)
		}
		size := be.Uint32(data[12:])
		if uint64(size) > uint64(len(data)-16) {
			return false, fail(ReasonUnreadable, "file %d: the %s attribute runs past its record", fileID, name)
		}
		found = data[16 : 16+size]
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fail(ReasonUnreadable, "file %d has no %s attribute", fileID, name)
	}
	return found, nil
}
