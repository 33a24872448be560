package pkgread

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
)

// DefaultMaxNestedBytes bounds an installer extracted from a zip (the
// download's own default limit).
const DefaultMaxNestedBytes = 1 << 30

// Nested is an installer found inside a zip, extracted to a temporary file.
type Nested struct {
	Path string   // its path inside the zip
	File *os.File // the extracted bytes; Close removes it
	Size int64
}

// Close closes and removes the extracted file.
func (n *Nested) Close() error {
	if n == nil || n.File == nil {
		return nil
	}
	n.File.Close()
	return os.Remove(n.File.Name())
}

// Unwrap looks one level into a zip that is not itself an app or an
// MSIX: a .zip around one installer (winget's "zip" packages: a
// setup.exe, an .msi, an .msix; Homebrew's zipped .pkg) holds exactly one
// .msi, or else exactly one .exe, or else exactly one .pkg, or else
// exactly one .msix/.appx, at its root or one folder down; a .zip around a
// macOS disk image (Homebrew's "container nested:" casks) holds exactly
// one .dmg and no installer. That file is extracted — at most maxBytes
// decompressed (0: DefaultMaxNestedBytes), streamed to a temporary file —
// and returned when its bytes are a PE, an MSI, a flat package, a UDIF
// image or an MSIX (a zip that reads as one: its manifest), for the
// readers and verifiers to read instead of the zip. Anything else returns
// nil — a zip that is itself a package (a zipped .app: a
// <name>.app/Contents/Info.plist; an MSIX or MSIX bundle: its manifest at
// the root), several installers, none, a zip in a zip — there is nothing
// to unwrap, and only one level is ever opened.
func Unwrap(ctx context.Context, ra io.ReaderAt, size int64, lim Limits, maxBytes int64) (*Nested, error) {
	if f, err := Detect(ra, size); err != nil || f != FormatZip {
		return nil, nil
	}
	if err := CheckZipDirectory(ra, size, lim, FormatZip); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, nil // readZip says why
	}
	var msis, exes, pkgs, msixes, dmgs []*zip.File
	for _, f := range zr.File {
		name := CleanZipName(f.Name)
		parts := strings.Split(name, "/")
		last := parts[len(parts)-1]
		switch {
		case strings.HasPrefix(name, "__MACOSX/"):
			continue
		case last == "Info.plist" && len(parts) >= 3 && parts[len(parts)-2] == "Contents" && strings.HasSuffix(parts[len(parts)-3], ".app"),
			name == "AppxManifest.xml", name == "AppxMetadata/AppxBundleManifest.xml":
			return nil, nil // an app or an MSIX: read as such
		case !f.Mode().IsRegular() || len(parts) > 2:
			continue
		}
		switch lower := strings.ToLower(last); {
		case strings.HasSuffix(lower, ".msi"):
			msis = append(msis, f)
		case strings.HasSuffix(lower, ".exe"):
			exes = append(exes, f)
		case strings.HasSuffix(lower, ".dmg"):
			dmgs = append(dmgs, f)
		case strings.HasSuffix(lower, ".pkg"):
			pkgs = append(pkgs, f)
		case strings.HasSuffix(lower, ".msix"), strings.HasSuffix(lower, ".appx"):
			msixes = append(msixes, f)
		}
	}
	var pick *zip.File
	switch {
	case len(msis) == 1:
		pick = msis[0]
	case len(msis) == 0 && len(exes) == 1:
		pick = exes[0]
	case len(msis) == 0 && len(exes) == 0 && len(pkgs) == 1:
		pick = pkgs[0] // Homebrew's "zip → pkg" casks
	case len(msis) == 0 && len(exes) == 0 && len(pkgs) == 0 && len(msixes) == 1:
		pick = msixes[0]
	case len(msis) == 0 && len(exes) == 0 && len(pkgs) == 0 && len(msixes) == 0 && len(dmgs) == 1:
		pick = dmgs[0]
	default:
		return nil, nil
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxNestedBytes
	}
	if pick.UncompressedSize64 > uint64(maxBytes) {
		return nil, fail(ReasonPackageTooLarge, FormatZip, nil, "%s declares %d bytes, more than %d", pick.Name, pick.UncompressedSize64, maxBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rc, err := pick.Open()
	if err != nil {
		return nil, fail(ReasonPackageUnreadable, FormatZip, err, "opening %s", pick.Name)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "xpromo-nested-*")
	if err != nil {
		return nil, err
	}
	n := &Nested{Path: CleanZipName(pick.Name), File: tmp}
	written, err := io.Copy(tmp, io.LimitReader(rc, maxBytes+1))
	switch {
	case err != nil && isPathError(err):
		n.Close()
		return nil, err // our disk
	case err != nil:
		n.Close()
		return nil, fail(ReasonPackageUnreadable, FormatZip, err, "extracting %s", pick.Name)
	case written > maxBytes:
		n.Close()
		return nil, fail(ReasonPackageTooLarge, FormatZip, nil, "%s is larger than %d bytes", pick.Name, maxBytes)
	}
	n.Size = written
	f, err := Detect(tmp, written)
	if f == FormatZip && len(msixes) == 1 {
		// an MSIX is a zip: it must read as one (a manifest), not as
		// another archive to open
		if id, rerr := (Reader{Limits: lim}).Read(ctx, tmp, written); rerr != nil || id.Format != FormatMSIX {
			n.Close()
			return nil, nil
		}
		f = FormatMSIX
	}
	if err != nil || (f != FormatPE && f != FormatMSI && f != FormatPKG && f != FormatMSIX && f != FormatDMG) {
		n.Close()
		return nil, nil // named like an installer, but not one
	}
	return n, nil
}

func isPathError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}
