package pkgread

import (
	"bytes"
	"encoding/binary"
	"io"
)

// Format is a package format, identified by content.
type Format int

const (
	FormatUnknown Format = iota
	FormatZip            // a zip: .app in .zip, .msix/.appx (refined to FormatMSIX once read)
	FormatMSIX           // .msix, .appx, .msixbundle, .appxbundle
	FormatPE             // .exe, .dll
	FormatMSI            // .msi (OLE compound file)
	FormatPKG            // .pkg (flat xar)
	FormatDMG            // .dmg (UDIF)
	FormatMachO          // bare Mach-O executable, thin or universal
)

var formatNames = [...]string{"unknown", "zip", "msix", "pe", "msi", "pkg", "dmg", "macho"}

func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return "unknown"
	}
	return formatNames[f]
}

var (
	magicZip      = []byte("PK\x03\x04")
	magicZipEmpty = []byte("PK\x05\x06")
	magicCFB      = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
	magicXAR      = []byte("xar!")
	magicKoly     = []byte("koly")
)

// Detect identifies the format of the size bytes of r by magic numbers only:
// a file's name or Content-Type says what its author hoped, the bytes say
// what it is.
func Detect(r io.ReaderAt, size int64) (Format, error) {
	head := make([]byte, 64)
	n, err := r.ReadAt(head, 0)
	if n < len(head) && err != nil && err != io.EOF {
		return FormatUnknown, fail(ReasonPackageUnreadable, FormatUnknown, err, "reading the first bytes")
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, magicZip), bytes.HasPrefix(head, magicZipEmpty):
		return FormatZip, nil
	case bytes.HasPrefix(head, magicCFB):
		return FormatMSI, nil
	case bytes.HasPrefix(head, magicXAR):
		return FormatPKG, nil
	case bytes.HasPrefix(head, []byte("MZ")) && isPE(r, head):
		return FormatPE, nil
	}
	if size >= 512 {
		tail := make([]byte, 4)
		if _, err := r.ReadAt(tail, size-512); err == nil && bytes.Equal(tail, magicKoly) {
			return FormatDMG, nil
		}
	}
	if isMachO(head) {
		return FormatMachO, nil
	}
	return FormatUnknown, fail(ReasonPackageUnknownFormat, FormatUnknown, nil,
		"not a zip, msix, exe, msi, pkg, dmg or Mach-O (first bytes %q)", printable(head, 16))
}

// isPE checks the "PE\0\0" signature at the offset the DOS header names.
func isPE(r io.ReaderAt, head []byte) bool {
	if len(head) < 0x40 {
		return false
	}
	off := int64(binary.LittleEndian.Uint32(head[0x3c:]))
	sig := make([]byte, 4)
	if _, err := r.ReadAt(sig, off); err != nil {
		return false
	}
	return bytes.Equal(sig, []byte("PE\x00\x00"))
}

func isMachO(head []byte) bool {
	if len(head) < 8 {
		return false
	}
	switch binary.LittleEndian.Uint32(head) {
	case 0xfeedface, 0xfeedfacf: // thin, little-endian (every Mac since Intel)
		return true
	}
	// Universal binaries are big-endian 0xcafebabe, which Java class files
	// share; a fat header's architecture count is small, a class file's
	// version (in the same bytes) is not below 45.
	return binary.BigEndian.Uint32(head) == 0xcafebabe && binary.BigEndian.Uint32(head[4:]) < 20
}

func printable(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}
