package codesign

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto"
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/sassoftware/relic/v7/lib/authenticode"
	"github.com/sassoftware/relic/v7/lib/pkcs7"
	"github.com/sassoftware/relic/v7/lib/pkcs9"
	"github.com/sassoftware/relic/v7/lib/x509tools"
	"github.com/sassoftware/relic/v7/lib/zipslicer"

	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// ReasonUnsupported: the package's container signature is of a kind the
// gate does not verify (an MSIX bundle). The gate's own reason code.
const ReasonUnsupported Reason = "gate_signature_unsupported_format"

// The parts of an MSIX/APPX package that carry its signature.
const (
	msixSignature      = "AppxSignature.p7x"
	msixBlockMap       = "AppxBlockMap.xml"
	msixContentTypes   = "[Content_Types].xml"
	msixCodeIntegrity  = "AppxMetadata/CodeIntegrity.cat"
	msixManifest       = "AppxManifest.xml"
	msixBundleManifest = "AppxMetadata/AppxBundleManifest.xml"
	msixBlockSize      = 64 << 10

	maxMSIXSignature = 1 << 20  // PKCX + PKCS#7 with its chain
	maxMSIXMetadata  = 16 << 20 // the block map (about 60 bytes per 64 KiB block), content types, catalog, manifest
	// maxMSIXDecompressed bounds the bytes the block map check
	// decompresses and hashes, all files together: a deflate bomb costs
	// at most this much CPU.
	maxMSIXDecompressed = 8 << 30
)

// VerifyMSIX verifies the signature of an MSIX or APPX package (relic's
// lib/signappx, ported so that every read is bounded and streamed): the
// zip's directory is bounded first (pkgread.CheckZipDirectory), every
// metadata entry's declared size is checked before it is read, then
// AppxSignature.p7x ("PKCX" + PKCS#7 SignedData, SpcIndirectDataContent)
// is verified and the digests it signs are recomputed: AXPC (the zip's
// bytes before the signature entry), AXCD (the central directory without
// it), AXCT ([Content_Types].xml), AXBM (AppxBlockMap.xml), AXCI (the
// code-integrity catalog, when there is one, signed by the same
// certificate); and every file's 64 KiB blocks are hashed against the
// block map. The chain rules are VerifyPE's (SHA-256 or stronger, the
// configured roots, the code-signing EKU, at the timestamp's time).
// Result.Publisher is the signer's subject as a manifest Publisher
// (Microsoft's DN form): the caller compares it with the manifest's
// Identity Publisher (gate.BindSigner). Bundles are ReasonUnsupported.
func (v *Verifier) VerifyMSIX(ctx context.Context, r io.ReaderAt, size int64) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	if err := pkgread.CheckZipDirectory(r, size, pkgread.Limits{}, pkgread.FormatMSIX); err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the package's zip directory")
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the package's zip directory")
	}
	defer func() {
		if p := recover(); p != nil { // relic parses hostile ASN.1
			res, err = nil, fail(ReasonSignatureInvalid, nil, "signature parser failure: %v", p)
		}
	}()
	files := map[string]*zip.File{}
	sigIndex := -1
	var compressed, decompressed uint64
	for i, f := range zr.File {
		if _, dup := files[f.Name]; dup {
			return nil, fail(ReasonSignatureInvalid, nil, "the package holds %q twice", f.Name)
		}
		files[f.Name] = f
		if f.Name == msixSignature {
			sigIndex = i
		}
		compressed += f.CompressedSize64
		decompressed += f.UncompressedSize64
	}
	if compressed > uint64(size) {
		return nil, fail(ReasonBinaryUnreadable, nil, "the zip's entries claim more bytes than the file holds (overlapping entries)")
	}
	if decompressed > maxMSIXDecompressed {
		return nil, fail(ReasonBinaryUnreadable, nil, "the package's files decompress to more than %d bytes", int64(maxMSIXDecompressed))
	}
	if files[msixBundleManifest] != nil {
		return nil, fail(ReasonUnsupported, nil, "an MSIX bundle: the signatures of the packages it holds are not verified")
	}
	if sigIndex < 0 {
		return nil, fail(ReasonUnsigned, nil, "the package has no %s", msixSignature)
	}
	if sigIndex != len(zr.File)-1 {
		return nil, fail(ReasonSignatureInvalid, nil, "%s is not the package's last entry", msixSignature)
	}
	p7x, err := readMSIXEntry(files[msixSignature], maxMSIXSignature)
	if err != nil {
		return nil, err
	}
	sig, digests, hash, err := parseMSIXSignature(p7x)
	if err != nil {
		return nil, err
	}
	for _, part := range []struct{ tag, name string }{{"AXBM", msixBlockMap}, {"AXCT", msixContentTypes}, {"AXCI", msixCodeIntegrity}} {
		if err := checkMSIXPart(files[part.name], digests[part.tag], hash, part.name); err != nil {
			return nil, err
		}
	}
	if err := checkMSIXBlockMap(ctx, zr, files[msixBlockMap]); err != nil {
		return nil, err
	}
	if f := files[msixCodeIntegrity]; f != nil {
		if err := checkMSIXCatalog(f, sig); err != nil {
			return nil, err
		}
	}
	if err := checkMSIXZip(r, size, sigIndex, hash, digests); err != nil {
		return nil, err
	}
	res = &Result{Kind: "appx", DigestAlgorithm: hash.String()}
	chain, ferr := v.verifyChain(&sig, res)
	if ferr != nil {
		return nil, ferr
	}
	describeLeaf(res, sig.Certificate)
	res.Chain = chain
	res.Publisher = MSIXPublisher(sig.Certificate.RawSubject)
	return res, nil
}

// MSIXPublisher is a certificate subject (DER) written as an AppxManifest
// Identity Publisher: Microsoft's DN form, which Windows compares with the
// signer's subject when it installs the package.
func MSIXPublisher(rawSubject []byte) string {
	return x509tools.FormatPkixName(rawSubject, x509tools.NameStyleMsOsco)
}

func readMSIXEntry(f *zip.File, max int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(max) {
		return nil, fail(ReasonSignatureInvalid, nil, "%s declares %d bytes, more than %d", f.Name, f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "opening %s", f.Name)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc) // archive/zip stops at the declared size
	if err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "reading %s", f.Name)
	}
	return b, nil
}

// parseMSIXSignature verifies the PKCS#7 in AppxSignature.p7x and returns
// it with the digests it signs, by tag, and their hash.
func parseMSIXSignature(p7x []byte) (pkcs9.TimestampedSignature, map[string][]byte, crypto.Hash, error) {
	var none pkcs9.TimestampedSignature
	if !bytes.HasPrefix(p7x, []byte("PKCX")) {
		return none, nil, 0, fail(ReasonSignatureInvalid, nil, "%s does not start with PKCX", msixSignature)
	}
	psd, err := pkcs7.Unmarshal(p7x[4:])
	if err != nil {
		return none, nil, 0, fail(ReasonSignatureInvalid, err, "the package signature is not PKCS#7")
	}
	if !psd.Content.ContentInfo.ContentType.Equal(authenticode.OidSpcIndirectDataContent) {
		return none, nil, 0, fail(ReasonSignatureInvalid, nil, "the package signature is not an Authenticode signature")
	}
	pksig, err := psd.Content.Verify(nil, false)
	if err != nil {
		return none, nil, 0, fail(ReasonSignatureInvalid, err, "the package signature does not verify")
	}
	ts, err := pkcs9.VerifyOptionalTimestamp(pksig)
	if err != nil {
		return none, nil, 0, fail(ReasonSignatureInvalid, err, "the package signature's timestamp does not verify")
	}
	indirect := new(authenticode.SpcIndirectDataContentMsi)
	if err := psd.Content.ContentInfo.Unmarshal(indirect); err != nil {
		return none, nil, 0, fail(ReasonSignatureInvalid, err, "the package signature's content")
	}
	hash, err := x509tools.PkixDigestToHashE(indirect.MessageDigest.DigestAlgorithm)
	if err != nil {
		return none, nil, 0, fail(ReasonSignatureInvalid, err, "the package digest algorithm")
	}
	if !strongHash(hash) {
		return none, nil, 0, fail(ReasonSignatureInvalid, nil, "the package digest is %v; SHA-256 or stronger is required", hash)
	}
	d := indirect.MessageDigest.Digest
	if !bytes.HasPrefix(d, []byte("APPX")) {
		return none, nil, 0, fail(ReasonSignatureInvalid, nil, "the signed digest is not an APPX digest")
	}
	d = d[4:]
	digests := map[string][]byte{}
	for len(d) > 0 {
		if len(d) < 4+hash.Size() {
			return none, nil, 0, fail(ReasonSignatureInvalid, nil, "the signed APPX digest is truncated")
		}
		digests[string(d[:4])] = d[4 : 4+hash.Size()]
		d = d[4+hash.Size():]
	}
	for _, tag := range []string{"AXPC", "AXCD", "AXCT", "AXBM"} {
		if digests[tag] == nil {
			return none, nil, 0, fail(ReasonSignatureInvalid, nil, "the signature does not cover %s", tag)
		}
	}
	return ts, digests, hash, nil
}

// checkMSIXPart compares a metadata entry's hash with the signed one: an
// entry the signature names must be there, and one it does not must not.
func checkMSIXPart(f *zip.File, want []byte, hash crypto.Hash, name string) error {
	switch {
	case f == nil && want == nil:
		return nil
	case f == nil:
		return fail(ReasonSignatureInvalid, nil, "the signed %s is missing", name)
	case want == nil:
		return fail(ReasonSignatureInvalid, nil, "%s is not covered by the signature", name)
	}
	b, err := readMSIXEntry(f, maxMSIXMetadata)
	if err != nil {
		return err
	}
	d := hash.New()
	d.Write(b)
	if !hmac.Equal(d.Sum(nil), want) {
		return fail(ReasonSignatureInvalid, nil, "%s changed after signing", name)
	}
	return nil
}

type msixBlockMapXML struct {
	HashMethod string `xml:"HashMethod,attr"`
	Files      []struct {
		Name   string `xml:"Name,attr"`
		Size   uint64 `xml:"Size,attr"`
		Blocks []struct {
			Hash string `xml:"Hash,attr"`
		} `xml:"Block"`
	} `xml:"File"`
}

var msixBlockHashes = map[string]crypto.Hash{
	"http://www.w3.org/2001/04/xmlenc#sha256":       crypto.SHA256,
	"http://www.w3.org/2001/04/xmldsig-more#sha384": crypto.SHA384,
	"http://www.w3.org/2001/04/xmlenc#sha512":       crypto.SHA512,
}

// checkMSIXBlockMap hashes every file but the signature's own parts, in
// zip order, 64 KiB at a time, against the block map (which lists them in
// the same order, with backslashes).
func checkMSIXBlockMap(ctx context.Context, zr *zip.Reader, bmFile *zip.File) error {
	if bmFile == nil {
		return fail(ReasonSignatureInvalid, nil, "the package has no %s", msixBlockMap)
	}
	raw, err := readMSIXEntry(bmFile, maxMSIXMetadata)
	if err != nil {
		return err
	}
	if err := pkgread.CheckMSIXXML(raw, msixBlockMap); err != nil {
		return fail(ReasonSignatureInvalid, err, "the block map is over a bound")
	}
	var bm msixBlockMapXML
	if err := xml.Unmarshal(raw, &bm); err != nil {
		return fail(ReasonSignatureInvalid, err, "decoding the block map")
	}
	hash, ok := msixBlockHashes[bm.HashMethod]
	if !ok {
		return fail(ReasonSignatureInvalid, nil, "the block map's hash method %q is not SHA-256 or stronger", bm.HashMethod)
	}
	next := 0
	block := make([]byte, msixBlockSize)
	for _, f := range zr.File {
		switch f.Name {
		case msixSignature, msixCodeIntegrity, msixContentTypes, msixBlockMap:
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if next >= len(bm.Files) {
			return fail(ReasonSignatureInvalid, nil, "%s is not in the block map", f.Name)
		}
		want := bm.Files[next]
		next++
		if want.Name != strings.ReplaceAll(f.Name, "/", "\\") || want.Size != f.UncompressedSize64 {
			return fail(ReasonSignatureInvalid, nil, "the block map lists %q (%d bytes) where the package has %q (%d bytes)", want.Name, want.Size, f.Name, f.UncompressedSize64)
		}
		if uint64(len(want.Blocks)) != (f.UncompressedSize64+msixBlockSize-1)/msixBlockSize {
			return fail(ReasonSignatureInvalid, nil, "the block map lists %d blocks for %s", len(want.Blocks), f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return fail(ReasonBinaryUnreadable, err, "opening %s", f.Name)
		}
		err = hashMSIXBlocks(rc, f, hash, want.Blocks, block)
		rc.Close()
		if err != nil {
			return err
		}
	}
	if next != len(bm.Files) {
		return fail(ReasonSignatureInvalid, nil, "the block map lists %d files the package does not hold", len(bm.Files)-next)
	}
	return nil
}

func hashMSIXBlocks(rc io.Reader, f *zip.File, hash crypto.Hash, blocks []struct {
	Hash string `xml:"Hash,attr"`
}, buf []byte) error {
	remaining := f.UncompressedSize64
	for i, b := range blocks {
		n := min(remaining, msixBlockSize)
		remaining -= n
		if _, err := io.ReadFull(rc, buf[:n]); err != nil {
			return fail(ReasonSignatureInvalid, err, "reading %s", f.Name)
		}
		want, err := base64.StdEncoding.DecodeString(b.Hash)
		if err != nil {
			return fail(ReasonSignatureInvalid, err, "block %d of %s in the block map", i, f.Name)
		}
		d := hash.New()
		d.Write(buf[:n])
		if !hmac.Equal(d.Sum(nil), want) {
			return fail(ReasonSignatureInvalid, nil, "%s changed after signing (block %d)", f.Name, i)
		}
	}
	return nil
}

// checkMSIXCatalog: the code-integrity catalog is a PKCS#7 signed by the
// package's own signer.
func checkMSIXCatalog(f *zip.File, sig pkcs9.TimestampedSignature) error {
	b, err := readMSIXEntry(f, maxMSIXMetadata)
	if err != nil {
		return err
	}
	psd, err := pkcs7.Unmarshal(b)
	if err != nil || !psd.Content.ContentInfo.ContentType.Equal(authenticode.OidCertTrustList) {
		return fail(ReasonSignatureInvalid, err, "the code-integrity catalog is not a signed catalog")
	}
	csig, err := psd.Content.Verify(nil, false)
	if err != nil {
		return fail(ReasonSignatureInvalid, err, "the code-integrity catalog's signature does not verify")
	}
	if csig.Certificate == nil || !csig.Certificate.Equal(sig.Certificate) {
		return fail(ReasonSignatureInvalid, nil, "the code-integrity catalog is signed by another certificate than the package")
	}
	return nil
}

// checkMSIXZip recomputes AXPC (every entry's local header, data and
// descriptor before the signature entry) and AXCD (the central directory
// and end records without the signature entry), with relic's zipslicer
// over a directory already bounded: at most 64 MiB of it is read, and
// the entries' bytes (summed above) fit the file.
func checkMSIXZip(r io.ReaderAt, size int64, sigIndex int, hash crypto.Hash, digests map[string][]byte) error {
	if err := checkZipslicerDirectory(r, size); err != nil {
		return err
	}
	dir, err := zipslicer.Read(r, size)
	if err != nil {
		return fail(ReasonSignatureInvalid, err, "reading the zip directory for its digest")
	}
	if len(dir.File) <= sigIndex || dir.File[sigIndex].Name != msixSignature {
		return fail(ReasonSignatureInvalid, nil, "the zip's directory is not the one its entries list")
	}
	axpc, axcd := hash.New(), hash.New()
	if err := dir.Truncate(sigIndex, axpc, axcd); err != nil {
		return fail(ReasonSignatureInvalid, err, "digesting the zip")
	}
	if !hmac.Equal(axpc.Sum(nil), digests["AXPC"]) {
		return fail(ReasonSignatureInvalid, nil, "the package's files changed after signing (AXPC)")
	}
	if !hmac.Equal(axcd.Sum(nil), digests["AXCD"]) {
		return fail(ReasonSignatureInvalid, nil, "the package's zip directory changed after signing (AXCD)")
	}
	return nil
}

// checkZipslicerDirectory bounds what zipslicer.Read reads into memory:
// everything from the central directory's offset (as it finds it: an end
// record at the very end, or the zip64 one it points to) to the end.
func checkZipslicerDirectory(r io.ReaderAt, size int64) error {
	const endLen, loc64Len, end64Len = 22, 20, 56
	if size < endLen+loc64Len {
		return fail(ReasonSignatureInvalid, nil, "the package is too short for a zip")
	}
	tail := make([]byte, endLen+loc64Len)
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil {
		return fail(ReasonBinaryUnreadable, err, "reading the zip's end record")
	}
	le := binary.LittleEndian
	end := tail[loc64Len:]
	if le.Uint32(end) != 0x06054b50 {
		return fail(ReasonSignatureInvalid, nil, "the zip has a comment or no end record where a signed package has it")
	}
	off := int64(le.Uint32(end[16:]))
	if le.Uint16(end[10:]) == 0xffff || le.Uint32(end[12:]) == 0xffffffff || off == 0xffffffff {
		if le.Uint32(tail) != 0x07064b50 {
			return fail(ReasonSignatureInvalid, nil, "the zip64 locator is missing")
		}
		loc := int64(le.Uint64(tail[8:]))
		if loc < 0 || loc > size-end64Len {
			return fail(ReasonSignatureInvalid, nil, "the zip64 end record lies outside the file")
		}
		rec := make([]byte, end64Len)
		if _, err := r.ReadAt(rec, loc); err != nil {
			return fail(ReasonBinaryUnreadable, err, "reading the zip64 end record")
		}
		off = int64(le.Uint64(rec[48:]))
	}
	if max := pkgread.DefaultLimits().MaxCentralDirBytes + endLen + loc64Len + end64Len; off < 0 || off > size || size-off > max {
		return fail(ReasonSignatureInvalid, nil, "the zip's central directory (%d bytes from the end) is larger than %d bytes", size-off, max)
	}
	return nil
}
