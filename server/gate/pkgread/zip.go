package pkgread

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode/utf16"

	"howett.net/plist"
)

// maxAppDepth is how many folders may hold the .app inside a zip
// ("Hello.app" is depth 0, "Hello 1.2/Hello.app" depth 1). Deeper bundles
// are frameworks, helpers and plug-ins, not the app that was downloaded.
const maxAppDepth = 3

func readZip(ctx context.Context, ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	if err := CheckZipDirectory(ra, size, lim, FormatZip); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // nothing is extracted, so "../x" names are harmless
		return nil, fail(ReasonPackageUnreadable, FormatZip, err, "reading the zip directory")
	}
	if len(zr.File) > lim.MaxEntries {
		return nil, fail(ReasonPackageTooLarge, FormatZip, nil, "%d entries, more than %d", len(zr.File), lim.MaxEntries)
	}
	byName := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		byName[CleanZipName(f.Name)] = f
	}
	for _, name := range []string{"AppxManifest.xml", "AppxMetadata/AppxBundleManifest.xml"} {
		if f := byName[name]; f != nil {
			return readAppxManifest(f, lim)
		}
	}
	return readZippedApp(ctx, zr, byName, lim)
}

// CleanZipName is the archive path this package uses for a zip entry's
// name (the paths in Identity): forward slashes, no leading slash.
func CleanZipName(name string) string {
	return strings.TrimPrefix(strings.ReplaceAll(name, "\\", "/"), "/")
}

// readZippedApp finds the shallowest X.app/Contents/Info.plist.
func readZippedApp(ctx context.Context, zr *zip.Reader, byName map[string]*zip.File, lim Limits) (*Identity, error) {
	var found []*zip.File
	var foundApp []string
	best := maxAppDepth + 1
	for _, f := range zr.File {
		name := CleanZipName(f.Name)
		if strings.HasPrefix(name, "__MACOSX/") || f.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		parts := strings.Split(name, "/")
		n := len(parts)
		if n < 3 || parts[n-1] != "Info.plist" || parts[n-2] != "Contents" || !strings.HasSuffix(parts[n-3], ".app") {
			continue
		}
		depth := n - 3
		if depth > maxAppDepth || depth > best || insideBundle(parts[:n-3]) {
			continue
		}
		if depth < best {
			best, found, foundApp = depth, nil, nil
		}
		found = append(found, f)
		foundApp = append(foundApp, strings.Join(parts[:n-2], "/"))
	}
	if len(found) == 0 {
		return &Identity{Format: FormatZip, Platform: MacOS}, fail(ReasonBundleIDMissing, FormatZip, nil,
			"no X.app/Contents/Info.plist within %d folders of the zip's root", maxAppDepth)
	}
	id := &Identity{Format: FormatZip, Platform: MacOS}
	for i, f := range found {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, err := readZipFile(f, lim.MaxFileBytes, FormatZip)
		if err != nil {
			return id, err
		}
		info, err := parseInfoPlist(raw, FormatZip, lim)
		if err != nil {
			return id, err
		}
		id.BundleIDs = addID(id.BundleIDs, info.BundleID)
		if i > 0 {
			continue // the first app is the one described; the others only add identifiers
		}
		id.AppPath = foundApp[i]
		id.InfoPlist = raw
		id.Name = firstNonEmpty(info.DisplayName, info.Name)
		id.Version = firstNonEmpty(info.ShortVersion, info.Version)
		id.FeedURL = info.FeedURL
		if exe := info.Executable; exe != "" && !strings.ContainsAny(exe, "/\\") && exe != ".." {
			p := id.AppPath + "/Contents/MacOS/" + exe
			if f := byName[p]; f != nil && f.Mode().IsRegular() {
				id.Executable = p
			}
		}
	}
	return id, nil
}

// insideBundle reports whether a folder path is itself inside a bundle
// (Foo.app/Contents/Helpers/Bar.app is Foo's helper, not a second app).
func insideBundle(dirs []string) bool {
	for _, d := range dirs {
		for _, ext := range []string{".app", ".framework", ".bundle", ".plugin", ".appex", ".xpc"} {
			if strings.HasSuffix(d, ext) {
				return true
			}
		}
	}
	return false
}

// readZipFile decompresses one entry, refusing before it starts when the
// header already declares more than max and stopping at max+1 bytes when the
// header lies.
func readZipFile(f *zip.File, max int64, format Format) ([]byte, error) {
	if f.UncompressedSize64 > uint64(max) {
		return nil, fail(ReasonPackageTooLarge, format, nil, "%s declares %d bytes, more than %d", f.Name, f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fail(ReasonPackageUnreadable, format, err, "opening %s", f.Name)
	}
	defer rc.Close()
	return readAllLimited(rc, max, format, f.Name)
}

// InfoPlist holds the Info.plist keys the gate uses.
type InfoPlist struct {
	BundleID     string `plist:"CFBundleIdentifier"`
	Executable   string `plist:"CFBundleExecutable"`
	Name         string `plist:"CFBundleName"`
	DisplayName  string `plist:"CFBundleDisplayName"`
	Version      string `plist:"CFBundleVersion"`
	ShortVersion string `plist:"CFBundleShortVersionString"`
	FeedURL      string `plist:"SUFeedURL"`
}

// ParseInfoPlist decodes an Info.plist (XML, binary or OpenStep) within
// the default Limits (size, depth, object count).
func ParseInfoPlist(raw []byte) (*InfoPlist, error) {
	lim := DefaultLimits()
	if int64(len(raw)) > lim.MaxFileBytes {
		return nil, fail(ReasonPackageTooLarge, FormatUnknown, nil, "Info.plist of %d bytes, more than %d", len(raw), lim.MaxFileBytes)
	}
	return parseInfoPlist(raw, FormatUnknown, lim)
}

func parseInfoPlist(raw []byte, format Format, lim Limits) (*InfoPlist, error) {
	if err := checkPlist(raw, lim, format, "Info.plist"); err != nil {
		return nil, err
	}
	var info InfoPlist
	if _, err := plist.Unmarshal(raw, &info); err != nil {
		return nil, fail(ReasonPackageUnreadable, format, err, "decoding Info.plist")
	}
	return &info, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// appxManifest covers AppxManifest.xml (<Package>) and
// AppxBundleManifest.xml (<Bundle>): both carry an <Identity>.
type appxManifest struct {
	Identity struct {
		Name      string `xml:"Name,attr"`
		Publisher string `xml:"Publisher,attr"`
		Version   string `xml:"Version,attr"`
	} `xml:"Identity"`
	Properties struct {
		DisplayName          string `xml:"DisplayName"`
		PublisherDisplayName string `xml:"PublisherDisplayName"`
	} `xml:"Properties"`
}

func readAppxManifest(f *zip.File, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatMSIX, Platform: Windows}
	raw, err := readZipFile(f, lim.MaxFileBytes, FormatMSIX)
	if err != nil {
		return id, err
	}
	if err := checkXML(raw, lim, FormatMSIX, path.Base(f.Name)); err != nil {
		return id, err
	}
	var m appxManifest
	if err := xml.Unmarshal(raw, &m); err != nil {
		return id, fail(ReasonPackageUnreadable, FormatMSIX, err, "decoding %s", path.Base(f.Name))
	}
	id.BundleIDs = addID(nil, m.Identity.Name)
	id.Version = m.Identity.Version
	id.Publisher = m.Identity.Publisher
	id.Name = strings.TrimSpace(m.Properties.DisplayName)
	if m.Identity.Name != "" && m.Identity.Publisher != "" {
		id.PackageFamilyName = PackageFamilyName(m.Identity.Name, m.Identity.Publisher)
	}
	return id, nil
}

// PackageFamilyName is Name + "_" + PublisherId, where PublisherId is the
// first 8 bytes of SHA-256 over the UTF-16LE publisher DN in Crockford
// base32 (lower case, 13 characters).
func PackageFamilyName(name, publisher string) string {
	u := utf16.Encode([]rune(publisher))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	sum := sha256.Sum256(b)
	v := binary.BigEndian.Uint64(sum[:8])
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	out := make([]byte, 13)
	// 64 bits padded with one zero bit to 65 = 13 groups of 5.
	for i := 0; i < 13; i++ {
		shift := 59 - 5*i // this group's lowest bit, counted in the unpadded 64-bit value
		var g uint64
		if shift >= 0 {
			g = (v >> uint(shift)) & 31
		} else {
			g = (v << uint(-shift)) & 31
		}
		out[i] = alphabet[g]
	}
	return name + "_" + string(out)
}
