package pkgread

import (
	"debug/pe"
	"encoding/binary"
	"io"
	"unicode/utf16"
)

// The PE identity is the VERSIONINFO resource's string table. The reader
// follows only the path to it — resource type 16 (RT_VERSION), its first
// name, its first language, the data entry — instead of parsing the whole
// resource tree: a tree is three directories deep, but its entries may
// point at shared subdirectories, so a full walk of a few kilobytes can
// unfold into billions of visits. Each directory scanned is bounded
// (MaxResourceEntries entries at most, looked at once), the data at most
// MaxFileBytes, and the VS_VERSIONINFO blocks nest at most four deep inside
// their parent's length, so every loop ends.

const (
	rtVersion         = 16
	maxVersionNesting = 4 // VS_VERSIONINFO > StringFileInfo > StringTable > String
)

func readPE(ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatPE, Platform: Windows}
	if size > 1<<32-1 {
		return id, fail(ReasonPackageTooLarge, FormatPE, nil, "a PE image is at most 4 GiB, this is %d bytes", size)
	}
	f, err := pe.NewFile(io.NewSectionReader(ra, 0, size))
	if err != nil {
		return id, fail(ReasonPackageUnreadable, FormatPE, err, "parsing the PE headers")
	}
	defer f.Close()
	raw, err := versionResource(ra, size, f, lim)
	if err != nil {
		return id, err
	}
	if raw == nil {
		return id, fail(ReasonBundleIDMissing, FormatPE, nil, "the executable has no version information (VERSIONINFO resource)")
	}
	vi := map[string]string{}
	parseVersionInfo(raw, vi)
	if len(vi) == 0 {
		return id, fail(ReasonBundleIDMissing, FormatPE, nil, "the executable's VERSIONINFO resource holds no strings")
	}
	id.VersionInfo = vi
	id.BundleIDs = addID(addID(nil, vi["InternalName"]), vi["ProductName"])
	id.Name = firstNonEmpty(vi["ProductName"], vi["FileDescription"])
	id.Version = firstNonEmpty(vi["ProductVersion"], vi["FileVersion"])
	id.Publisher = vi["CompanyName"]
	return id, nil
}

// versionResource returns the bytes of the first RT_VERSION resource, nil
// when there is none.
func versionResource(ra io.ReaderAt, size int64, f *pe.File, lim Limits) ([]byte, error) {
	var dirs []pe.DataDirectory
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		dirs = oh.DataDirectory[:min(len(oh.DataDirectory), int(oh.NumberOfRvaAndSizes))]
	case *pe.OptionalHeader64:
		dirs = oh.DataDirectory[:min(len(oh.DataDirectory), int(oh.NumberOfRvaAndSizes))]
	}
	const resourceDir = 2
	if len(dirs) <= resourceDir || dirs[resourceDir].Size == 0 {
		return nil, nil
	}
	base := dirs[resourceDir].VirtualAddress
	toOffset := func(rva uint32) (int64, bool) {
		for _, s := range f.Sections {
			span := max(s.VirtualSize, s.Size)
			if rva >= s.VirtualAddress && rva-s.VirtualAddress < span {
				off := int64(rva-s.VirtualAddress) + int64(s.Offset)
				return off, off < size
			}
		}
		return 0, false
	}
	read := func(rva uint32, n int) ([]byte, error) {
		off, ok := toOffset(rva)
		if !ok || int64(n) > size-off {
			return nil, fail(ReasonPackageUnreadable, FormatPE, nil, "the resource at RVA %#x lies outside the file", rva)
		}
		b := make([]byte, n)
		if _, err := ra.ReadAt(b, off); err != nil {
			return nil, fail(ReasonPackageUnreadable, FormatPE, err, "reading the resources")
		}
		return b, nil
	}
	le := binary.LittleEndian
	// find scans the directory at base+rel for the entry with the given ID
	// (id < 0: the first entry of any name), returning its OffsetToData.
	scanned := 0
	find := func(rel uint32, id int) (uint32, bool, error) {
		hdr, err := read(base+rel, 16)
		if err != nil {
			return 0, false, err
		}
		named, ids := int(le.Uint16(hdr[12:])), int(le.Uint16(hdr[14:]))
		n := named + ids
		if scanned += n; scanned > lim.MaxResourceEntries {
			return 0, false, fail(ReasonPackageTooLarge, FormatPE, nil, "more than %d resource directory entries", lim.MaxResourceEntries)
		}
		if n == 0 {
			return 0, false, nil
		}
		entries, err := read(base+rel+16, 8*n)
		if err != nil {
			return 0, false, err
		}
		for i := 0; i < n; i++ {
			name, data := le.Uint32(entries[8*i:]), le.Uint32(entries[8*i+4:])
			if id < 0 || (i >= named && name == uint32(id)) {
				return data, true, nil
			}
		}
		return 0, false, nil
	}
	rel := uint32(0)
	for level, want := range []int{rtVersion, -1, -1} {
		data, ok, err := find(rel, want)
		if err != nil || !ok {
			return nil, err
		}
		if data&0x80000000 == 0 {
			if level < 2 {
				return nil, fail(ReasonPackageUnreadable, FormatPE, nil, "the version resource's directory %d is data", level)
			}
			rel = data
			break
		}
		if level == 2 {
			return nil, fail(ReasonPackageTooDeep, FormatPE, nil, "the version resource nests deeper than Windows' three levels")
		}
		rel = data & 0x7fffffff
	}
	entry, err := read(base+rel, 16)
	if err != nil {
		return nil, err
	}
	dataRVA, dataSize := le.Uint32(entry), le.Uint32(entry[4:])
	if int64(dataSize) > lim.MaxFileBytes {
		return nil, fail(ReasonPackageTooLarge, FormatPE, nil, "a version resource of %d bytes, more than %d", dataSize, lim.MaxFileBytes)
	}
	return read(dataRVA, int(dataSize))
}

// parseVersionInfo collects the strings of a VS_VERSIONINFO block: every
// String of every StringTable of its StringFileInfo (the first table that
// sets a key wins). A block is wLength, wValueLength, wType, a NUL-ended
// UTF-16 key, padding to 32 bits, the value, padding, then its children up
// to wLength.
func parseVersionInfo(b []byte, out map[string]string) {
	var walk func(b []byte, depth int)
	walk = func(b []byte, depth int) {
		key, value, children := versionBlock(b)
		switch {
		case depth == 0 && key != "VS_VERSION_INFO":
			return
		case depth == 1 && key != "StringFileInfo":
			return
		case depth == 3:
			if _, ok := out[key]; !ok && key != "" {
				out[key] = utf16String(value)
			}
			return
		case depth >= maxVersionNesting:
			return
		}
		if depth == 0 {
			children = skipFixedInfo(b)
		}
		for off := 0; off+6 <= len(children); {
			l := int(binary.LittleEndian.Uint16(children[off:]))
			if l < 6 {
				return
			}
			end := min(off+l, len(children))
			walk(children[off:end], depth+1)
			off = align4(end)
		}
	}
	walk(b, 0)
}

// versionBlock splits a block into its key, the bytes after the key (a
// String's value), and the same bytes read as children.
func versionBlock(b []byte) (key string, rest, children []byte) {
	if len(b) < 6 {
		return "", nil, nil
	}
	l := min(int(binary.LittleEndian.Uint16(b)), len(b))
	var units []uint16
	off := 6
	for ; off+2 <= l; off += 2 {
		u := binary.LittleEndian.Uint16(b[off:])
		if u == 0 {
			off += 2
			break
		}
		units = append(units, u)
	}
	off = min(align4(off), l)
	return string(utf16.Decode(units)), b[off:l], b[off:l]
}

// skipFixedInfo returns the children of the root block: after its
// VS_FIXEDFILEINFO value (wValueLength bytes) and padding.
func skipFixedInfo(b []byte) []byte {
	_, rest, _ := versionBlock(b)
	if len(b) < 4 {
		return nil
	}
	v := int(binary.LittleEndian.Uint16(b[2:]))
	if v > len(rest) {
		return nil
	}
	return rest[min(align4(v), len(rest)):]
}

func align4(n int) int { return (n + 3) &^ 3 }

func utf16String(b []byte) string {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+2 <= len(b); i += 2 {
		u := binary.LittleEndian.Uint16(b[i:])
		if u == 0 {
			break
		}
		units = append(units, u)
	}
	return string(utf16.Decode(units))
}
