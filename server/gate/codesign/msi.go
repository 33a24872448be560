package codesign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/hmac"
	"errors"
	"io"
	"slices"

	"github.com/sassoftware/relic/v7/lib/authenticode"
	"github.com/sassoftware/relic/v7/lib/pkcs7"
	"github.com/sassoftware/relic/v7/lib/pkcs9"
	"github.com/sassoftware/relic/v7/lib/x509tools"

	"github.com/xpromo/xpromo/server/gate/cfb"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// The Authenticode signature of an MSI lives in two streams of its root
// storage: the PKCS#7 SignedData (SpcIndirectDataContent) and, optionally,
// a pre-hash of the directory metadata that the signed digest then covers.
const (
	msiSignatureStream   = "\x05DigitalSignature"
	msiSignatureExStream = "\x05MsiDigitalSignatureEx"
	maxMSISignature      = 1 << 20 // a signature with its chain is a few KiB
)

// VerifyMSI verifies the Authenticode signature of an MSI database. The
// compound file is read with the gate's own bounded reader (server/gate/cfb:
// relic's lib/comdoc follows a cyclic FAT forever); relic checks the PKCS#7
// and the timestamp; the digest over every stream — sorted by their raw
// UTF-16LE names, storages recursed into, each storage's CLSID after its
// streams, the signature streams left out (as signtool and osslsigncode
// compute it; relic's lib/authenticode DigestMSI, ported onto cfb) — is
// recomputed a sector at a time, whatever the size of the cabinets. The
// chain rules are VerifyPE's: SHA-256 or stronger, the configured roots, the
// code-signing EKU, at the timestamp's time when there is one.
func (v *Verifier) VerifyMSI(ctx context.Context, r io.ReaderAt, size int64) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	c, err := cfb.Open(r, size, pkgread.CFBLimits(pkgread.Limits{}))
	if err != nil {
		return nil, fail(ReasonBinaryUnreadable, err, "not a readable compound file")
	}
	defer func() {
		if p := recover(); p != nil { // relic parses hostile ASN.1
			res, err = nil, fail(ReasonSignatureInvalid, nil, "signature parser failure: %v", p)
		}
	}()
	var sig, exsig []byte
	for _, e := range c.Children(c.Root()) {
		if e.Type != cfb.TypeStream || (e.Name != msiSignatureStream && e.Name != msiSignatureExStream) {
			continue
		}
		if e.Size > maxMSISignature {
			return nil, fail(ReasonSignatureInvalid, nil, "the %q stream is %d bytes, more than %d", e.Name, e.Size, maxMSISignature)
		}
		b, err := c.ReadStream(e)
		if err != nil {
			return nil, fail(ReasonSignatureInvalid, err, "reading the signature")
		}
		if e.Name == msiSignatureStream {
			sig = b
		} else {
			exsig = b
		}
	}
	if len(sig) == 0 {
		return nil, fail(ReasonUnsigned, nil, "the MSI has no Authenticode signature (no \\x05DigitalSignature stream)")
	}
	psd, err := pkcs7.Unmarshal(sig)
	if err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "the MSI signature is not PKCS#7")
	}
	if !psd.Content.ContentInfo.ContentType.Equal(authenticode.OidSpcIndirectDataContent) {
		return nil, fail(ReasonSignatureInvalid, nil, "the MSI signature is not an Authenticode signature")
	}
	pksig, err := psd.Content.Verify(nil, false)
	if err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "the MSI signature does not verify")
	}
	ts, err := pkcs9.VerifyOptionalTimestamp(pksig)
	if err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "the MSI signature's timestamp does not verify")
	}
	indirect := new(authenticode.SpcIndirectDataContentMsi)
	if err := psd.Content.ContentInfo.Unmarshal(indirect); err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "the MSI signature's content")
	}
	hash, err := x509tools.PkixDigestToHashE(indirect.MessageDigest.DigestAlgorithm)
	if err != nil {
		return nil, fail(ReasonSignatureInvalid, err, "the MSI digest algorithm")
	}
	if !strongHash(hash) {
		return nil, fail(ReasonSignatureInvalid, nil, "the MSI digest is %v; SHA-256 or stronger is required", hash)
	}
	imprint, prehash, err := digestMSI(ctx, c, hash, exsig != nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(ReasonBinaryUnreadable, err, "reading the MSI's streams")
	}
	if exsig != nil && !hmac.Equal(prehash, exsig) {
		return nil, fail(ReasonSignatureInvalid, nil, "the MSI's metadata changed after signing (MsiDigitalSignatureEx)")
	}
	if !hmac.Equal(imprint, indirect.MessageDigest.Digest) {
		return nil, fail(ReasonSignatureInvalid, nil, "the MSI changed after signing: its digest does not match the signed one")
	}
	res = &Result{Kind: "authenticode", DigestAlgorithm: hash.String()}
	chain, ferr := v.verifyChain(&ts, res)
	if ferr != nil {
		return nil, ferr
	}
	describeLeaf(res, ts.Certificate)
	res.Chain = chain
	return res, nil
}

// DigestMSI is the Authenticode imprint of an MSI (without the
// MsiDigitalSignatureEx pre-hash): what a signer signs, computed by the
// code that verifies it (the test-mode sandbox signs with it).
func DigestMSI(ctx context.Context, r io.ReaderAt, size int64, hash crypto.Hash) ([]byte, error) {
	c, err := cfb.Open(r, size, pkgread.CFBLimits(pkgread.Limits{}))
	if err != nil {
		return nil, err
	}
	imprint, _, err := digestMSI(ctx, c, hash, false)
	return imprint, err
}

// digestMSI is the Authenticode imprint of an MSI: the pre-hash first when
// the signature carries MsiDigitalSignatureEx, then every stream.
func digestMSI(ctx context.Context, c *cfb.File, hash crypto.Hash, extended bool) (imprint, prehash []byte, err error) {
	d := hash.New()
	if extended {
		p := hash.New()
		if err := prehashMSIDir(c, c.Root(), p); err != nil {
			return nil, nil, err
		}
		prehash = p.Sum(nil)
		d.Write(prehash)
	}
	if err := hashMSIDir(ctx, c, c.Root(), d); err != nil {
		return nil, nil, err
	}
	return d.Sum(nil), prehash, nil
}

// msiChildren is a storage's entries without the signature streams, in
// the order the digest takes them: by raw UTF-16LE name bytes, a prefix
// first.
func msiChildren(c *cfb.File, dir *cfb.Entry) []*cfb.Entry {
	kids := slices.DeleteFunc(c.Children(dir), func(e *cfb.Entry) bool {
		return e.Name == msiSignatureStream || e.Name == msiSignatureExStream
	})
	slices.SortFunc(kids, func(a, b *cfb.Entry) int { return bytes.Compare(a.NameBytes(), b.NameBytes()) })
	return kids
}

func hashMSIDir(ctx context.Context, c *cfb.File, dir *cfb.Entry, w io.Writer) error {
	for _, e := range msiChildren(c, dir) {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch e.Type {
		case cfb.TypeStream:
			if err := c.CopyStream(e, w); err != nil {
				return err
			}
		case cfb.TypeStorage:
			if err := hashMSIDir(ctx, c, e, w); err != nil {
				return err
			}
		}
	}
	w.Write(dir.CLSID())
	return nil
}

func prehashMSIDir(c *cfb.File, dir *cfb.Entry, w io.Writer) error {
	prehashMSIEntry(dir, w)
	for _, e := range msiChildren(c, dir) {
		switch e.Type {
		case cfb.TypeStream:
			prehashMSIEntry(e, w)
		case cfb.TypeStorage:
			if err := prehashMSIDir(c, e, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// prehashMSIEntry writes the directory metadata MsiDigitalSignatureEx
// covers: name, CLSID (storages), size (streams), state bits, times.
func prehashMSIEntry(e *cfb.Entry, w io.Writer) {
	raw := e.Raw()
	if e.Type != cfb.TypeRoot {
		w.Write(e.NameBytes())
	}
	if e.Type == cfb.TypeRoot || e.Type == cfb.TypeStorage {
		w.Write(raw[80:96])
	}
	if e.Type == cfb.TypeStream {
		w.Write(raw[120:124])
	}
	w.Write(raw[96:100])
	if e.Type != cfb.TypeRoot {
		w.Write(raw[100:116])
	}
}
