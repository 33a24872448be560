package udif

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// An LZMA chunk (type 0x80000008, hdiutil's ULMO format) is one xz stream
// (7-Zip's DmgHandler names the type "XZ"): a stream header, blocks of
// LZMA2 data each with its check, the index and the stream footer.
//
// The container is read here rather than by github.com/ulikunitz/xz's
// xz.Reader because that reader allocates the dictionary a block header
// declares (up to 4 GiB): here the LZMA2 decoder (ulikunitz/xz/lzma) gets a
// dictionary of at most the chunk's decoded size, which is all a stream of
// that many bytes can refer back to, and a block header declaring more than
// maxXZDict is refused outright.

var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

const (
	xzFilterLZMA2 = 0x21
	// maxXZDict is the largest dictionary a block header may declare
	// (xz's own presets stop at 64 MiB; 1.5 GiB is the format's largest
	// usual value): a header asking for more is hostile.
	maxXZDict = 1536 << 20
	// maxXZBlocks bounds the blocks of one chunk's stream.
	maxXZBlocks = 4096
)

var crc64Table = crc64.MakeTable(crc64.ECMA)

// decodeXZ decodes the xz stream in src into dst, which it must fill
// exactly; the stream's checks, index and footer must hold.
func decodeXZ(dst []byte, src io.Reader) error {
	r := bufio.NewReaderSize(src, 4096)
	head := make([]byte, 12)
	if _, err := io.ReadFull(r, head); err != nil {
		return errors.New("xz: truncated stream header")
	}
	if !bytes.Equal(head[:6], xzMagic) {
		return errors.New("xz: no stream header magic")
	}
	if head[6] != 0 || head[7]&0xf0 != 0 || crc32.ChecksumIEEE(head[6:8]) != binary.LittleEndian.Uint32(head[8:]) {
		return errors.New("xz: bad stream flags")
	}
	check := head[7]
	var sum func() hash.Hash
	checkLen := 0
	switch check {
	case 0x00:
	case 0x01:
		sum, checkLen = func() hash.Hash { return crc32.NewIEEE() }, 4
	case 0x04:
		sum, checkLen = func() hash.Hash { return crc64.New(crc64Table) }, 8
	case 0x0a:
		sum, checkLen = sha256.New, 32
	default:
		return errors.New("xz: unsupported check type")
	}
	type record struct{ unpadded, size uint64 }
	var records []record
	out := 0
	for {
		first, err := r.ReadByte()
		if err != nil {
			return errors.New("xz: truncated before the index")
		}
		if first == 0 { // the index indicator
			break
		}
		if len(records) == maxXZBlocks {
			return errors.New("xz: too many blocks")
		}
		hdr := make([]byte, (int(first)+1)*4)
		hdr[0] = first
		if _, err := io.ReadFull(r, hdr[1:]); err != nil {
			return errors.New("xz: truncated block header")
		}
		dict, err := parseXZBlockHeader(hdr)
		if err != nil {
			return err
		}
		// The dictionary need not exceed what is left to decode; lzma's
		// minimum is 4 KiB.
		dict = min(dict, int64(len(dst)-out))
		dict = max(dict, lzma.MinDictCap)
		cr := &countingReader{r: r}
		lr, err := lzma.Reader2Config{DictCap: int(dict)}.NewReader2(cr)
		if err != nil {
			return errors.New("xz: bad LZMA2 data")
		}
		n, err := io.ReadFull(lr, dst[out:])
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return errors.New("xz: bad LZMA2 data")
		}
		// The block must end (its LZMA2 end marker) where dst is full or
		// earlier: one byte more would overflow the chunk.
		if k, err := lr.Read(make([]byte, 1)); k > 0 || err != io.EOF {
			return errors.New("xz: a block decodes past the chunk's size, or is damaged")
		}
		block := dst[out : out+n]
		out += n
		for pad := (4 - cr.n%4) % 4; pad > 0; pad-- {
			if b, err := r.ReadByte(); err != nil || b != 0 {
				return errors.New("xz: bad block padding")
			}
		}
		if checkLen > 0 {
			want := make([]byte, checkLen)
			if _, err := io.ReadFull(r, want); err != nil {
				return errors.New("xz: truncated block check")
			}
			h := sum()
			h.Write(block)
			got := h.Sum(nil)
			if check != 0x0a { // CRC-32 and CRC-64 are stored little-endian
				for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
					got[i], got[j] = got[j], got[i]
				}
			}
			if !bytes.Equal(got, want) {
				return errors.New("xz: a block fails its check")
			}
		}
		records = append(records, record{uint64(len(hdr)) + uint64(cr.n) + uint64(checkLen), uint64(n)})
	}
	if out != len(dst) {
		return io.ErrUnexpectedEOF
	}
	// The index: the records must match the blocks just read.
	ix := crc32.NewIEEE()
	ix.Write([]byte{0})
	tr := io.TeeReader(r, ix)
	br := lzma.ByteReader(tr)
	count, err := readUvarint(br)
	if err != nil || count != uint64(len(records)) {
		return errors.New("xz: the index does not list the blocks")
	}
	size := 1 + uvarintLen(count)
	for _, rec := range records {
		u, err1 := readUvarint(br)
		s, err2 := readUvarint(br)
		if err1 != nil || err2 != nil || u != rec.unpadded || s != rec.size {
			return errors.New("xz: the index does not match the blocks")
		}
		size += uvarintLen(u) + uvarintLen(s)
	}
	for ; size%4 != 0; size++ {
		if b, err := br.ReadByte(); err != nil || b != 0 {
			return errors.New("xz: bad index padding")
		}
	}
	tail := make([]byte, 16) // the index CRC-32, then the 12-byte footer
	want := ix.Sum32()
	if _, err := io.ReadFull(r, tail); err != nil {
		return errors.New("xz: truncated index or footer")
	}
	le := binary.LittleEndian
	if le.Uint32(tail) != want || string(tail[14:]) != "YZ" || !bytes.Equal(tail[12:14], head[6:8]) ||
		crc32.ChecksumIEEE(tail[8:14]) != le.Uint32(tail[4:]) || (uint64(le.Uint32(tail[8:]))+1)*4 != uint64(size+4) {
		return errors.New("xz: bad index or stream footer")
	}
	// Stream padding (zeros in multiples of four) may follow; nothing else.
	rest, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil || len(rest)%4 != 0 || bytes.Count(rest, []byte{0}) != len(rest) {
		return errors.New("xz: data after the stream")
	}
	return nil
}

// parseXZBlockHeader checks a block header (its size byte included) and
// returns the LZMA2 dictionary size it declares. Only a single LZMA2 filter
// is accepted: hdiutil writes no other filter chain.
func parseXZBlockHeader(hdr []byte) (int64, error) {
	n := len(hdr)
	if crc32.ChecksumIEEE(hdr[:n-4]) != binary.LittleEndian.Uint32(hdr[n-4:]) {
		return 0, errors.New("xz: block header fails its CRC")
	}
	flags := hdr[1]
	if flags&0x3c != 0 || flags&0x03 != 0 {
		return 0, errors.New("xz: unsupported block flags or filter chain")
	}
	br := lzma.ByteReader(bytes.NewReader(hdr[2 : n-4]))
	if flags&0x40 != 0 {
		if _, err := readUvarint(br); err != nil {
			return 0, errors.New("xz: bad block header")
		}
	}
	if flags&0x80 != 0 {
		if _, err := readUvarint(br); err != nil {
			return 0, errors.New("xz: bad block header")
		}
	}
	id, err1 := readUvarint(br)
	plen, err2 := readUvarint(br)
	prop, err3 := br.ReadByte()
	if err1 != nil || err2 != nil || err3 != nil || id != xzFilterLZMA2 || plen != 1 {
		return 0, errors.New("xz: the block's filter is not LZMA2")
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			break
		}
		if b != 0 {
			return 0, errors.New("xz: bad block header padding")
		}
	}
	dict, err := lzma.DecodeDictCap(prop)
	if err != nil || dict > maxXZDict {
		return 0, errors.New("xz: the block declares a dictionary over 1.5 GiB")
	}
	return dict, nil
}

// readUvarint reads xz's multibyte integer: at most 9 bytes, no
// superfluous zero byte.
func readUvarint(br io.ByteReader) (uint64, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if i > 0 && b == 0 {
			return 0, errors.New("xz: bad integer")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("xz: bad integer")
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// countingReader counts the bytes read through it (the LZMA2 data's
// length, for the block's padding and index record).
type countingReader struct {
	r io.ByteReader
	n int
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := c.ReadByte()
	if err != nil {
		return 0, err
	}
	p[0] = b
	return 1, nil
}
