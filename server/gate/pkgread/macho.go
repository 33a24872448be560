package pkgread

import (
	"debug/macho"
	"io"
)

// readMachO reads the Info.plist a command-line tool embeds in
// __TEXT,__info_plist (the first architecture that has one, for a universal
// binary). An app bundle's executable has none: its Info.plist is a file in
// the bundle, which is why apps ship as .zip/.dmg/.pkg.
func readMachO(ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatMachO, Platform: MacOS}
	if err := CheckMachO(ra, size, lim); err != nil {
		return id, err
	}
	var files []*macho.File
	if fat, err := macho.NewFatFile(ra); err == nil {
		for _, a := range fat.Arches {
			files = append(files, a.File)
		}
	} else if f, err := macho.NewFile(ra); err == nil {
		files = append(files, f)
	} else {
		return id, fail(ReasonPackageUnreadable, FormatMachO, err, "parsing the Mach-O headers")
	}
	for _, f := range files {
		s := f.Section("__info_plist")
		if s == nil || s.Seg != "__TEXT" {
			continue
		}
		if s.Size > uint64(lim.MaxFileBytes) {
			return id, fail(ReasonPackageTooLarge, FormatMachO, nil, "__info_plist of %d bytes", s.Size)
		}
		raw, err := readAllLimited(s.Open(), lim.MaxFileBytes, FormatMachO, "__info_plist")
		if err != nil {
			return id, err
		}
		info, err := parseInfoPlist(raw, FormatMachO, lim)
		if err != nil {
			return id, err
		}
		id.InfoPlist = raw
		id.BundleIDs = addID(nil, info.BundleID)
		id.Name = firstNonEmpty(info.DisplayName, info.Name)
		id.Version = firstNonEmpty(info.ShortVersion, info.Version)
		return id, nil
	}
	return id, fail(ReasonBundleIDMissing, FormatMachO, nil, "a bare executable without an embedded Info.plist; publish the .app in a .zip")
}
