package pkgread

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
)

// CheckZipDirectory bounds a zip's central directory before archive/zip
// reads it. zip.NewReader allocates a File (a few hundred bytes) for every
// directory record it finds, reading records until one does not parse —
// the count the end record claims is only compared modulo 65 536 — and
// preallocates room for the claimed count: a 1 GiB download of bare records
// would cost gigabytes of heap. So the claimed count, and the records
// actually there (walked from every offset archive/zip may start at,
// without allocating), must be at most lim.MaxEntries, and their bytes at
// most lim.MaxCentralDirBytes. A file whose end record cannot be found is
// left to archive/zip, which refuses it.
func CheckZipDirectory(ra io.ReaderAt, size int64, lim Limits, f Format) error {
	lim = lim.withDefaults()
	end, endOff, ok := findZipEnd(ra, size)
	if !ok {
		return nil
	}
	le := binary.LittleEndian
	records := uint64(le.Uint16(end[10:]))
	dirSize := uint64(le.Uint32(end[12:]))
	dirOff := uint64(le.Uint32(end[16:]))
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		// zip64: the locator sits just before the end record.
		loc := make([]byte, 20)
		if endOff >= 20 {
			if _, err := ra.ReadAt(loc, endOff-20); err == nil && le.Uint32(loc) == 0x07064b50 &&
				le.Uint32(loc[4:]) == 0 && le.Uint32(loc[16:]) == 1 {
				p := int64(le.Uint64(loc[8:]))
				rec := make([]byte, 56)
				if p >= 0 && p <= size-56 {
					if _, err := ra.ReadAt(rec, p); err == nil && le.Uint32(rec) == 0x06064b50 {
						endOff = p
						records, dirSize, dirOff = le.Uint64(rec[32:]), le.Uint64(rec[40:]), le.Uint64(rec[48:])
					}
				}
			}
		}
	}
	if records > uint64(lim.MaxEntries) {
		return fail(ReasonPackageTooLarge, f, nil, "the zip claims %d entries, more than %d", records, lim.MaxEntries)
	}
	if dirSize > uint64(lim.MaxCentralDirBytes) {
		return fail(ReasonPackageTooLarge, f, nil, "the zip's central directory claims %d bytes, more than %d", dirSize, lim.MaxCentralDirBytes)
	}
	// archive/zip starts at base+dirOff (base: data prepended to the zip),
	// or at dirOff when a record parses there; walk both.
	starts := []int64{int64(dirOff)}
	if base := endOff - int64(dirSize) - int64(dirOff); base > 0 {
		starts = append(starts, base+int64(dirOff))
	}
	for _, off := range starts {
		if err := walkZipDirectory(ra, size, off, lim, f); err != nil {
			return err
		}
	}
	return nil
}

// findZipEnd finds the end-of-central-directory record as archive/zip does:
// the last signature in the final 1 KiB, else in the final 65 KiB, whose
// comment length fits.
func findZipEnd(ra io.ReaderAt, size int64) ([]byte, int64, bool) {
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		buf := make([]byte, n)
		if _, err := ra.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return nil, 0, false
		}
		for i := len(buf) - 22; i >= 0; i-- {
			if bytes.Equal(buf[i:i+4], []byte("PK\x05\x06")) && i+22+int(binary.LittleEndian.Uint16(buf[i+20:])) <= len(buf) {
				return buf[i : i+22], size - n + int64(i), true
			}
		}
		if n == size {
			break
		}
	}
	return nil, 0, false
}

// walkZipDirectory counts the directory records from off on, as
// archive/zip reads them (until one is not a record), refusing more than
// lim.MaxEntries of them or more than lim.MaxCentralDirBytes of their bytes.
func walkZipDirectory(ra io.ReaderAt, size, off int64, lim Limits, f Format) error {
	if off < 0 || off >= size {
		return nil
	}
	sr := bufio.NewReaderSize(io.NewSectionReader(ra, off, size-off), 64<<10)
	hdr := make([]byte, 46)
	var count int
	var total int64
	for {
		if _, err := io.ReadFull(sr, hdr); err != nil || binary.LittleEndian.Uint32(hdr) != 0x02014b50 {
			return nil
		}
		n := int64(binary.LittleEndian.Uint16(hdr[28:])) + int64(binary.LittleEndian.Uint16(hdr[30:])) + int64(binary.LittleEndian.Uint16(hdr[32:]))
		count++
		total += 46 + n
		if count > lim.MaxEntries {
			return fail(ReasonPackageTooLarge, f, nil, "the zip has more than %d entries", lim.MaxEntries)
		}
		if total > lim.MaxCentralDirBytes {
			return fail(ReasonPackageTooLarge, f, nil, "the zip's central directory is larger than %d bytes", lim.MaxCentralDirBytes)
		}
		if _, err := sr.Discard(int(n)); err != nil {
			return nil
		}
	}
}
