package pkgread

import (
	"encoding/binary"
	"io"
)

// maxFatArches bounds a universal binary's architectures: real ones hold
// two to four, and each is parsed again in full by debug/macho and relic.
const maxFatArches = 16

// CheckMachO bounds a Mach-O before debug/macho or relic parse it: a
// universal binary has at most 16 architectures, and each (thin) image at
// most lim.MaxMachOCommands load commands of at most
// lim.MaxMachOCommandBytes together, inside the file. debug/macho reads
// every load command into memory and relic walks them again; counts like
// 0xffffffff commands are refused from the header.
func CheckMachO(ra io.ReaderAt, size int64, lim Limits) error {
	lim = lim.withDefaults()
	hdr := make([]byte, 8)
	if _, err := ra.ReadAt(hdr, 0); err != nil {
		return fail(ReasonPackageUnreadable, FormatMachO, err, "reading the Mach-O header")
	}
	be := binary.BigEndian
	switch be.Uint32(hdr) {
	case 0xcafebabe, 0xcafebabf: // universal; the 64-bit form has 32-byte arch records
		n := be.Uint32(hdr[4:])
		if n > maxFatArches {
			return fail(ReasonPackageTooLarge, FormatMachO, nil, "a universal binary of %d architectures, more than %d", n, maxFatArches)
		}
		wide := be.Uint32(hdr) == 0xcafebabf
		rec := 20
		if wide {
			rec = 32
		}
		buf := make([]byte, rec)
		for i := 0; i < int(n); i++ {
			if _, err := ra.ReadAt(buf, 8+int64(i*rec)); err != nil {
				return fail(ReasonPackageUnreadable, FormatMachO, err, "reading the architecture table")
			}
			off, sz := int64(be.Uint32(buf[8:])), int64(be.Uint32(buf[12:]))
			if wide {
				off, sz = int64(be.Uint64(buf[8:])), int64(be.Uint64(buf[16:]))
			}
			if off < 0 || sz < 0 || off > size || sz > size-off {
				return fail(ReasonPackageUnreadable, FormatMachO, nil, "architecture %d (%d bytes at %d) lies outside the file", i, sz, off)
			}
			if err := checkThinMachO(io.NewSectionReader(ra, off, sz), sz, lim); err != nil {
				return err
			}
		}
		return nil
	}
	return checkThinMachO(ra, size, lim)
}

func checkThinMachO(ra io.ReaderAt, size int64, lim Limits) error {
	hdr := make([]byte, 28)
	if _, err := ra.ReadAt(hdr, 0); err != nil {
		return fail(ReasonPackageUnreadable, FormatMachO, err, "reading the Mach-O header")
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(hdr) {
	case 0xfeedface, 0xfeedfacf:
		bo = binary.LittleEndian
	case 0xcefaedfe, 0xcffaedfe:
		bo = binary.BigEndian
	default:
		return nil // not a Mach-O: the parser says so
	}
	ncmds, cmdBytes := bo.Uint32(hdr[16:]), int64(bo.Uint32(hdr[20:]))
	if int64(ncmds) > int64(lim.MaxMachOCommands) {
		return fail(ReasonPackageTooLarge, FormatMachO, nil, "%d load commands, more than %d", ncmds, lim.MaxMachOCommands)
	}
	if cmdBytes > lim.MaxMachOCommandBytes || cmdBytes > size {
		return fail(ReasonPackageTooLarge, FormatMachO, nil, "%d bytes of load commands, more than %d or the file", cmdBytes, lim.MaxMachOCommandBytes)
	}
	return nil
}
