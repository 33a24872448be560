package codesign

import (
	"context"
	"io"

	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// VerifyDMGApp verifies a macOS app shipped in a .dmg: the disk image's
// HFS+ volume is read with pkgread.OpenDMG (chunks decoded on demand, never
// the whole image), and the .app on it gets VerifyApp's checks — the main
// executable's signature with the bundle's exact Info.plist and
// CodeResources bound, Developer ID, and a notarisation ticket, stapled to
// the app (Contents/CodeResources) or to the disk image (its signature's
// ticket slot, where `stapler staple app.dmg` puts it; presence only, as
// for an app).
func (v *Verifier) VerifyDMGApp(ctx context.Context, r io.ReaderAt, size int64) (*Result, error) {
	di, err := pkgread.OpenDMG(ctx, r, size, pkgread.Limits{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(ReasonBinaryUnreadable, err, "reading the disk image")
	}
	id := di.Identity
	if id.Executable == "" {
		return nil, fail(ReasonBinaryUnreadable, nil, "%s has no main executable (CFBundleExecutable)", id.AppPath)
	}
	resources, err := readVolumeOptional(di, id.AppPath+"/Contents/_CodeSignature/CodeResources", maxCodeResources)
	if err != nil {
		return nil, err
	}
	ticket, err := readVolumeOptional(di, id.AppPath+"/Contents/CodeResources", maxTicket)
	if err != nil {
		return nil, err
	}
	exe, err := di.Volume.Open(id.Executable)
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "opening %s", id.Executable)
	}
	defer exe.Close()
	st, err := exe.Stat()
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "opening %s", id.Executable)
	}
	max := v.MaxBinaryBytes
	if max <= 0 {
		max = 1 << 30
	}
	ra, ok := exe.(io.ReaderAt)
	switch {
	case !ok:
		return nil, fail(ReasonBinaryUnreadable, nil, "%s cannot be read at random", id.Executable)
	case st.Size() > max:
		return nil, fail(ReasonBinaryUnreadable, nil, "%s is %d bytes, more than %d", id.Executable, st.Size(), max)
	}
	res, err := v.VerifyMachO(ctx, ra, st.Size(), id.InfoPlist, resources)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ticket) > 0:
		res.Notarized, res.NotarySource = true, "stapled-bundle"
	case !res.Notarized && id.DMG.NotaryTicket:
		res.Notarized, res.NotarySource = true, "stapled-dmg"
	}
	if !res.Notarized {
		return res, fail(ReasonNotNotarized, nil, "no notarisation ticket is stapled to %s or to the disk image", id.AppPath)
	}
	return res, nil
}

// readVolumeOptional reads a file of the image's volume that may be
// missing, at most max bytes.
func readVolumeOptional(di *pkgread.DiskImage, name string, max int64) ([]byte, error) {
	b, err := pkgread.ReadVolumeFile(di.Volume, name, max)
	switch pkgread.ReasonOf(err) {
	case "":
		if err != nil {
			return nil, fail(ReasonBinaryUnreadable, err, "reading %s", name)
		}
		return b, nil
	case pkgread.ReasonPackageTooLarge:
		return nil, fail(ReasonSignatureInvalid, err, "%s is larger than %d bytes", name, max)
	}
	return nil, fail(ReasonBinaryUnreadable, err, "reading %s", name)
}
