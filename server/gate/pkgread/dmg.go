package pkgread

import (
	"encoding/binary"
	"io"

	"howett.net/plist"
)

// DMGInfo is what a UDIF disk image's trailer says about it.
type DMGInfo struct {
	Partitions []string // blkx names, e.g. "disk image (Apple_HFS : 4)"
	Sectors    uint64   // of the decoded image
	// Signed: the trailer points at an embedded code signature.
	Signed bool
	// NotaryTicket: the code signature carries a stapled notarisation
	// ticket (superblob slot 0x10002). Presence only; not validated.
	NotaryTicket bool
}

const (
	kolySize       = 512
	csMagicEmbed   = 0xfade0cc0 // code-signing superblob
	csSlotTicket   = 0x10002
	maxDMGSigBytes = 10 << 20
)

// readDMG reads the 512-byte koly trailer of a UDIF image, its XML resource
// fork (the partition list) and its code-signature superblob. Reading the
// app inside needs the blkx chunk decoders (zlib, bzip2, ADC, LZFSE, LZMA)
// and an HFS+ or APFS walk; this reader does not do that, so a .dmg always
// ends in ReasonPackageUnreadable with the trailer's facts in the Identity.
func readDMG(ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatDMG, Platform: MacOS, DMG: &DMGInfo{}}
	k := make([]byte, kolySize)
	if _, err := ra.ReadAt(k, size-kolySize); err != nil {
		return id, fail(ReasonPackageUnreadable, FormatDMG, err, "reading the koly trailer")
	}
	be := binary.BigEndian
	xmlOff, xmlLen := int64(be.Uint64(k[216:])), int64(be.Uint64(k[224:]))
	sigOff, sigLen := int64(be.Uint64(k[296:])), int64(be.Uint64(k[304:]))
	id.DMG.Sectors = be.Uint64(k[492:])
	if xmlLen > 0 {
		if xmlOff < 0 || xmlLen > lim.MaxTOCBytes || xmlOff > size-xmlLen {
			return id, fail(ReasonPackageUnreadable, FormatDMG, nil, "the resource fork (%d bytes at %d) does not fit", xmlLen, xmlOff)
		}
		raw := make([]byte, xmlLen)
		if _, err := ra.ReadAt(raw, xmlOff); err != nil {
			return id, fail(ReasonPackageUnreadable, FormatDMG, err, "reading the resource fork")
		}
		if err := checkPlist(raw, lim, FormatDMG, "the resource fork"); err != nil {
			return id, err
		}
		var rf struct {
			ResourceFork struct {
				Blkx []struct {
					Name   string `plist:"Name"`
					CFName string `plist:"CFName"`
				} `plist:"blkx"`
			} `plist:"resource-fork"`
		}
		if _, err := plist.Unmarshal(raw, &rf); err != nil {
			return id, fail(ReasonPackageUnreadable, FormatDMG, err, "decoding the resource fork")
		}
		for _, b := range rf.ResourceFork.Blkx {
			id.DMG.Partitions = append(id.DMG.Partitions, firstNonEmpty(b.Name, b.CFName))
		}
	}
	if sigLen > 0 {
		if sigOff < 0 || sigLen > maxDMGSigBytes || sigOff > size-sigLen {
			return id, fail(ReasonPackageUnreadable, FormatDMG, nil, "the code signature (%d bytes at %d) does not fit", sigLen, sigOff)
		}
		sig := make([]byte, sigLen)
		if _, err := ra.ReadAt(sig, sigOff); err != nil {
			return id, fail(ReasonPackageUnreadable, FormatDMG, err, "reading the code signature")
		}
		id.DMG.Signed = true
		id.DMG.NotaryTicket = superblobHasSlot(sig, csSlotTicket)
	}
	return id, fail(ReasonPackageUnreadable, FormatDMG, nil,
		"reading the app inside a disk image (HFS+/APFS) is not supported; publish a .zip of the .app")
}

// superblobHasSlot reports whether a code-signing superblob indexes a
// non-empty blob of the given slot type.
func superblobHasSlot(b []byte, slot uint32) bool {
	be := binary.BigEndian
	if len(b) < 12 || be.Uint32(b) != csMagicEmbed {
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
