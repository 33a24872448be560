package codesign

import (
	"archive/zip"
	"context"
	"crypto/x509"
	"debug/macho"
	"encoding/asn1"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/sassoftware/relic/v7/lib/fruit/csblob"
	"github.com/sassoftware/relic/v7/lib/fruit/machos"
	"github.com/sassoftware/relic/v7/signers/sigerrors"

	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// oidDeveloperIDApplication marks Apple's Developer ID Application leaf
// certificates (Apple's Developer ID CPS; relic csblob/asn1.go).
var oidDeveloperIDApplication = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 1, 13}

const (
	maxCodeResources = 16 << 20 // _CodeSignature/CodeResources (a plist of file hashes)
	maxTicket        = 1 << 20  // a stapled ticket is a few KiB
)

// VerifyMachO verifies the code signature of a Mach-O executable, thin or
// universal (every architecture must verify; the Result describes the first).
// infoPlist and resources are the bundle's Info.plist and
// _CodeSignature/CodeResources bytes; when infoPlist is nil the Info.plist
// embedded in __TEXT,__info_plist (if any) is checked instead. A non-nil
// infoPlist must be bound by the signature.
func (v *Verifier) VerifyMachO(ctx context.Context, r io.ReaderAt, size int64, infoPlist, resources []byte) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	if err := pkgread.CheckMachO(r, size, pkgread.Limits{}); err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "the executable is over a bound")
	}
	defer func() {
		if p := recover(); p != nil { // relic and debug/macho parse hostile bytes
			res, err = nil, fail(ReasonSignatureInvalid, nil, "signature parser failure: %v", p)
		}
	}()
	var slices []*io.SectionReader
	if fat, ferr := macho.NewFatFile(r); ferr == nil {
		for _, a := range fat.Arches {
			slices = append(slices, io.NewSectionReader(r, int64(a.Offset), int64(a.Size)))
		}
	} else if _, terr := macho.NewFile(io.NewSectionReader(r, 0, size)); terr == nil {
		slices = append(slices, io.NewSectionReader(r, 0, size))
	} else {
		return nil, fail(ReasonBinaryUnreadable, terr, "not a readable Mach-O executable")
	}
	for i, s := range slices {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r1, err := v.verifyThin(s, infoPlist, resources)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			res = r1
		} else {
			if r1.SigningIdentity != res.SigningIdentity || !r1.Signer.Equal(res.Signer) {
				return nil, fail(ReasonSignatureInvalid, nil, "the architectures of the universal binary are signed differently")
			}
			res.CDHashes = append(res.CDHashes, r1.CDHashes...)
			res.Notarized = res.Notarized && r1.Notarized
		}
	}
	return res, nil
}

func (v *Verifier) verifyThin(r *io.SectionReader, infoPlist, resources []byte) (*Result, error) {
	vb, err := machos.Verify(r, infoPlist, resources, false)
	if err != nil {
		var ns sigerrors.NotSignedError
		switch {
		case errors.As(err, &ns):
			return nil, fail(ReasonUnsigned, nil, "the executable has no code signature")
		case strings.Contains(err.Error(), "possibly an adhoc signature"):
			return nil, fail(ReasonUnsigned, nil, "the executable is only ad-hoc signed (no certificate)")
		}
		return nil, fail(ReasonSignatureInvalid, err, "the code signature does not verify")
	}
	cd := vb.Blob.Directories[0]
	if infoPlist != nil && cd.ManifestHash == nil {
		return nil, fail(ReasonSignatureInvalid, nil, "the signature does not bind the bundle's Info.plist")
	}
	if resources == nil && cd.ResourcesHash != nil && infoPlist != nil {
		return nil, fail(ReasonSignatureInvalid, nil, "the signature seals resources but the bundle has no _CodeSignature/CodeResources")
	}
	res := &Result{Kind: "macho", DigestAlgorithm: vb.HashFunc.String(), SigningIdentity: cd.SigningIdentity}
	if !strongHash(vb.HashFunc) {
		return nil, fail(ReasonSignatureInvalid, nil, "the code directory hash is %v; SHA-256 or stronger is required", vb.HashFunc)
	}
	leaf := vb.Signature.Certificate
	if leaf == nil {
		return nil, fail(ReasonSignatureInvalid, nil, "the signature names no certificate")
	}
	csblob.MarkHandledExtensions(leaf) // Apple's critical certificate-policy markers
	chain, ferr := v.verifyChain(vb.Signature, res)
	if ferr != nil {
		return nil, ferr
	}
	if !hasExtension(leaf, oidDeveloperIDApplication) {
		return nil, fail(ReasonUntrustedSigner, nil, "%q is not a Developer ID Application certificate", leaf.Subject.String())
	}
	describeLeaf(res, leaf)
	res.Chain = chain
	res.TeamID = csblob.TeamID(leaf)
	h := cd.HashFunc.New()
	h.Write(cd.Raw)
	res.CDHashes = [][]byte{h.Sum(nil)[:20]}
	res.HardenedRuntime = cd.Header.Flags&csblob.FlagRuntime != 0
	if len(vb.Blob.NotaryTicket) > 0 {
		res.Notarized, res.NotarySource = true, "stapled-signature"
	}
	return res, nil
}

func hasExtension(c *x509.Certificate, oid asn1.ObjectIdentifier) bool {
	for _, e := range c.Extensions {
		if e.Id.Equal(oid) {
			return true
		}
	}
	return false
}

// VerifyApp verifies a macOS app shipped as a .zip of its .app: finds the
// bundle with pkgread, verifies the main executable's signature with the
// bundle's exact Info.plist and CodeResources bound, and looks for a stapled
// notarisation ticket. A correctly signed app without a ticket returns its
// Result together with an *Error of ReasonNotNotarized.
func (v *Verifier) VerifyApp(ctx context.Context, r io.ReaderAt, size int64) (*Result, error) {
	id, err := pkgread.Reader{}.Read(ctx, r, size)
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the app bundle")
	}
	if id.Format != pkgread.FormatZip || id.AppPath == "" {
		return nil, fail(ReasonBinaryUnreadable, nil, "not a zipped .app (a %s)", id.Format)
	}
	if id.Executable == "" {
		return nil, fail(ReasonBinaryUnreadable, nil, "%s has no main executable (CFBundleExecutable)", id.AppPath)
	}
	if err := pkgread.CheckZipDirectory(r, size, pkgread.Limits{}, pkgread.FormatZip); err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the zip")
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the zip")
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[pkgread.CleanZipName(f.Name)] = f
	}
	resources, err := readOptional(files[id.AppPath+"/Contents/_CodeSignature/CodeResources"], maxCodeResources)
	if err != nil {
		return nil, err
	}
	ticket, err := readOptional(files[id.AppPath+"/Contents/CodeResources"], maxTicket)
	if err != nil {
		return nil, err
	}
	exeFile := files[id.Executable]
	if exeFile == nil {
		return nil, fail(ReasonBinaryUnreadable, nil, "%s is not in the zip", id.Executable)
	}
	exe, cleanup, err := v.extract(exeFile)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	st, err := exe.Stat()
	if err != nil {
		return nil, err
	}
	res, err := v.VerifyMachO(ctx, exe, st.Size(), id.InfoPlist, resources)
	if err != nil {
		return nil, err
	}
	if len(ticket) > 0 {
		res.Notarized, res.NotarySource = true, "stapled-bundle"
	}
	if !res.Notarized {
		return res, fail(ReasonNotNotarized, nil, "no notarisation ticket is stapled to %s", id.AppPath)
	}
	return res, nil
}

func readOptional(f *zip.File, max int64) ([]byte, error) {
	if f == nil {
		return nil, nil
	}
	if f.UncompressedSize64 > uint64(max) {
		return nil, fail(ReasonSignatureInvalid, nil, "%s declares %d bytes, more than %d", f.Name, f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "opening %s", f.Name)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading %s", f.Name)
	}
	if int64(len(b)) > max {
		return nil, fail(ReasonSignatureInvalid, nil, "%s is larger than %d bytes", f.Name, max)
	}
	return b, nil
}

// extract decompresses a zip entry into a temporary file (the verifier needs
// random access), bounded by MaxBinaryBytes.
func (v *Verifier) extract(f *zip.File) (*os.File, func(), error) {
	max := v.MaxBinaryBytes
	if max <= 0 {
		max = 1 << 30
	}
	if f.UncompressedSize64 > uint64(max) {
		return nil, nil, fail(ReasonBinaryUnreadable, nil, "%s declares %d bytes, more than %d", f.Name, f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, fail(ReasonBinaryUnreadable, err, "opening %s", f.Name)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "gate-exe-*")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	n, err := io.Copy(tmp, io.LimitReader(rc, max+1))
	if err != nil {
		cleanup()
		return nil, nil, fail(ReasonBinaryUnreadable, err, "extracting %s", f.Name)
	}
	if n > max {
		cleanup()
		return nil, nil, fail(ReasonBinaryUnreadable, nil, "%s is larger than %d bytes", f.Name, max)
	}
	return tmp, cleanup, nil
}
