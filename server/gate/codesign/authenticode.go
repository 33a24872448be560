package codesign

import (
	"context"
	"crypto"
	"crypto/x509"
	"debug/pe"
	"errors"
	"io"
	"time"

	"github.com/sassoftware/relic/v7/lib/authenticode"
	"github.com/sassoftware/relic/v7/lib/pkcs9"
	"github.com/sassoftware/relic/v7/signers/sigerrors"
)

// maxCertTable bounds the PE certificate table (all signatures and their
// certificates); real ones are a few tens of KiB.
const maxCertTable = 16 << 20

// VerifyPE verifies the Authenticode signature of the size bytes of r, a PE
// image (.exe, .dll, a setup program). Nested signatures count: the first
// that verifies with a SHA-256-or-stronger digest and a trusted chain wins.
func (v *Verifier) VerifyPE(ctx context.Context, r io.ReaderAt, size int64) (res *Result, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v.Roots == nil {
		return nil, errors.New("codesign: Verifier.Roots is not configured")
	}
	if err := checkCertTable(r, size); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil { // relic parses hostile ASN.1 and PE headers
			res, err = nil, fail(ReasonSignatureInvalid, nil, "signature parser failure: %v", p)
		}
	}()
	sigs, err := authenticode.VerifyPE(io.NewSectionReader(r, 0, size), false)
	if err != nil {
		var ns sigerrors.NotSignedError
		if errors.As(err, &ns) {
			return nil, fail(ReasonUnsigned, nil, "the PE has no Authenticode signature")
		}
		return nil, fail(ReasonSignatureInvalid, err, "the Authenticode signature does not verify")
	}
	var first *Error
	for i := range sigs {
		res, err := v.checkPESignature(&sigs[i])
		if err == nil {
			return res, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil, fail(ReasonUnsigned, nil, "the PE certificate table holds no signature")
	}
	return nil, first
}

func (v *Verifier) checkPESignature(sig *authenticode.PESignature) (*Result, *Error) {
	if !strongHash(sig.ImageHashFunc) {
		return nil, fail(ReasonSignatureInvalid, nil, "the image digest is %v; SHA-256 or stronger is required", sig.ImageHashFunc)
	}
	res := &Result{Kind: "authenticode", DigestAlgorithm: sig.ImageHashFunc.String()}
	chain, ferr := v.verifyChain(&sig.TimestampedSignature, res)
	if ferr != nil {
		return nil, ferr
	}
	describeLeaf(res, sig.Certificate)
	res.Chain = chain
	return res, nil
}

func strongHash(h crypto.Hash) bool {
	return h == crypto.SHA256 || h == crypto.SHA384 || h == crypto.SHA512
}

// verifyChain checks a timestamp's chain (timeStamping EKU) when there is
// one, then the signer's chain (code-signing EKU) at the timestamp's time,
// or at v.Now without one, and returns the signer's chain.
func (v *Verifier) verifyChain(sig *pkcs9.TimestampedSignature, res *Result) ([]*x509.Certificate, *Error) {
	at := v.now()
	if cs := sig.CounterSignature; cs != nil {
		if _, err := verifyCert(cs.Certificate, cs.Intermediates, v.timestampRoots(), cs.SigningTime, x509.ExtKeyUsageTimeStamping); err != nil {
			return nil, fail(ReasonUntrustedSigner, err, "the timestamp authority %q is not trusted", cs.Certificate.Subject.String())
		}
		at = cs.SigningTime
		res.Timestamped, res.SigningTime = true, cs.SigningTime
	}
	chain, err := verifyCert(sig.Certificate, sig.Intermediates, v.Roots, at, x509.ExtKeyUsageCodeSigning)
	if err != nil {
		return nil, chainError(err, sig.Certificate)
	}
	return chain, nil
}

func verifyCert(leaf *x509.Certificate, intermediates []*x509.Certificate, roots *x509.CertPool, at time.Time, usage x509.ExtKeyUsage) ([]*x509.Certificate, error) {
	if leaf == nil {
		return nil, errors.New("no signer certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range intermediates {
		pool.AddCert(c)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return nil, err
	}
	return chains[0], nil
}

// checkCertTable reads the PE headers with the standard library first, so
// an unsigned file is told apart from a broken one, and a certificate table
// that claims gigabytes is refused before anything allocates for it.
func checkCertTable(r io.ReaderAt, size int64) error {
	f, err := pe.NewFile(io.NewSectionReader(r, 0, size))
	if err != nil {
		return fail(ReasonBinaryUnreadable, err, "not a readable PE image")
	}
	defer f.Close()
	var dirs []pe.DataDirectory
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		dirs = oh.DataDirectory[:min(len(oh.DataDirectory), int(oh.NumberOfRvaAndSizes))]
	case *pe.OptionalHeader64:
		dirs = oh.DataDirectory[:min(len(oh.DataDirectory), int(oh.NumberOfRvaAndSizes))]
	default:
		return fail(ReasonBinaryUnreadable, nil, "the PE has no optional header")
	}
	const securityDir = 4
	if len(dirs) <= securityDir || dirs[securityDir].Size == 0 {
		return fail(ReasonUnsigned, nil, "the PE has no Authenticode signature")
	}
	d := dirs[securityDir]
	if int64(d.Size) > maxCertTable || int64(d.VirtualAddress)+int64(d.Size) > size {
		return fail(ReasonSignatureInvalid, nil, "the certificate table (%d bytes at %d) does not fit the file", d.Size, d.VirtualAddress)
	}
	return nil
}
