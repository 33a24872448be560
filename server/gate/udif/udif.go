// Package udif reads Apple's UDIF disk images (.dmg) within bounds: the
// 512-byte koly trailer, the blkx table of its XML resource fork, and each
// partition's mish chunk table. A partition is exposed as an io.ReaderAt
// that decodes the chunks a read touches, on demand, keeping the last few
// decoded chunks in a small cache, so a 1 GB image is never held in memory.
//
// Chunk types read: raw, zero-fill and ignore (zeros), zlib (UDZO), bzip2
// (UDBZ), ADC (UDCO), LZFSE/LZVN (ULFO, server/gate/lzfse) and LZMA (ULMO:
// an xz stream, xz.go). An unknown chunk type is refused with
// ReasonUnsupportedCompression when a read reaches it.
//
// Every number in an image is hostile: the chunk count, each chunk's
// decoded size and its expansion ratio, the partition's size and the total
// bytes decompressed over the Image's lifetime are bounded (Limits), and
// chunks must lie inside the file and must not overlap.
package udif

import (
	"compress/bzip2"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"sync"

	"howett.net/plist"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/gate/lzfse"
)

// Reason codes (server/apperr, docs/errors.md).
const (
	ReasonUnreadable             = apperr.GatePackageUnreadable
	ReasonTooLarge               = apperr.GatePackageTooLarge
	ReasonUnsupportedCompression = apperr.GatePackageUnsupportedCompression
	SectorSize                   = 512
	kolySize                     = 512
	mishHeaderSize               = 204
	chunkSize                    = 40
	maxSignatureBytes            = 10 << 20
	defaultMaxChunks             = 1 << 20
	defaultMaxChunkBytes         = 64 << 20
	defaultMaxRatio              = 4096
	defaultMaxDecompressed       = 4 << 30
	defaultMaxPartitionBytes     = 1 << 44 // 16 TiB: only virtual, never allocated
	defaultMaxXMLBytes           = 16 << 20
	defaultCacheChunks           = 2
	defaultMaxPartitions         = 64
)

// Error is what every function of this package returns for a bad image.
type Error struct {
	Reason string
	Detail string
	Err    error
}

func (e *Error) Error() string {
	s := e.Reason + ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func fail(reason string, err error, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...), Err: err}
}

// Limits bound an image. The zero value of a field means its default.
type Limits struct {
	MaxXMLBytes   int64 // the XML resource fork; default 16 MiB
	MaxPartitions int   // blkx entries; default 64
	MaxChunks     int   // chunks over all partitions; default 1 048 576
	MaxChunkBytes int64 // one chunk, decoded; default 64 MiB
	MaxRatio      int64 // decoded / stored bytes of a compressed chunk; default 4096
	// MaxDecompressedBytes bounds the bytes decoded over the Image's
	// lifetime (cache misses count each time); default 4 GiB.
	MaxDecompressedBytes int64
	MaxPartitionBytes    int64 // a partition's declared size; default 16 TiB
	CacheChunks          int   // decoded chunks kept; default 2
	// CheckPlist, when set, bounds the XML resource fork (depth, node
	// count) before it is decoded: the gate passes its bounded plist check.
	CheckPlist func([]byte) error
}

func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxXMLBytes, defaultMaxXMLBytes)
	def(&l.MaxChunkBytes, defaultMaxChunkBytes)
	def(&l.MaxRatio, defaultMaxRatio)
	def(&l.MaxDecompressedBytes, defaultMaxDecompressed)
	def(&l.MaxPartitionBytes, defaultMaxPartitionBytes)
	if l.MaxPartitions <= 0 {
		l.MaxPartitions = defaultMaxPartitions
	}
	if l.MaxChunks <= 0 {
		l.MaxChunks = defaultMaxChunks
	}
	if l.CacheChunks <= 0 {
		l.CacheChunks = defaultCacheChunks
	}
	return l
}

// Chunk types of a mish table.
const (
	chunkZeroFill   = 0x00000000
	chunkRaw        = 0x00000001
	chunkIgnore     = 0x00000002
	chunkComment    = 0x7ffffffe
	chunkADC        = 0x80000004
	chunkZlib       = 0x80000005
	chunkBzip2      = 0x80000006
	chunkLZFSE      = 0x80000007
	chunkLZMA       = 0x80000008
	chunkTerminator = 0xffffffff
)

// ChunkTypeName names a chunk type for evidence and errors.
func ChunkTypeName(t uint32) string {
	switch t {
	case chunkZeroFill:
		return "zero"
	case chunkRaw:
		return "raw"
	case chunkIgnore:
		return "ignore"
	case chunkADC:
		return "adc"
	case chunkZlib:
		return "zlib"
	case chunkBzip2:
		return "bzip2"
	case chunkLZFSE:
		return "lzfse"
	case chunkLZMA:
		return "lzma"
	}
	return fmt.Sprintf("0x%08x", t)
}

// Image is an opened UDIF image.
type Image struct {
	ra         io.ReaderAt
	size       int64
	lim        Limits
	Partitions []*Partition
	// Signature is the embedded code-signing superblob the trailer points
	// at (nil when unsigned), at most 10 MiB.
	Signature []byte
	Sectors   uint64 // the trailer's sector count of the whole disk

	mu           sync.Mutex
	decompressed int64
}

// Partition is one blkx entry: a run of sectors of the decoded disk.
type Partition struct {
	Name        string // e.g. "disk image (Apple_HFS : 4)"
	FirstSector uint64 // on the decoded disk
	Sectors     uint64
	chunks      []chunk
	img         *Image

	mu    sync.Mutex
	cache []cached // most recently used last
}

type chunk struct {
	typ           uint32
	sector, count uint64 // relative to the partition
	off, length   int64  // stored bytes in the file
}

type cached struct {
	index int
	data  []byte
}

// Open reads the trailer, the resource fork and every chunk table of the
// size bytes of ra.
func Open(ra io.ReaderAt, size int64, lim Limits) (*Image, error) {
	lim = lim.withDefaults()
	if size < kolySize {
		return nil, fail(ReasonUnreadable, nil, "%d bytes, shorter than the koly trailer", size)
	}
	k := make([]byte, kolySize)
	if _, err := ra.ReadAt(k, size-kolySize); err != nil {
		return nil, fail(ReasonUnreadable, err, "reading the koly trailer")
	}
	if string(k[:4]) != "koly" {
		return nil, fail(ReasonUnreadable, nil, "no koly trailer")
	}
	be := binary.BigEndian
	dataOff := int64(be.Uint64(k[24:]))
	xmlOff, xmlLen := int64(be.Uint64(k[216:])), int64(be.Uint64(k[224:]))
	sigOff, sigLen := int64(be.Uint64(k[296:])), int64(be.Uint64(k[304:]))
	img := &Image{ra: ra, size: size, lim: lim, Sectors: be.Uint64(k[492:])}
	if dataOff < 0 || dataOff > size {
		return nil, fail(ReasonUnreadable, nil, "the data fork offset %d is outside the file", dataOff)
	}
	if sigLen > 0 {
		if sigOff < 0 || sigLen > maxSignatureBytes || sigOff > size-sigLen {
			return nil, fail(ReasonUnreadable, nil, "the code signature (%d bytes at %d) does not fit", sigLen, sigOff)
		}
		img.Signature = make([]byte, sigLen)
		if _, err := ra.ReadAt(img.Signature, sigOff); err != nil {
			return nil, fail(ReasonUnreadable, err, "reading the code signature")
		}
	}
	if xmlLen <= 0 {
		return nil, fail(ReasonUnreadable, nil, "no XML resource fork (an old image without a blkx table)")
	}
	if xmlLen > lim.MaxXMLBytes {
		return nil, fail(ReasonTooLarge, nil, "the resource fork declares %d bytes, more than %d", xmlLen, lim.MaxXMLBytes)
	}
	if xmlOff < 0 || xmlOff > size-xmlLen {
		return nil, fail(ReasonUnreadable, nil, "the resource fork (%d bytes at %d) does not fit", xmlLen, xmlOff)
	}
	raw := make([]byte, xmlLen)
	if _, err := ra.ReadAt(raw, xmlOff); err != nil {
		return nil, fail(ReasonUnreadable, err, "reading the resource fork")
	}
	if lim.CheckPlist != nil {
		if err := lim.CheckPlist(raw); err != nil {
			return nil, err
		}
	}
	var rf struct {
		ResourceFork struct {
			Blkx []struct {
				Name   string `plist:"Name"`
				CFName string `plist:"CFName"`
				Data   []byte `plist:"Data"`
			} `plist:"blkx"`
		} `plist:"resource-fork"`
	}
	if _, err := plist.Unmarshal(raw, &rf); err != nil {
		return nil, fail(ReasonUnreadable, err, "decoding the resource fork")
	}
	if len(rf.ResourceFork.Blkx) > lim.MaxPartitions {
		return nil, fail(ReasonTooLarge, nil, "%d partitions, more than %d", len(rf.ResourceFork.Blkx), lim.MaxPartitions)
	}
	chunks := 0
	for _, b := range rf.ResourceFork.Blkx {
		name := b.Name
		if name == "" {
			name = b.CFName
		}
		p, err := img.parseMish(name, b.Data, dataOff, &chunks)
		if err != nil {
			return nil, err
		}
		img.Partitions = append(img.Partitions, p)
	}
	return img, nil
}

// parseMish reads one partition's chunk table.
func (img *Image) parseMish(name string, m []byte, dataOff int64, total *int) (*Partition, error) {
	be := binary.BigEndian
	if len(m) < mishHeaderSize || string(m[:4]) != "mish" {
		return nil, fail(ReasonUnreadable, nil, "partition %q: no mish chunk table", name)
	}
	p := &Partition{Name: name, FirstSector: be.Uint64(m[8:]), Sectors: be.Uint64(m[16:]), img: img}
	if p.Sectors > uint64(img.lim.MaxPartitionBytes/SectorSize) {
		return nil, fail(ReasonTooLarge, nil, "partition %q declares %d sectors, more than %d bytes", name, p.Sectors, img.lim.MaxPartitionBytes)
	}
	base := dataOff + int64(be.Uint64(m[24:]))
	n := int(be.Uint32(m[200:]))
	if n < 0 || n > (len(m)-mishHeaderSize)/chunkSize {
		return nil, fail(ReasonUnreadable, nil, "partition %q: %d chunks do not fit its table", name, be.Uint32(m[200:]))
	}
	if *total += n; *total > img.lim.MaxChunks {
		return nil, fail(ReasonTooLarge, nil, "more than %d chunks", img.lim.MaxChunks)
	}
	var end uint64
	for i := 0; i < n; i++ {
		c := m[mishHeaderSize+chunkSize*i:]
		ch := chunk{typ: be.Uint32(c), sector: be.Uint64(c[8:]), count: be.Uint64(c[16:])}
		off, length := be.Uint64(c[24:]), be.Uint64(c[32:])
		switch ch.typ {
		case chunkTerminator:
			i = n
			continue
		case chunkComment:
			continue
		}
		if ch.count == 0 {
			continue
		}
		if ch.sector < end || ch.count > p.Sectors || ch.sector > p.Sectors-ch.count {
			return nil, fail(ReasonUnreadable, nil, "partition %q: chunk %d (sectors %d+%d) overlaps another or leaves the partition", name, i, ch.sector, ch.count)
		}
		end = ch.sector + ch.count
		if int64(ch.count) > img.lim.MaxChunkBytes/SectorSize {
			return nil, fail(ReasonTooLarge, nil, "partition %q: chunk %d decodes to %d sectors, more than %d bytes", name, i, ch.count, img.lim.MaxChunkBytes)
		}
		if ch.typ != chunkZeroFill && ch.typ != chunkIgnore {
			if off > uint64(img.size) || length > uint64(img.size) || base < 0 || base+int64(off) > img.size-int64(length) {
				return nil, fail(ReasonUnreadable, nil, "partition %q: chunk %d (%d bytes at %d) is outside the file", name, i, length, off)
			}
			ch.off, ch.length = base+int64(off), int64(length)
			decoded := int64(ch.count) * SectorSize
			if ch.typ == chunkRaw && ch.length != decoded {
				return nil, fail(ReasonUnreadable, nil, "partition %q: raw chunk %d stores %d bytes for %d", name, i, ch.length, decoded)
			}
			if ch.typ != chunkRaw && (ch.length == 0 || decoded/ch.length > img.lim.MaxRatio) {
				return nil, fail(ReasonTooLarge, nil, "partition %q: chunk %d expands %d bytes to %d, more than %d times", name, i, ch.length, decoded, img.lim.MaxRatio)
			}
		}
		p.chunks = append(p.chunks, ch)
	}
	return p, nil
}

// Size is the partition's decoded size in bytes.
func (p *Partition) Size() int64 { return int64(p.Sectors) * SectorSize }

// ChunkTypes lists the distinct chunk types the partition uses.
func (p *Partition) ChunkTypes() []string {
	seen := map[uint32]bool{}
	var out []string
	for _, c := range p.chunks {
		if !seen[c.typ] {
			seen[c.typ] = true
			out = append(out, ChunkTypeName(c.typ))
		}
	}
	sort.Strings(out)
	return out
}

// ReadAt reads decoded bytes of the partition; sectors no chunk covers
// read as zeros.
func (p *Partition) ReadAt(b []byte, off int64) (int, error) {
	size := p.Size()
	if off < 0 {
		return 0, fail(ReasonUnreadable, nil, "negative offset")
	}
	if off >= size {
		return 0, io.EOF
	}
	want := len(b)
	if int64(want) > size-off {
		b = b[:size-off]
	}
	n := 0
	for n < len(b) {
		pos := off + int64(n)
		sector := uint64(pos / SectorSize)
		i := sort.Search(len(p.chunks), func(i int) bool { return p.chunks[i].sector+p.chunks[i].count > sector })
		if i == len(p.chunks) || p.chunks[i].sector > sector {
			// a gap: zeros up to the next chunk
			stop := size
			if i < len(p.chunks) {
				stop = int64(p.chunks[i].sector) * SectorSize
			}
			m := min(int64(len(b)-n), stop-pos)
			clear(b[n : n+int(m)])
			n += int(m)
			continue
		}
		c := &p.chunks[i]
		start := int64(c.sector) * SectorSize
		if c.typ == chunkZeroFill || c.typ == chunkIgnore {
			m := min(int64(len(b)-n), start+int64(c.count)*SectorSize-pos)
			clear(b[n : n+int(m)])
			n += int(m)
			continue
		}
		data, err := p.decoded(i)
		if err != nil {
			return n, err
		}
		n += copy(b[n:], data[pos-start:])
	}
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// decoded returns chunk i's bytes, from the cache or decoded now.
func (p *Partition) decoded(i int) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.cache {
		if c.index == i {
			p.cache = append(append(p.cache[:k:k], p.cache[k+1:]...), c)
			return c.data, nil
		}
	}
	c := p.chunks[i]
	size := int64(c.count) * SectorSize
	if err := p.img.spend(size); err != nil {
		return nil, err
	}
	var buf []byte
	if len(p.cache) >= p.img.lim.CacheChunks {
		old := p.cache[0]
		p.cache = p.cache[1:]
		if int64(cap(old.data)) >= size {
			buf = old.data[:size]
		}
	}
	if buf == nil {
		buf = make([]byte, size)
	}
	if err := p.decode(c, buf); err != nil {
		return nil, err
	}
	p.cache = append(p.cache, cached{index: i, data: buf})
	return buf, nil
}

func (img *Image) spend(n int64) error {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.decompressed+n > img.lim.MaxDecompressedBytes {
		return fail(ReasonTooLarge, nil, "decoding more than %d bytes of the image", img.lim.MaxDecompressedBytes)
	}
	img.decompressed += n
	return nil
}

// Decompressed is how many bytes the image has decoded so far.
func (img *Image) Decompressed() int64 {
	img.mu.Lock()
	defer img.mu.Unlock()
	return img.decompressed
}

func (p *Partition) decode(c chunk, dst []byte) error {
	stored := io.NewSectionReader(p.img.ra, c.off, c.length)
	var r io.Reader
	switch c.typ {
	case chunkRaw:
		r = stored
	case chunkZlib:
		zr, err := zlib.NewReader(stored)
		if err != nil {
			return fail(ReasonUnreadable, err, "partition %q: zlib chunk at sector %d", p.Name, c.sector)
		}
		defer zr.Close()
		r = zr
	case chunkBzip2:
		r = bzip2.NewReader(stored)
	case chunkADC:
		src := make([]byte, c.length)
		if _, err := io.ReadFull(stored, src); err != nil {
			return fail(ReasonUnreadable, err, "partition %q: reading ADC chunk at sector %d", p.Name, c.sector)
		}
		if n, err := decodeADC(dst, src); err != nil || n != len(dst) {
			return fail(ReasonUnreadable, err, "partition %q: ADC chunk at sector %d decodes to %d of %d bytes", p.Name, c.sector, n, len(dst))
		}
		return nil
	case chunkLZFSE:
		src := make([]byte, c.length)
		if _, err := io.ReadFull(stored, src); err != nil {
			return fail(ReasonUnreadable, err, "partition %q: reading LZFSE chunk at sector %d", p.Name, c.sector)
		}
		if n, err := lzfse.Decode(dst, src); err != nil || n != len(dst) {
			return fail(ReasonUnreadable, err, "partition %q: LZFSE chunk at sector %d decodes to %d of %d bytes", p.Name, c.sector, n, len(dst))
		}
		return nil
	case chunkLZMA:
		if err := decodeXZ(dst, stored); err != nil {
			return fail(ReasonUnreadable, err, "partition %q: lzma chunk at sector %d", p.Name, c.sector)
		}
		return nil
	default:
		return fail(ReasonUnsupportedCompression, nil, "partition %q: unknown chunk type %s", p.Name, ChunkTypeName(c.typ))
	}
	if _, err := io.ReadFull(r, dst); err != nil {
		return fail(ReasonUnreadable, err, "partition %q: %s chunk at sector %d is shorter than %d bytes", p.Name, ChunkTypeName(c.typ), c.sector, len(dst))
	}
	// The stream must end here: reading on checks its checksum (zlib's
	// Adler-32, bzip2's CRC), and a stream longer than its chunk is damaged.
	if n, err := r.Read(make([]byte, 1)); n > 0 || (err != nil && err != io.EOF) {
		return fail(ReasonUnreadable, err, "partition %q: %s chunk at sector %d does not end after %d bytes or fails its checksum", p.Name, ChunkTypeName(c.typ), c.sector, len(dst))
	}
	return nil
}

// decodeADC decodes Apple Data Compression (an LZ77 of 1-, 2- and 3-byte
// opcodes) into dst, stopping when dst is full. It returns the bytes
// written.
func decodeADC(dst, src []byte) (int, error) {
	in, out := 0, 0
	for in < len(src) && out < len(dst) {
		op := src[in]
		switch {
		case op&0x80 != 0: // literal run of 1..128 bytes
			n := int(op&0x7f) + 1
			if in+1+n > len(src) {
				return out, fail(ReasonUnreadable, nil, "ADC literal runs past the chunk")
			}
			out += copy(dst[out:], src[in+1:in+1+n])
			in += 1 + n
			continue
		case op&0x40 != 0: // 3-byte copy: length 4..67, offset 0..65535
			if in+3 > len(src) {
				return out, fail(ReasonUnreadable, nil, "ADC copy runs past the chunk")
			}
			if err := adcCopy(dst, &out, int(op&0x3f)+4, int(src[in+1])<<8|int(src[in+2])); err != nil {
				return out, err
			}
			in += 3
		default: // 2-byte copy: length 3..18, offset 0..1023
			if in+2 > len(src) {
				return out, fail(ReasonUnreadable, nil, "ADC copy runs past the chunk")
			}
			if err := adcCopy(dst, &out, int(op>>2)+3, int(op&3)<<8|int(src[in+1])); err != nil {
				return out, err
			}
			in += 2
		}
	}
	return out, nil
}

func adcCopy(dst []byte, out *int, length, offset int) error {
	from := *out - offset - 1
	if from < 0 {
		return fail(ReasonUnreadable, nil, "ADC copy from before the chunk's start")
	}
	for k := 0; k < length && *out < len(dst); k++ { // byte by byte: the source may overlap the output
		dst[*out] = dst[from+k]
		*out++
	}
	return nil
}

// SignatureHasSlot reports whether the image's code signature indexes a non-empty
// blob of the given slot (0x10002: a stapled notarisation ticket).
func (img *Image) SignatureHasSlot(slot uint32) bool {
	b := img.Signature
	be := binary.BigEndian
	if len(b) < 12 || be.Uint32(b) != 0xfade0cc0 {
		return false
	}
	count := int(be.Uint32(b[8:]))
	for i := 0; i < count && 12+8*i+8 <= len(b); i++ {
		typ, off := be.Uint32(b[12+8*i:]), int(be.Uint32(b[16+8*i:]))
		if typ == slot && off >= 0 && off+8 <= len(b) && be.Uint32(b[off+4:]) > 8 {
			return true
		}
	}
	return false
}
