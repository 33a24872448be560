package codesign

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/sassoftware/relic/v7/lib/fruit/csblob"
	"github.com/sassoftware/relic/v7/lib/fruit/dmg"
	"github.com/sassoftware/relic/v7/signers/sigerrors"

	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// VerifyDMGApp verifies a macOS app shipped in a .dmg: the disk image's
// HFS+ volume is read with pkgread.OpenDMG (chunks decoded on demand, never
// the whole image), and the .app on it gets VerifyApp's checks — the main
// executable's signature with the bundle's exact Info.plist and
// CodeResources bound, Developer ID, and a notarisation ticket, stapled to
// the app (Contents/CodeResources) or to the disk image (its signature's
// ticket slot, where `stapler staple app.dmg` puts it; presence only, as
// for an app). The image's own signature, when it has one, must verify
// too (VerifyDMGSignature; it is Result.Image); an image ticket counts only
// on an image whose signature verified and names the app's team.
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
	if id.DMG.Signed {
		img, err := v.VerifyDMGSignature(ctx, r, size)
		if err != nil {
			return nil, err
		}
		if img.TeamID != res.TeamID {
			return nil, fail(ReasonSignatureInvalid, nil, "the disk image is signed by team %q, the app by team %q", img.TeamID, res.TeamID)
		}
		res.Image = img
	}
	switch {
	case len(ticket) > 0:
		res.Notarized, res.NotarySource = true, "stapled-bundle"
	case !res.Notarized && res.Image != nil && res.Image.Notarized:
		res.Notarized, res.NotarySource = true, "stapled-dmg"
	}
	if !res.Notarized {
		return res, fail(ReasonNotNotarized, nil, "no notarisation ticket is stapled to %s or to the disk image", id.AppPath)
	}
	return res, nil
}

// VerifyDMGSignature verifies a disk image's own code signature (relic's
// lib/fruit/dmg): the CMS over its CodeDirectory, which binds the koly
// trailer and the hash of every page before the signature, a SHA-256+
// directory, the chain to the configured roots at the timestamp, and a
// Developer ID Application leaf. A stapled ticket in the signature's ticket
// slot sets Notarized ("stapled-signature"). The image's bounds are checked
// by server/gate/udif first (pkgread.OpenDMG), and relic reads a file:
// anything else is copied to a temporary one.
func (v *Verifier) VerifyDMGSignature(ctx context.Context, r io.ReaderAt, size int64) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	if di, err := pkgread.OpenDMG(ctx, r, size, pkgread.Limits{}); di.Image == nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the disk image")
	} else if !di.Identity.DMG.Signed {
		return nil, fail(ReasonUnsigned, nil, "the disk image has no code signature")
	}
	f, ok := r.(*os.File)
	if !ok {
		tmp, err := os.CreateTemp("", "gate-dmg-*")
		if err != nil {
			return nil, err
		}
		defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
		if _, err := io.Copy(tmp, io.NewSectionReader(r, 0, size)); err != nil {
			return nil, err
		}
		f = tmp
	}
	defer func() {
		if p := recover(); p != nil { // relic parses hostile bytes
			res, err = nil, fail(ReasonSignatureInvalid, nil, "disk image signature parser failure: %v", p)
		}
	}()
	d, err := dmg.Open(f)
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the disk image's trailer")
	}
	vb, err := d.Verify(false)
	if err != nil {
		var ns sigerrors.NotSignedError
		if errors.As(err, &ns) {
			return nil, fail(ReasonUnsigned, nil, "the disk image has no code signature")
		}
		return nil, fail(ReasonSignatureInvalid, err, "the disk image's signature does not verify")
	}
	if len(vb.Blob.Directories) == 0 || vb.Signature == nil || vb.Signature.Certificate == nil {
		return nil, fail(ReasonUnsigned, nil, "the disk image's signature has no certificate (ad-hoc)")
	}
	cd := vb.Blob.Directories[0]
	res = &Result{Kind: "dmg", DigestAlgorithm: vb.HashFunc.String(), SigningIdentity: cd.SigningIdentity}
	if !strongHash(vb.HashFunc) {
		return nil, fail(ReasonSignatureInvalid, nil, "the disk image's code directory hash is %v; SHA-256 or stronger is required", vb.HashFunc)
	}
	leaf := vb.Signature.Certificate
	csblob.MarkHandledExtensions(leaf)
	chain, ferr := v.verifyChain(vb.Signature, res)
	if ferr != nil {
		return nil, ferr
	}
	if !hasExtension(leaf, oidDeveloperIDApplication) {
		return nil, fail(ReasonUntrustedSigner, nil, "the disk image's signer %q is not a Developer ID Application certificate", leaf.Subject.String())
	}
	describeLeaf(res, leaf)
	res.Chain = chain
	res.TeamID = csblob.TeamID(leaf)
	h := cd.HashFunc.New()
	h.Write(cd.Raw)
	res.CDHashes = [][]byte{h.Sum(nil)[:20]}
	if len(vb.Blob.NotaryTicket) > 0 {
		res.Notarized, res.NotarySource = true, "stapled-signature"
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
