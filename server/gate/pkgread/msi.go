package pkgread

import (
	"encoding/binary"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/gate/cfb"
)

// CFBLimits are the compound-file bounds of lim: MaxTOCBytes for each
// structure read whole, MaxEntries directory entries, MaxDepth storages.
func CFBLimits(lim Limits) cfb.Limits {
	lim = lim.withDefaults()
	return cfb.Limits{MaxBytes: lim.MaxTOCBytes, MaxEntries: lim.MaxEntries, MaxDepth: lim.MaxDepth}
}

// CFBReason is the reason code of a compound-file error.
func CFBReason(err error) Reason {
	switch {
	case errors.Is(err, cfb.ErrTooLarge):
		return ReasonPackageTooLarge
	case errors.Is(err, cfb.ErrTooDeep):
		return ReasonPackageTooDeep
	}
	return ReasonPackageUnreadable
}

// readMSI reads the Property table of an MSI database: a compound file whose
// tables are streams with encoded names, whose strings live in one pool
// (_StringPool holds lengths and reference counts, _StringData the bytes),
// and whose rows are stored column by column.
func readMSI(ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatMSI, Platform: Windows}
	c, err := cfb.Open(ra, size, CFBLimits(lim))
	if err != nil {
		return id, fail(CFBReason(err), FormatMSI, err, "reading the compound file")
	}
	streams := map[string]*cfb.Entry{}
	for _, e := range c.Children(c.Root()) {
		if e.Type == cfb.TypeStream {
			streams[decodeMSIName(e.Name)] = e
		}
	}
	get := func(name string) ([]byte, error) {
		e := streams[name]
		if e == nil {
			return nil, fail(ReasonPackageUnreadable, FormatMSI, nil, "no %s stream: not an MSI database", name)
		}
		b, err := c.ReadStream(e)
		if err != nil {
			return nil, fail(CFBReason(err), FormatMSI, err, "reading %s", name)
		}
		return b, nil
	}
	pool, err := get("!_StringPool")
	if err != nil {
		return id, err
	}
	data, err := get("!_StringData")
	if err != nil {
		return id, err
	}
	strs, refSize, err := msiStrings(pool, data)
	if err != nil {
		return id, err
	}
	table, err := get("!Property")
	if err != nil {
		return id, err
	}
	props, err := msiProperties(table, strs, refSize)
	if err != nil {
		return id, err
	}
	id.Name = props["ProductName"]
	id.Version = props["ProductVersion"]
	id.Publisher = props["Manufacturer"]
	id.ProductCode = props["ProductCode"]
	id.UpgradeCode = props["UpgradeCode"]
	id.BundleIDs = addID(addID(nil, id.Name), id.UpgradeCode)
	return id, nil
}

// msiStrings decodes the string pool. Index 0 is the empty string. The
// pool's first entry is a header: the code page, and a flag saying string
// references are 3 bytes wide instead of 2. A string longer than 64 KiB is
// written as a (0, high) entry followed by (low, refcount).
func msiStrings(pool, data []byte) ([]string, int, error) {
	if len(pool) < 4 || len(pool)%4 != 0 {
		return nil, 0, fail(ReasonPackageUnreadable, FormatMSI, nil, "string pool of %d bytes", len(pool))
	}
	le := binary.LittleEndian
	refSize := 2
	if le.Uint16(pool[2:])&0x8000 != 0 {
		refSize = 3
	}
	strs := []string{""}
	off := 0
	for i := 4; i < len(pool); i += 4 {
		n, refs := int(le.Uint16(pool[i:])), le.Uint16(pool[i+2:])
		if n == 0 && refs == 0 {
			strs = append(strs, "")
			continue
		}
		if n == 0 {
			if i+8 > len(pool) {
				break
			}
			n = int(refs)<<16 | int(le.Uint16(pool[i+4:]))
			i += 4
		}
		if off+n > len(data) || n < 0 {
			return nil, 0, fail(ReasonPackageUnreadable, FormatMSI, nil, "string %d runs past the string data", len(strs))
		}
		strs = append(strs, decodeMSIString(data[off:off+n]))
		off += n
	}
	return strs, refSize, nil
}

// decodeMSIString takes UTF-8 (code page 65001, and every ASCII string)
// as is and reads anything else byte by byte as Latin-1, which is right for
// ASCII identifiers and GUIDs and readable for Windows-1252 names.
func decodeMSIString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// msiProperties reads the Property table, whose schema the MSI format fixes:
// Property (string, key), Value (string). Columns are stored one after the
// other, each as string-pool references.
func msiProperties(table []byte, strs []string, refSize int) (map[string]string, error) {
	rowSize := 2 * refSize
	if len(table)%rowSize != 0 {
		return nil, fail(ReasonPackageUnreadable, FormatMSI, nil, "Property table of %d bytes is not whole rows of %d", len(table), rowSize)
	}
	rows := len(table) / rowSize
	ref := func(col, row int) (string, bool) {
		off := col*rows*refSize + row*refSize
		v := int(binary.LittleEndian.Uint16(table[off:]))
		if refSize == 3 {
			v |= int(table[off+2]) << 16
		}
		if v >= len(strs) {
			return "", false
		}
		return strs[v], true
	}
	props := make(map[string]string, rows)
	for row := 0; row < rows; row++ {
		k, ok1 := ref(0, row)
		v, ok2 := ref(1, row)
		if !ok1 || !ok2 {
			return nil, fail(ReasonPackageUnreadable, FormatMSI, nil, "Property row %d refers past the string pool", row)
		}
		props[k] = v
	}
	return props, nil
}

// decodeMSIName undoes the MSI stream-name compression: two characters of
// [0-9A-Za-z._] packed in one UTF-16 unit from U+3800, one character from
// U+4800, and U+4840 marking a table ("!" here).
func decodeMSIName(name string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._"
	out := make([]rune, 0, 2*len(name))
	for _, r := range name {
		switch {
		case r >= 0x3800 && r < 0x4800:
			r -= 0x3800
			out = append(out, rune(alphabet[r&0x3f]), rune(alphabet[(r>>6)&0x3f]))
		case r >= 0x4800 && r < 0x4840:
			out = append(out, rune(alphabet[r-0x4800]))
		case r == 0x4840:
			out = append(out, '!')
		default:
			out = append(out, r)
		}
	}
	return string(out)
}
