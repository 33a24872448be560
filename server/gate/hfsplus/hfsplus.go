// Package hfsplus reads an HFS+ (or HFSX) volume within bounds, as an
// io/fs.FS: the volume header (also inside an HFS wrapper), the catalog
// B-tree (folders, files, their threads), the extents overflow B-tree for
// fragmented files, and data forks as io.ReaderAt. It reads only what a
// lookup needs: listing a folder descends the catalog to that folder's
// records, so a volume of a million files costs a few node reads per path.
//
// Every structure is hostile: node sizes, record offsets, key and name
// lengths, the tree height, the number of nodes read over the Volume's life,
// the entries of one folder and the extents of one file are bounded
// (Limits), leaf chains that loop are cut, and a fork's blocks must lie
// inside the device. Transparently compressed files (decmpfs, the
// com.apple.decmpfs attribute of the attributes B-tree) are read when
// compressed with zlib, LZVN or LZFSE, inline or in the resource fork
// (decmpfs.go); another type is ReasonUnsupportedCompression. Hard links, of files ("hlnk"
// records naming an iNode file of the private "\x00\x00\x00\x00HFS+ Private
// Data" folder) and of folders ("fdrp" records naming a dir_ folder of
// ".HFS+ Private Directory Data\r"), read as their targets, one hop at most;
// symbolic links are listed but not read (fs.ErrInvalid).
package hfsplus

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/xpromo/xpromo/server/apperr"
)

// Reason codes (server/apperr, docs/errors.md).
const (
	ReasonUnreadable             = apperr.GatePackageUnreadable
	ReasonTooLarge               = apperr.GatePackageTooLarge
	ReasonTooDeep                = apperr.GatePackageTooDeep
	ReasonUnsupportedCompression = apperr.GatePackageUnsupportedCompression
)

// Error is what this package returns for a bad volume.
type Error struct {
	Reason string
	Detail string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Detail }

func fail(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Limits bound a volume. The zero value of a field means its default.
type Limits struct {
	MaxNodeReads  int // B-tree nodes read over the Volume's life; default 1 000 000
	MaxTreeDepth  int // B-tree height; default 16 (real catalogs are under 10)
	MaxDirEntries int // entries of one folder; default 100 000
	MaxExtents    int // extents of one fork; default 4 096
}

func (l Limits) withDefaults() Limits {
	if l.MaxNodeReads <= 0 {
		l.MaxNodeReads = 1_000_000
	}
	if l.MaxTreeDepth <= 0 {
		l.MaxTreeDepth = 16
	}
	if l.MaxDirEntries <= 0 {
		l.MaxDirEntries = 100_000
	}
	if l.MaxExtents <= 0 {
		l.MaxExtents = 4096
	}
	return l
}

const (
	rootFolderID     = 2
	extentsFileID    = 3
	catalogFileID    = 4
	attributesFileID = 8
	recFolder        = 1
	recFile          = 2
	ufCompressed     = 0x20 // BSD flag: the data is in com.apple.decmpfs
	maxNameUnits     = 255
	sigHFSPlus       = 0x482B // "H+"
	sigHFSX          = 0x4858 // "HX"
	sigHFSWrapper    = 0x4244 // "BD": an HFS volume embedding an HFS+ one
	modeTypeMask     = 0o170000
	modeDir          = 0o040000
	modeRegular      = 0o100000
	modeSymlink      = 0o120000
	hfsEpochOffset   = 2082844800 // seconds from 1904-01-01 to 1970-01-01
)

// Volume is an opened HFS+ volume. It implements fs.FS; paths are the
// volume's names joined by "/" (a "/" inside an HFS+ name reads as ":").
type Volume struct {
	dev        io.ReaderAt
	devSize    int64
	base       int64 // the volume's offset on the device (an HFS wrapper moves it)
	blockSize  int64
	lim        Limits
	catalog    *btree
	extents    *btree
	attributes *btree // nil on a volume without extended attributes
	Name       string // the volume name (the root folder's)
	HFSX       bool

	mu        sync.Mutex
	nodeReads int
	// inodes are the children of the two private folders holding hard
	// links' targets (file links, then folder links), listed once.
	inodes [2]map[string]*entry
}

// The private folders of hard links' targets: a file hard link names
// "iNode<n>" in the first, a folder hard link "dir_<n>" in the second.
var privateFolders = [2]string{"\x00\x00\x00\x00HFS+ Private Data", ".HFS+ Private Directory Data\r"}

type extent struct{ start, count uint32 }

type forkData struct {
	size    uint64
	blocks  uint32
	extents []extent // the first eight, from the record
}

func parseFork(b []byte) forkData {
	be := binary.BigEndian
	f := forkData{size: be.Uint64(b), blocks: be.Uint32(b[12:])}
	for i := 0; i < 8; i++ {
		e := extent{be.Uint32(b[16+8*i:]), be.Uint32(b[20+8*i:])}
		if e.count == 0 {
			break
		}
		f.extents = append(f.extents, e)
	}
	return f
}

// Open reads the volume header of the HFS+ volume on the devSize bytes of
// dev (at byte 1024; an HFS wrapper's embedded volume is followed) and the
// headers of its catalog and extents B-trees.
func Open(dev io.ReaderAt, devSize int64, lim Limits) (*Volume, error) {
	v := &Volume{dev: dev, devSize: devSize, lim: lim.withDefaults()}
	vh := make([]byte, 512)
	if _, err := dev.ReadAt(vh, 1024); err != nil {
		return nil, fail(ReasonUnreadable, "reading the volume header: %v", err)
	}
	be := binary.BigEndian
	if be.Uint16(vh) == sigHFSWrapper {
		// HFS master directory block: drAlBlkSiz at 20, drAlBlSt at 28,
		// drEmbedSigWord at 124, drEmbedExtent (start, count) at 126.
		if be.Uint16(vh[124:]) != sigHFSPlus {
			return nil, fail(ReasonUnreadable, "an HFS volume without an embedded HFS+ volume (plain HFS is not read)")
		}
		v.base = int64(be.Uint16(vh[28:]))*512 + int64(be.Uint16(vh[126:]))*int64(be.Uint32(vh[20:]))
		if v.base <= 0 || v.base > devSize-1536 {
			return nil, fail(ReasonUnreadable, "the embedded HFS+ volume lies outside the device")
		}
		if _, err := dev.ReadAt(vh, v.base+1024); err != nil {
			return nil, fail(ReasonUnreadable, "reading the embedded volume header: %v", err)
		}
	}
	switch be.Uint16(vh) {
	case sigHFSPlus:
	case sigHFSX:
		v.HFSX = true
	default:
		return nil, fail(ReasonUnreadable, "no HFS+ volume header (signature %q)", vh[:2])
	}
	v.blockSize = int64(be.Uint32(vh[40:]))
	if v.blockSize < 512 || v.blockSize > 1<<20 || v.blockSize&(v.blockSize-1) != 0 {
		return nil, fail(ReasonUnreadable, "block size %d", v.blockSize)
	}
	var err error
	// The extents tree's own fork is never in the extents tree.
	if v.extents, err = v.openTree("extents", v.forkReader(parseFork(vh[192:]), nil)); err != nil {
		return nil, err
	}
	// The attributes tree (extended attributes: com.apple.decmpfs) is
	// optional.
	if af := parseFork(vh[352:]); af.size > 0 {
		attrs, err := v.fullFork(attributesFileID, 0, af)
		if err != nil {
			return nil, err
		}
		if v.attributes, err = v.openTree("attributes", attrs); err != nil {
			return nil, err
		}
	}
	catFork := parseFork(vh[272:])
	cat, err := v.fullFork(catalogFileID, 0, catFork)
	if err != nil {
		return nil, err
	}
	if v.catalog, err = v.openTree("catalog", cat); err != nil {
		return nil, err
	}
	if th, err := v.lookupThread(rootFolderID); err == nil {
		v.Name = th
	}
	return v, nil
}

// forkFile is a fork's bytes as an io.ReaderAt.
type forkFile struct {
	v       *Volume
	size    int64
	extents []extent
}

func (v *Volume) forkReader(f forkData, more []extent) *forkFile {
	return &forkFile{v: v, size: int64(f.size), extents: append(append([]extent(nil), f.extents...), more...)}
}

// fullFork is a file's data fork with its overflow extents.
func (v *Volume) fullFork(fileID uint32, forkType uint8, f forkData) (*forkFile, error) {
	var have uint64
	for _, e := range f.extents {
		have += uint64(e.count)
	}
	var more []extent
	for have < uint64(f.blocks) && v.extents != nil {
		recs, err := v.findExtents(fileID, forkType, uint32(have))
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			break
		}
		for _, e := range recs {
			have += uint64(e.count)
		}
		more = append(more, recs...)
		if len(f.extents)+len(more) > v.lim.MaxExtents {
			return nil, fail(ReasonTooLarge, "file %d has more than %d extents", fileID, v.lim.MaxExtents)
		}
	}
	ff := v.forkReader(f, more)
	var blocks uint64
	for _, e := range ff.extents {
		blocks += uint64(e.count)
	}
	if uint64(ff.size) > blocks*uint64(v.blockSize) || ff.size < 0 {
		return nil, fail(ReasonUnreadable, "file %d declares %d bytes in %d blocks", fileID, f.size, blocks)
	}
	return ff, nil
}

func (f *forkFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fail(ReasonUnreadable, "negative offset")
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := len(b)
	if int64(want) > f.size-off {
		b = b[:f.size-off]
	}
	n := 0
	pos := int64(0) // the fork offset where extent i starts
	bs := f.v.blockSize
	for _, e := range f.extents {
		length := int64(e.count) * bs
		for n < len(b) && off+int64(n) < pos+length {
			in := off + int64(n) - pos
			m := min(int64(len(b)-n), length-in)
			at := f.v.base + int64(e.start)*bs + in
			if at < 0 || at > f.v.devSize-m {
				return n, fail(ReasonUnreadable, "a file's block %d lies outside the device", e.start)
			}
			k, err := f.v.dev.ReadAt(b[n:n+int(m)], at)
			n += k
			if err != nil && k < int(m) {
				return n, fail(ReasonUnreadable, "reading a file's blocks: %v", err)
			}
		}
		pos += length
		if n == len(b) {
			break
		}
	}
	if n < len(b) {
		return n, fail(ReasonUnreadable, "a file's extents end before its size")
	}
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// btree is one B-tree file.
type btree struct {
	name                        string
	r                           *forkFile
	nodeSize                    int64
	root, firstLeaf, totalNodes uint32
	depth                       int
	variableIndexKeys, bigKeys  bool
	maxKeyLen                   int
}

type node struct {
	fLink   uint32
	kind    int8
	height  uint8
	records [][]byte
}

func (v *Volume) openTree(name string, r *forkFile) (*btree, error) {
	hdr := make([]byte, 14+106)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, fail(ReasonUnreadable, "reading the %s B-tree header: %v", name, err)
	}
	be := binary.BigEndian
	h := hdr[14:]
	t := &btree{name: name, r: r, depth: int(be.Uint16(h)), root: be.Uint32(h[2:]), firstLeaf: be.Uint32(h[10:]),
		nodeSize: int64(be.Uint16(h[18:])), maxKeyLen: int(be.Uint16(h[20:])), totalNodes: be.Uint32(h[22:])}
	attrs := be.Uint32(h[38:])
	t.bigKeys, t.variableIndexKeys = attrs&2 != 0, attrs&4 != 0
	if int8(hdr[8]) != 1 {
		return nil, fail(ReasonUnreadable, "the %s B-tree's first node is not a header node", name)
	}
	if t.nodeSize < 512 || t.nodeSize > 32768 || t.nodeSize&(t.nodeSize-1) != 0 {
		return nil, fail(ReasonUnreadable, "the %s B-tree's node size %d", name, t.nodeSize)
	}
	if t.depth > v.lim.MaxTreeDepth {
		return nil, fail(ReasonTooDeep, "the %s B-tree is %d levels deep, more than %d", name, t.depth, v.lim.MaxTreeDepth)
	}
	if int64(t.totalNodes)*t.nodeSize > r.size {
		return nil, fail(ReasonUnreadable, "the %s B-tree declares %d nodes in %d bytes", name, t.totalNodes, r.size)
	}
	return t, nil
}

// readNode reads and checks node n of t.
func (v *Volume) readNode(t *btree, n uint32) (*node, error) {
	v.mu.Lock()
	v.nodeReads++
	over := v.nodeReads > v.lim.MaxNodeReads
	v.mu.Unlock()
	if over {
		return nil, fail(ReasonTooLarge, "more than %d B-tree nodes read", v.lim.MaxNodeReads)
	}
	if n == 0 || n >= t.totalNodes {
		return nil, fail(ReasonUnreadable, "the %s B-tree refers to node %d of %d", t.name, n, t.totalNodes)
	}
	b := make([]byte, t.nodeSize)
	if _, err := t.r.ReadAt(b, int64(n)*t.nodeSize); err != nil {
		return nil, fail(ReasonUnreadable, "reading %s node %d: %v", t.name, n, err)
	}
	be := binary.BigEndian
	nd := &node{fLink: be.Uint32(b), kind: int8(b[8]), height: b[9]}
	count := int(be.Uint16(b[10:]))
	if 14+2*(count+1) > len(b) {
		return nil, fail(ReasonUnreadable, "%s node %d claims %d records", t.name, n, count)
	}
	limit := len(b) - 2*(count+1)
	for i := 0; i < count; i++ {
		start := int(be.Uint16(b[len(b)-2*(i+1):]))
		end := int(be.Uint16(b[len(b)-2*(i+2):]))
		if start < 14 || end < start || end > limit {
			return nil, fail(ReasonUnreadable, "%s node %d: record %d at %d..%d is outside the node", t.name, n, i, start, end)
		}
		nd.records = append(nd.records, b[start:end])
	}
	return nd, nil
}

// splitRecord returns a record's key (without its length field) and its
// data (for an index record, the child node number).
func (t *btree) splitRecord(r []byte, index bool) (key, data []byte, ok bool) {
	if len(r) < 2 {
		return nil, nil, false
	}
	kl := int(binary.BigEndian.Uint16(r))
	skip := 2 + kl
	if index && !t.variableIndexKeys {
		skip = 2 + t.maxKeyLen
	}
	if kl > len(r)-2 || skip > len(r) {
		return nil, nil, false
	}
	return r[2 : 2+kl], r[skip:], true
}

// seek descends from the root to the leaf that holds the first key not
// below the target: less(key) reports whether an index key sorts below it.
// It returns the leaf's number.
func (v *Volume) seek(t *btree, less func(key []byte) bool) (uint32, error) {
	n := t.root
	if n == 0 {
		return 0, nil // an empty tree
	}
	for level := 0; ; level++ {
		if level > t.depth || level > v.lim.MaxTreeDepth {
			return 0, fail(ReasonTooDeep, "the %s B-tree descends more than %d levels", t.name, t.depth)
		}
		nd, err := v.readNode(t, n)
		if err != nil {
			return 0, err
		}
		switch nd.kind {
		case -1:
			return n, nil
		case 0:
		default:
			return 0, fail(ReasonUnreadable, "%s node %d of kind %d on the way to a leaf", t.name, n, nd.kind)
		}
		if len(nd.records) == 0 {
			return 0, fail(ReasonUnreadable, "an empty %s index node %d", t.name, n)
		}
		child := uint32(0)
		for i, r := range nd.records {
			key, data, ok := t.splitRecord(r, true)
			if !ok || len(data) < 4 {
				return 0, fail(ReasonUnreadable, "%s index node %d: record %d", t.name, n, i)
			}
			if i == 0 || less(key) {
				child = binary.BigEndian.Uint32(data)
			} else {
				break
			}
		}
		n = child
	}
}

// scan walks leaves from n along their forward links, calling fn with each
// record's key and data until fn returns false. A chain that loops ends.
func (v *Volume) scan(t *btree, n uint32, fn func(key, data []byte) (more bool, err error)) error {
	seen := map[uint32]bool{}
	for n != 0 && !seen[n] {
		seen[n] = true
		nd, err := v.readNode(t, n)
		if err != nil {
			return err
		}
		if nd.kind != -1 {
			return fail(ReasonUnreadable, "%s node %d in the leaf chain is not a leaf", t.name, n)
		}
		for i, r := range nd.records {
			key, data, ok := t.splitRecord(r, false)
			if !ok {
				return fail(ReasonUnreadable, "%s leaf %d: record %d", t.name, n, i)
			}
			more, err := fn(key, data)
			if err != nil || !more {
				return err
			}
		}
		n = nd.fLink
	}
	return nil
}

// findExtents returns the overflow extents of a data fork that start at
// file block start.
func (v *Volume) findExtents(fileID uint32, forkType uint8, start uint32) ([]extent, error) {
	t := v.extents
	be := binary.BigEndian
	type k struct {
		fork   uint8
		id, at uint32
	}
	parse := func(key []byte) (k, bool) {
		if len(key) < 10 {
			return k{}, false
		}
		return k{key[0], be.Uint32(key[2:]), be.Uint32(key[6:])}, true
	}
	target := k{forkType, fileID, start}
	before := func(a, b k) bool {
		if a.id != b.id {
			return a.id < b.id
		}
		if a.fork != b.fork {
			return a.fork < b.fork
		}
		return a.at < b.at
	}
	leaf, err := v.seek(t, func(key []byte) bool { kk, ok := parse(key); return ok && !before(target, kk) })
	if err != nil || leaf == 0 {
		return nil, err
	}
	var out []extent
	err = v.scan(t, leaf, func(key, data []byte) (bool, error) {
		kk, ok := parse(key)
		if !ok {
			return false, fail(ReasonUnreadable, "an extents key of %d bytes", len(key))
		}
		if before(target, kk) {
			return false, nil
		}
		if kk != target || len(data) < 64 {
			return true, nil
		}
		for i := 0; i < 8; i++ {
			e := extent{be.Uint32(data[8*i:]), be.Uint32(data[8*i+4:])}
			if e.count == 0 {
				break
			}
			out = append(out, e)
		}
		return false, nil
	})
	return out, err
}

// entry is a catalog leaf record of a folder or a file.
type entry struct {
	name     string
	parent   uint32
	id       uint32
	folder   bool
	mode     uint16
	flags    uint8
	modTime  uint32
	data     forkData
	rsrc     forkData
	hardLink bool // a file hard link ("hlnk", "hfs+") or a folder one ("fdrp", "MACS")
	dirLink  bool
	inode    uint32 // a hard link's target number
}

func decodeName(b []byte) (string, bool) {
	if len(b) < 2 {
		return "", false
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > maxNameUnits || 2+2*n > len(b) {
		return "", false
	}
	u := make([]uint16, n)
	for i := range u {
		u[i] = binary.BigEndian.Uint16(b[2+2*i:])
	}
	// HFS+ stores "/" in a name as ":" (the Finder's separator).
	return strings.ReplaceAll(string(utf16.Decode(u)), "/", ":"), true
}

// catalogKey parses a catalog key: parent ID, then the node name.
func catalogKey(key []byte) (parent uint32, name string, ok bool) {
	if len(key) < 6 {
		return 0, "", false
	}
	name, ok = decodeName(key[4:])
	return binary.BigEndian.Uint32(key), name, ok
}

func parseEntry(parent uint32, name string, data []byte) (*entry, bool) {
	if len(data) < 2 {
		return nil, false
	}
	be := binary.BigEndian
	e := &entry{name: name, parent: parent}
	switch be.Uint16(data) {
	case recFolder:
		if len(data) < 88 {
			return nil, false
		}
		e.folder = true
	case recFile:
		if len(data) < 248 {
			return nil, false
		}
		e.data = parseFork(data[88:])
		e.rsrc = parseFork(data[168:])
		switch string(data[48:56]) {
		case "hlnkhfs+":
			e.hardLink = true
		case "fdrpMACS":
			e.hardLink, e.dirLink = true, true
		}
		e.inode = be.Uint32(data[44:])
	default:
		return nil, false // a thread record
	}
	e.id = be.Uint32(data[8:])
	e.modTime = be.Uint32(data[16:])
	e.flags = data[41]
	e.mode = be.Uint16(data[42:])
	return e, true
}

// children lists the folder records and file records whose parent is id.
func (v *Volume) children(id uint32) ([]*entry, error) {
	leaf, err := v.seek(v.catalog, func(key []byte) bool {
		p, name, ok := catalogKey(key)
		return ok && (p < id || (p == id && name == ""))
	})
	if err != nil || leaf == 0 {
		return nil, err
	}
	var out []*entry
	err = v.scan(v.catalog, leaf, func(key, data []byte) (bool, error) {
		p, name, ok := catalogKey(key)
		if !ok {
			return false, fail(ReasonUnreadable, "a catalog key with a bad name")
		}
		if p > id {
			return false, nil
		}
		if p < id {
			return true, nil
		}
		if e, ok := parseEntry(p, name, data); ok && name != "" {
			if len(out) >= v.lim.MaxDirEntries {
				return false, fail(ReasonTooLarge, "a folder of more than %d entries", v.lim.MaxDirEntries)
			}
			out = append(out, e)
		}
		return true, nil
	})
	return out, err
}

// lookupThread returns the name in the thread record of id.
func (v *Volume) lookupThread(id uint32) (string, error) {
	leaf, err := v.seek(v.catalog, func(key []byte) bool {
		p, name, ok := catalogKey(key)
		return ok && (p < id || (p == id && name == ""))
	})
	if err != nil || leaf == 0 {
		return "", fs.ErrNotExist
	}
	found := ""
	err = v.scan(v.catalog, leaf, func(key, data []byte) (bool, error) {
		p, name, ok := catalogKey(key)
		if !ok || p > id {
			return false, nil
		}
		if p == id && name == "" && len(data) >= 10 {
			found, _ = decodeName(data[8:])
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// lookup resolves a slash-separated path from the root folder. Names
// compare exactly, then ignoring case (HFS+ is case-insensitive; HFSX may
// be either).
func (v *Volume) lookup(name string) (*entry, error) {
	cur := &entry{name: ".", id: rootFolderID, folder: true, mode: modeDir | 0o755}
	if name == "." {
		return cur, nil
	}
	for _, part := range strings.Split(name, "/") {
		if !cur.folder {
			return nil, fs.ErrNotExist
		}
		kids, err := v.children(cur.id)
		if err != nil {
			return nil, err
		}
		var hit *entry
		for _, k := range kids {
			if k.name == part {
				hit = k
				break
			}
		}
		if hit == nil && !v.HFSX {
			for _, k := range kids {
				if strings.EqualFold(k.name, part) {
					hit = k
					break
				}
			}
		}
		if hit == nil {
			return nil, fs.ErrNotExist
		}
		if cur, err = v.resolve(hit); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// resolve returns a hard link's target, under the link's name (any other
// entry as it is). The target must not be a link itself: one hop, so links
// cannot loop. A path's lookup resolves each of its parts once, so even
// folder links to an ancestor cannot make it loop (a caller walking the
// whole tree must bound its depth: HFS+ forbids such links, a hostile image
// need not).
func (v *Volume) resolve(e *entry) (*entry, error) {
	if !e.hardLink {
		return e, nil
	}
	kind, name := 0, fmt.Sprintf("iNode%d", e.inode)
	if e.dirLink {
		kind, name = 1, fmt.Sprintf("dir_%d", e.inode)
	}
	v.mu.Lock()
	inodes := v.inodes[kind]
	v.mu.Unlock()
	if inodes == nil {
		inodes = map[string]*entry{}
		root, err := v.children(rootFolderID)
		if err != nil {
			return nil, err
		}
		for _, r := range root {
			if r.folder && r.name == privateFolders[kind] {
				kids, err := v.children(r.id)
				if err != nil {
					return nil, err
				}
				for _, k := range kids {
					inodes[k.name] = k
				}
			}
		}
		v.mu.Lock()
		v.inodes[kind] = inodes
		v.mu.Unlock()
	}
	t := inodes[name]
	if t == nil {
		return nil, fail(ReasonUnreadable, "hard link %q: its target %s is missing", e.name, name)
	}
	if t.hardLink || t.folder != e.dirLink {
		return nil, fail(ReasonUnreadable, "hard link %q: its target %s is a link or of another kind", e.name, name)
	}
	r := *t
	r.name, r.parent = e.name, e.parent
	return &r, nil
}

// Open implements fs.FS.
func (v *Volume) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	e, err := v.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := &File{v: v, e: e, path: name}
	if !e.folder && e.regular() {
		var err error
		if e.flags&ufCompressed != 0 {
			f.data, f.dataSize, err = v.openCompressed(e)
		} else {
			var ff *forkFile
			ff, err = v.fullFork(e.id, 0, e.data)
			if ff != nil {
				f.data, f.dataSize = ff, ff.size
			}
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return f, nil
}

func (e *entry) regular() bool {
	return !e.hardLink && (e.mode&modeTypeMask == modeRegular || e.mode&modeTypeMask == 0)
}

// File is an open file or folder of a Volume. A regular file is also an
// io.ReaderAt over its data fork.
type File struct {
	v        *Volume
	e        *entry
	path     string
	data     io.ReaderAt // the data fork, or the decompressed data of a decmpfs file
	dataSize int64
	off      int64
	dir      []fs.DirEntry
	read     bool
}

func (f *File) Stat() (fs.FileInfo, error) { return info{f.e, f.size()}, nil }
func (f *File) Close() error               { return nil }

func (f *File) size() int64 {
	switch {
	case f.e.folder:
		return 0
	case f.data != nil:
		return f.dataSize
	}
	return int64(f.e.data.size)
}

func (f *File) check() error {
	switch {
	case f.e.folder:
		return &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrInvalid}
	case f.data == nil:
		return &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrInvalid} // a link
	}
	return nil
}

// ReadAt reads the data fork.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.data.ReadAt(b, off)
}

func (f *File) Read(b []byte) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	n, err := f.data.ReadAt(b, f.off)
	f.off += int64(n)
	return n, err
}

// ReadDir implements fs.ReadDirFile.
func (f *File) ReadDir(n int) ([]fs.DirEntry, error) {
	if !f.e.folder {
		return nil, &fs.PathError{Op: "readdir", Path: f.path, Err: fs.ErrInvalid}
	}
	if !f.read {
		kids, err := f.v.children(f.e.id)
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: f.path, Err: err}
		}
		sort.Slice(kids, func(i, j int) bool { return kids[i].name < kids[j].name })
		for _, k := range kids {
			if r, err := f.v.resolve(k); err == nil {
				k = r // a link whose target is missing lists as a link
			}
			f.dir = append(f.dir, fs.FileInfoToDirEntry(info{k, int64(k.data.size)}))
		}
		f.read = true
	}
	if n <= 0 {
		out := f.dir
		f.dir = nil
		return out, nil
	}
	if len(f.dir) == 0 {
		return nil, io.EOF
	}
	m := min(n, len(f.dir))
	out := f.dir[:m]
	f.dir = f.dir[m:]
	return out, nil
}

type info struct {
	e    *entry
	size int64
}

func (i info) Name() string { return i.e.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	perm := fs.FileMode(i.e.mode & 0o777)
	switch {
	case i.e.folder:
		return fs.ModeDir | perm
	case i.e.hardLink:
		return fs.ModeIrregular | perm
	case i.e.mode&modeTypeMask == modeSymlink:
		return fs.ModeSymlink | perm
	}
	return perm
}
func (i info) ModTime() time.Time {
	if i.e.modTime == 0 {
		return time.Time{}
	}
	return time.Unix(int64(i.e.modTime)-hfsEpochOffset, 0).UTC()
}
func (i info) IsDir() bool { return i.e.folder }
func (i info) Sys() any    { return nil }

// Compressed reports whether fi (from this package) is a transparently
// compressed file.
func Compressed(fi fs.FileInfo) bool {
	in, ok := fi.(info)
	return ok && in.e.flags&ufCompressed != 0
}
