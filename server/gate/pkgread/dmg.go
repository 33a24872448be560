package pkgread

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/gate/hfsplus"
	"github.com/xpromo/xpromo/server/gate/udif"
)

const (
	// ReasonUnsupportedCompression: a .dmg whose chunks the gate must read
	// are of an unknown type, or a file it reads is transparently
	// compressed with LZVN/LZFSE.
	ReasonUnsupportedCompression Reason = apperr.GatePackageUnsupportedCompression
	// ReasonAPFSUnsupported: the .dmg holds an APFS volume and no HFS+ one.
	ReasonAPFSUnsupported Reason = apperr.GatePackageAPFSUnsupported
)

// DMGInfo is what a UDIF disk image says about itself.
type DMGInfo struct {
	Partitions []string // blkx names, e.g. "disk image (Apple_HFS : 4)"
	Sectors    uint64   // of the decoded disk
	// Filesystem of the partition read: "hfs+" or "hfsx" ("apfs" when only
	// an APFS one was found, which is not read).
	Filesystem string
	Chunks     []string // chunk types of that partition: "zlib", "bzip2", ...
	// Signed: the trailer points at an embedded code signature.
	Signed bool
	// NotaryTicket: the code signature carries a stapled notarisation
	// ticket (superblob slot 0x10002). Presence only; not validated.
	NotaryTicket bool
}

const (
	kolySize     = 512
	csSlotTicket = 0x10002
)

// DiskImage is an opened .dmg: its identity and the HFS+ volume the app
// lives on, for the signature check to read the bundle's files from.
type DiskImage struct {
	Identity *Identity
	Volume   fs.FS // nil when no HFS+ volume was read
	Image    *udif.Image
}

// OpenDMG reads a UDIF image (OpenDMG's Identity is what Read returns for
// it): the trailer and chunk tables (server/gate/udif), the HFS+ partition
// (server/gate/hfsplus), and the shallowest X.app at the volume's root or
// one folder down. Chunks are decoded only as the reads reach them.
func OpenDMG(ctx context.Context, ra io.ReaderAt, size int64, lim Limits) (di *DiskImage, err error) {
	lim = lim.withDefaults()
	id := &Identity{Format: FormatDMG, Platform: MacOS, DMG: &DMGInfo{}}
	di = &DiskImage{Identity: id}
	defer func() {
		// Our own readers see hostile bytes too; callers other than Read
		// (the signature check) get the same guard.
		if p := recover(); p != nil {
			di.Volume = nil
			err = fail(ReasonPackageUnreadable, FormatDMG, nil, "parser failure: %v", p)
		}
	}()
	img, err := udif.Open(ra, size, udif.Limits{
		MaxXMLBytes: lim.MaxTOCBytes,
		CheckPlist:  func(raw []byte) error { return checkPlist(raw, lim, FormatDMG, "the resource fork") },
	})
	if err != nil {
		return di, dmgError(err, "")
	}
	di.Image = img
	id.DMG.Sectors = img.Sectors
	id.DMG.Signed = len(img.Signature) > 0
	id.DMG.NotaryTicket = img.SignatureHasSlot(csSlotTicket)
	var hfs, apfs []*udif.Partition
	var probeErr error
	for _, p := range img.Partitions {
		id.DMG.Partitions = append(id.DMG.Partitions, p.Name)
		fsys, err := probe(p)
		if err != nil && probeErr == nil {
			probeErr = err
		}
		switch fsys {
		case "hfs":
			hfs = append(hfs, p)
		case "apfs":
			apfs = append(apfs, p)
		}
	}
	if len(hfs) == 0 {
		if len(apfs) > 0 {
			id.DMG.Filesystem = "apfs"
			return di, fail(ReasonAPFSUnsupported, FormatDMG, nil, "the disk image holds an APFS volume, which the gate does not read; build it with an HFS+ filesystem (hdiutil create -fs HFS+)")
		}
		if probeErr != nil {
			return di, dmgError(probeErr, "")
		}
		return di, fail(ReasonPackageUnreadable, FormatDMG, nil, "no HFS+ volume in the disk image's %d partitions", len(img.Partitions))
	}
	p := hfs[0]
	id.DMG.Chunks = p.ChunkTypes()
	vol, err := hfsplus.Open(p, p.Size(), hfsplus.Limits{MaxDirEntries: lim.MaxEntries})
	if err != nil {
		return di, dmgError(err, "")
	}
	id.DMG.Filesystem = "hfs+"
	if vol.HFSX {
		id.DMG.Filesystem = "hfsx"
	}
	di.Volume = vol
	if err := ctx.Err(); err != nil {
		return di, err
	}
	return di, readVolumeApp(vol, id, lim)
}

// probe names a partition's filesystem by its magic: an HFS+ or HFSX
// volume header (or an HFS wrapper) at byte 1024, an APFS container
// superblock ("NXSB" at byte 32). A partition that cannot be decoded
// (unsupported chunks, a bomb) returns that error.
func probe(p *udif.Partition) (string, error) {
	if strings.Contains(p.Name, "Apple_APFS") {
		return "apfs", nil
	}
	head := make([]byte, 1026)
	if n, err := p.ReadAt(head, 0); n < len(head) {
		if err == io.EOF {
			return "", nil // too small for a filesystem: a partition map, a driver
		}
		return "", err
	}
	switch string(head[1024:]) {
	case "H+", "HX", "BD":
		return "hfs", nil
	}
	if string(head[32:36]) == "NXSB" {
		return "apfs", nil
	}
	return "", nil
}

// dmgError carries a udif or hfsplus reason into this package's Error.
func dmgError(err error, what string) error {
	var ue *udif.Error
	var he *hfsplus.Error
	switch {
	case errors.As(err, &ue):
		return &Error{Reason: Reason(ue.Reason), Format: FormatDMG, Detail: ue.Detail + what, Err: ue.Err}
	case errors.As(err, &he):
		return &Error{Reason: Reason(he.Reason), Format: FormatDMG, Detail: he.Detail + what}
	case ReasonOf(err) != "":
		return err
	}
	return fail(ReasonPackageUnreadable, FormatDMG, err, "reading the disk image%s", what)
}

// readVolumeApp finds X.app/Contents/Info.plist at the volume's root, else
// one folder down (a folder that is not itself a bundle), the way a
// .dmg's window shows it; symbolic links (the usual "Applications" link)
// are not followed.
func readVolumeApp(vol fs.FS, id *Identity, lim Limits) error {
	var apps []string
	hasInfo := func(app string) bool {
		fi, err := fs.Stat(vol, app+"/Contents/Info.plist")
		return err == nil && fi.Mode().IsRegular()
	}
	root, err := fs.ReadDir(vol, ".")
	if err != nil {
		return dmgError(err, " (listing the volume)")
	}
	for _, d := range root {
		if d.IsDir() && strings.HasSuffix(d.Name(), ".app") && hasInfo(d.Name()) {
			apps = append(apps, d.Name())
		}
	}
	if len(apps) == 0 {
		for _, d := range root {
			if !d.IsDir() || insideBundle([]string{d.Name()}) || strings.HasPrefix(d.Name(), ".") {
				continue
			}
			sub, err := fs.ReadDir(vol, d.Name())
			if err != nil {
				return dmgError(err, " (listing "+d.Name()+")")
			}
			for _, s := range sub {
				if p := d.Name() + "/" + s.Name(); s.IsDir() && strings.HasSuffix(s.Name(), ".app") && hasInfo(p) {
					apps = append(apps, p)
				}
			}
		}
	}
	if len(apps) == 0 {
		return fail(ReasonBundleIDMissing, FormatDMG, nil, "no X.app/Contents/Info.plist at the disk image's root or one folder down")
	}
	for i, app := range apps {
		raw, err := readVolumeFile(vol, app+"/Contents/Info.plist", lim.MaxFileBytes)
		if err != nil {
			return err
		}
		info, err := parseInfoPlist(raw, FormatDMG, lim)
		if err != nil {
			return err
		}
		id.BundleIDs = addID(id.BundleIDs, info.BundleID)
		if i > 0 {
			continue // the first app is the one described; the others only add identifiers
		}
		id.AppPath, id.InfoPlist = app, raw
		id.Name = firstNonEmpty(info.DisplayName, info.Name)
		id.Version = firstNonEmpty(info.ShortVersion, info.Version)
		id.FeedURL = info.FeedURL
		if exe := info.Executable; exe != "" && !strings.ContainsAny(exe, "/\\") && exe != ".." && exe != "." {
			p := path.Join(app, "Contents/MacOS", exe)
			if fi, err := fs.Stat(vol, p); err == nil && fi.Mode().IsRegular() {
				id.Executable = p
			}
		}
	}
	return nil
}

// readVolumeFile reads one file of a disk image's volume, at most max bytes.
func readVolumeFile(vol fs.FS, name string, max int64) ([]byte, error) {
	f, err := vol.Open(name)
	if err != nil {
		return nil, dmgError(err, " (opening "+name+")")
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, fail(ReasonPackageTooLarge, FormatDMG, nil, "%s is %d bytes, more than %d", name, fi.Size(), max)
	}
	b, err := readAllLimited(f, max, FormatDMG, name)
	if err != nil && ReasonOf(err) == ReasonPackageUnreadable {
		var pe *Error
		if errors.As(err, &pe) && pe.Err != nil {
			return nil, dmgError(pe.Err, " (reading "+name+")")
		}
	}
	return b, err
}

// ReadVolumeFile reads a file of a disk image's volume (DiskImage.Volume),
// at most max bytes; a missing file is (nil, nil).
func ReadVolumeFile(vol fs.FS, name string, max int64) ([]byte, error) {
	if _, err := fs.Stat(vol, name); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return readVolumeFile(vol, name, max)
}

func readDMG(ctx context.Context, ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	di, err := OpenDMG(ctx, ra, size, lim)
	return di.Identity, err
}
