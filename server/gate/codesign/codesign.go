// Package codesign verifies the code signatures of the binaries an app
// download ships: Windows Authenticode on PE files and MSI databases, and
// the macOS code signature of an app's main executable. It is the `signed` check of the
// vetting gate.
//
// What it checks:
//
//   - Authenticode (VerifyPE): the PKCS#7 signature over the image digest
//     (recomputed, page hashes too when present; relic's lib/authenticode),
//     a SHA-256-or-stronger image digest, and the signer's chain to the
//     configured code-signing roots with the code-signing EKU, at the time of
//     an RFC 3161 / Authenticode timestamp when there is one (its own chain
//     checked with the timeStamping EKU) and at Verifier.Now otherwise.
//   - MSI (VerifyMSI): the Authenticode signature over every stream of the
//     compound file, read with server/gate/cfb, with VerifyPE's chain rules.
//   - Flat .pkg (VerifyPKG): the xar TOC checksum (SHA-1 as productsign
//     writes it, or SHA-2), every heap file's archived checksum, the CMS
//     and RSA signatures over the TOC checksum, a Developer ID Installer
//     leaf (Apple's package-signing EKU and marker) chaining to the
//     configured roots, and a stapled ticket trailer (presence).
//   - MSIX/APPX (VerifyMSIX): AppxSignature.p7x and every digest it signs
//     (AXPC, AXCD, AXCT, AXBM, AXCI), each file's blocks against the block
//     map, streamed, every entry bounded first; VerifyPE's chain rules.
//     Result.Publisher is the signer's subject as a manifest Publisher.
//   - Mach-O (VerifyMachO, VerifyApp): the CMS signature over the
//     CodeDirectory, every page hash, the special-slot hashes, the binding
//     of the bundle's exact Info.plist bytes (a signature that does not bind
//     an Info.plist is refused for an app), the chain to the configured roots
//     with the code-signing EKU, and Apple's Developer ID Application
//     marker (OID 1.2.840.113635.100.6.1.13) on the leaf. Ad-hoc signatures
//     (no CMS, as the Go linker writes) count as unsigned. Universal binaries:
//     every architecture must verify.
//   - A .dmg (VerifyDMGApp): the app on the image's HFS+ volume, read with
//     pkgread.OpenDMG, gets VerifyApp's checks; the image's own signature,
//     when it has one, must verify (VerifyDMGSignature: relic's
//     lib/fruit/dmg, the chain rules of a Mach-O, the app's team), and a
//     ticket stapled to it also counts as notarisation.
//   - Notarisation (VerifyApp): a stapled ticket in the app
//     (Contents/CodeResources, which stapler writes and the signature does not
//     seal) or in the signature's ticket slot; its presence only — Apple does
//     not document the ticket format, so its content is not validated, and
//     revocation cannot be checked offline. An app without a stapled ticket
//     is ReasonNotNotarized here; the gate then asks Apple's ticket service
//     by Result.CDHashes (server/gate/notary), whose answer decides.
//
// What it does not do: trust the system roots (Debian's are Mozilla's TLS
// roots; the gate configures its code-signing roots explicitly: Microsoft's
// code-signing CAs for Windows, Apple Root CA for macOS), check revocation
// (the gate does, on Result.Chain: server/gate/revocation), verify MSIX bundles,
// or decide what the signer's identity must be — the caller compares
// Result.Signer and Result.SigningIdentity with the app's declared
// publisher and bundle_id.
package codesign

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Reason is a stable code saying why a binary's signature is not accepted.
type Reason string

const (
	// ReasonUnsigned: no signature at all, or only an ad-hoc one.
	ReasonUnsigned Reason = "gate_unsigned_binary"
	// ReasonSignatureInvalid: a signature is present but does not verify:
	// the file was changed after signing, a hash or the CMS is wrong, the
	// Info.plist is not the one signed, or a weak digest (MD5, SHA-1) is all
	// there is.
	ReasonSignatureInvalid Reason = "gate_signature_invalid"
	// ReasonUntrustedSigner: the signature verifies but its certificate does
	// not chain to a configured root, has expired (with no timestamp), lacks
	// the code-signing EKU, or (macOS) is not a Developer ID Application
	// certificate.
	ReasonUntrustedSigner Reason = "gate_untrusted_signer"
	// ReasonNotNotarized: a correctly signed macOS app without a
	// notarisation ticket (stapled, or found online when that is configured).
	ReasonNotNotarized Reason = "gate_not_notarized"
	// ReasonBinaryUnreadable: the file is not a binary of the expected kind
	// or too damaged to look for a signature.
	ReasonBinaryUnreadable Reason = "gate_binary_unreadable"
)

// Error is the error every verification returns.
type Error struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Reason))
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns err's reason code, or "" when err did not come from here.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func fail(r Reason, err error, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...), Err: err}
}

// Verifier holds the trust configuration. Roots is required: there is no
// fallback to the system's roots.
type Verifier struct {
	// Roots are the code-signing roots a signer must chain to.
	Roots *x509.CertPool
	// TimestampRoots are the roots of timestamp authorities; nil means Roots.
	TimestampRoots *x509.CertPool
	// Now is the clock for signatures without a timestamp; nil means time.Now.
	Now func() time.Time
	// MaxBinaryBytes bounds how much of a zipped executable is extracted to
	// a temporary file for verification; default 1 GiB.
	MaxBinaryBytes int64
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) timestampRoots() *x509.CertPool {
	if v.TimestampRoots != nil {
		return v.TimestampRoots
	}
	return v.Roots
}

// Result describes a signature that verified.
type Result struct {
	Kind   string            // "authenticode", "macho", "pkg" or "appx"
	Signer *x509.Certificate // the leaf
	Chain  []*x509.Certificate
	// Subject fields of the leaf, for comparing with the declared publisher.
	SignerCommonName   string
	SignerOrganization string
	DigestAlgorithm    string    // "SHA-256", ...
	SigningTime        time.Time // the timestamp's time, zero without one
	Timestamped        bool

	// MSIX: the signer's subject as an AppxManifest Identity Publisher.
	Publisher string

	// macOS
	SigningIdentity string   // the CodeDirectory identifier (the bundle id for an app's main executable)
	TeamID          string   // the leaf's subject OU
	CDHashes        [][]byte // per architecture: the first 20 bytes of the CodeDirectory's hash
	HardenedRuntime bool
	Notarized       bool   // a stapled ticket was found
	NotarySource    string // "stapled-bundle", "stapled-signature", "stapled-dmg", "stapled-trailer" (.pkg) or "online"

	// Image is a .dmg's own signature, verified (VerifyDMGApp), when the
	// image is signed.
	Image *Result
}

func describeLeaf(r *Result, leaf *x509.Certificate) {
	r.Signer = leaf
	r.SignerCommonName = leaf.Subject.CommonName
	if len(leaf.Subject.Organization) > 0 {
		r.SignerOrganization = leaf.Subject.Organization[0]
	}
}

// chainReason classifies an x509 verification failure.
func chainError(err error, signer *x509.Certificate) *Error {
	what := "the signer"
	if signer != nil {
		what = fmt.Sprintf("the signer %q", signer.Subject.String())
	}
	return fail(ReasonUntrustedSigner, err, "%s does not chain to a configured code-signing root for code signing", what)
}
