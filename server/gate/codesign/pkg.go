package codesign

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"io"
	"slices"

	"github.com/sassoftware/relic/v7/lib/fruit/csblob"
	"github.com/sassoftware/relic/v7/lib/pkcs7"
	"github.com/sassoftware/relic/v7/lib/pkcs9"
	"github.com/sassoftware/relic/v7/lib/x509tools"

	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// Apple's Developer ID Installer certificates (the ones productsign signs
// a .pkg with) carry the marker extension 1.2.840.113635.100.6.1.14
// (critical) and the extended key usage 1.2.840.113635.100.4.13 — not
// id-kp-codeSigning, which the Developer ID Application certificates have.
var (
	oidDeveloperIDInstaller = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 1, 14}
	oidEKUPackageSigning    = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 4, 13}
)

// VerifyPKG verifies the signature of a flat package (.pkg, a xar
// archive): the TOC checksum against the compressed TOC (SHA-1, as
// productsign writes it, or SHA-256/512; MD5 or none is refused), the
// archived checksum of every file in the heap (streamed), the CMS
// signature over the TOC checksum and the RSA one when present (both must
// verify, by the same certificate), and the signer's chain to the
// configured roots at the timestamp's time when there is one. The signer
// must be a Developer ID Installer certificate (marker and EKU above).
// A package that verifies but has no stapled ticket returns its Result
// with an *Error of ReasonNotNotarized, as VerifyApp does.
func (v *Verifier) VerifyPKG(ctx context.Context, r io.ReaderAt, size int64) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	x, err := pkgread.ReadXARSignature(r, size, pkgread.Limits{})
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "reading the package's table of contents")
	}
	defer func() {
		if p := recover(); p != nil { // relic parses hostile ASN.1
			res, err = nil, fail(ReasonSignatureInvalid, nil, "signature parser failure: %v", p)
		}
	}()
	if x.RSASignature == nil && x.CMSSignature == nil {
		return nil, fail(ReasonUnsigned, nil, "the package has no signature (productsign --sign was not run)")
	}
	switch x.ChecksumHash {
	case crypto.SHA1, crypto.SHA256, crypto.SHA512:
	default:
		return nil, fail(ReasonSignatureInvalid, nil, "the package is signed over a %q TOC checksum; SHA-1 or SHA-2 is required", x.ChecksumStyle)
	}
	if !hmac.Equal(x.TOCDigest, x.StoredChecksum) {
		return nil, fail(ReasonSignatureInvalid, nil, "the table of contents changed after signing: its %s checksum does not match", x.ChecksumStyle)
	}
	if err := checkXARFiles(ctx, r, x.Files); err != nil {
		return nil, err
	}
	var ts pkcs9.TimestampedSignature
	if x.CMSSignature != nil {
		if ts, err = verifyXARCMS(x.CMSSignature, x.TOCDigest); err != nil {
			return nil, err
		}
	}
	if x.RSASignature != nil {
		leaf, chain, err := verifyXARRSA(x)
		if err != nil {
			return nil, err
		}
		switch {
		case ts.Certificate == nil:
			ts.Certificate, ts.Intermediates = leaf, chain
		case !ts.Certificate.Equal(leaf):
			return nil, fail(ReasonSignatureInvalid, nil, "the RSA and CMS signatures are by different certificates")
		}
	}
	res = &Result{Kind: "pkg", DigestAlgorithm: x.ChecksumHash.String()}
	chain, ferr := v.verifyInstallerChain(&ts, res)
	if ferr != nil {
		return nil, ferr
	}
	describeLeaf(res, ts.Certificate)
	res.Chain = chain
	res.TeamID = csblob.TeamID(ts.Certificate)
	res.CDHashes = [][]byte{x.TOCDigest[:min(20, len(x.TOCDigest))]} // the notarisation record name's digest
	if x.Ticket != nil {
		res.Notarized, res.NotarySource = true, "stapled-trailer"
		return res, nil
	}
	return res, fail(ReasonNotNotarized, nil, "no notarisation ticket is stapled to the package")
}

// checkXARFiles recomputes every heap file's archived checksum. A file
// without one is not covered by the signature, so it is refused.
func checkXARFiles(ctx context.Context, r io.ReaderAt, files []pkgread.XARHeapFile) error {
	hashes := map[string]crypto.Hash{"sha1": crypto.SHA1, "sha256": crypto.SHA256, "sha512": crypto.SHA512}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, ok := hashes[f.ChecksumStyle]
		switch {
		case f.ChecksumStyle == "" || f.Checksum == nil:
			return fail(ReasonSignatureInvalid, nil, "%s has no archived checksum, so the signature does not cover it", f.Name)
		case !ok:
			return fail(ReasonSignatureInvalid, nil, "%s has a %q archived checksum; SHA-1 or SHA-2 is required", f.Name, f.ChecksumStyle)
		}
		d := h.New()
		if _, err := io.Copy(d, io.NewSectionReader(r, f.Offset, f.Length)); err != nil {
			return fail(ReasonBinaryUnreadable, err, "reading %s", f.Name)
		}
		if !hmac.Equal(d.Sum(nil), f.Checksum) {
			return fail(ReasonSignatureInvalid, nil, "%s changed after signing: its archived checksum does not match", f.Name)
		}
	}
	return nil
}

func verifyXARCMS(raw, tocDigest []byte) (pkcs9.TimestampedSignature, error) {
	var none pkcs9.TimestampedSignature
	der, err := berToDER(raw)
	if err != nil {
		return none, fail(ReasonSignatureInvalid, err, "the CMS signature is not ASN.1")
	}
	psd, err := pkcs7.Unmarshal(der)
	if err != nil {
		return none, fail(ReasonSignatureInvalid, err, "the CMS signature is not PKCS#7")
	}
	sig, err := psd.Content.Verify(tocDigest, false)
	if err != nil {
		return none, fail(ReasonSignatureInvalid, err, "the CMS signature does not verify over the TOC checksum")
	}
	ts, err := pkcs9.VerifyOptionalTimestamp(sig)
	if err != nil {
		return none, fail(ReasonSignatureInvalid, err, "the CMS signature's timestamp does not verify")
	}
	return ts, nil
}

// verifyXARRSA checks the classic signature: PKCS#1 v1.5 over the TOC
// checksum (or over its hash, as some older packages have it) with the
// first certificate of its KeyInfo.
func verifyXARRSA(x *pkgread.XARSignature) (*x509.Certificate, []*x509.Certificate, error) {
	if len(x.RSACertificates) == 0 {
		return nil, nil, fail(ReasonSignatureInvalid, nil, "the RSA signature names no certificate")
	}
	certs := make([]*x509.Certificate, len(x.RSACertificates))
	for i, der := range x.RSACertificates {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil, fail(ReasonSignatureInvalid, err, "a certificate of the RSA signature")
		}
		certs[i] = c
	}
	pub := certs[0].PublicKey
	if err := x509tools.Verify(pub, x.ChecksumHash, x.TOCDigest, x.RSASignature); err != nil {
		d := x.ChecksumHash.New()
		d.Write(x.TOCDigest)
		if x509tools.Verify(pub, x.ChecksumHash, d.Sum(nil), x.RSASignature) != nil {
			return nil, nil, fail(ReasonSignatureInvalid, err, "the RSA signature does not verify over the TOC checksum")
		}
	}
	return certs[0], certs[1:], nil
}

// verifyInstallerChain is verifyChain for a Developer ID Installer leaf:
// Go's x509 does not know Apple's package-signing EKU, so the chain is
// built for any usage and the leaf's EKU and marker are checked here.
func (v *Verifier) verifyInstallerChain(sig *pkcs9.TimestampedSignature, res *Result) ([]*x509.Certificate, *Error) {
	leaf := sig.Certificate
	if leaf == nil {
		return nil, fail(ReasonSignatureInvalid, nil, "the signature names no certificate")
	}
	at := v.now()
	if cs := sig.CounterSignature; cs != nil {
		if _, err := verifyCert(cs.Certificate, cs.Intermediates, v.timestampRoots(), cs.SigningTime, x509.ExtKeyUsageTimeStamping); err != nil {
			return nil, fail(ReasonUntrustedSigner, err, "the timestamp authority %q is not trusted", cs.Certificate.Subject.String())
		}
		at = cs.SigningTime
		res.Timestamped, res.SigningTime = true, cs.SigningTime
	}
	for _, c := range append([]*x509.Certificate{leaf}, sig.Intermediates...) {
		csblob.MarkHandledExtensions(c) // Apple's critical certificate-policy markers
	}
	chain, err := verifyCert(leaf, sig.Intermediates, v.Roots, at, x509.ExtKeyUsageAny)
	if err != nil {
		return nil, fail(ReasonUntrustedSigner, err, "the signer %q does not chain to a configured root", leaf.Subject.String())
	}
	installerEKU := slices.ContainsFunc(leaf.UnknownExtKeyUsage, func(o asn1.ObjectIdentifier) bool { return o.Equal(oidEKUPackageSigning) })
	if !installerEKU || !hasExtension(leaf, oidDeveloperIDInstaller) {
		return nil, fail(ReasonUntrustedSigner, nil, "%q is not a Developer ID Installer certificate (Apple's package-signing EKU and marker)", leaf.Subject.String())
	}
	return chain, nil
}
