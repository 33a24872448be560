package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// BindSigner is the rule that ties a verified signature to the identity
// the package declares and the app registered (docs/gate.md, "What a
// registration must match"). It returns "" when they agree, else why not.
//
//   - macOS (a Mach-O signature): the signing identifier, which the
//     signature covers, is the app's bundle_id.
//   - MSIX/APPX: the manifest's Identity Publisher is exactly the
//     signer's subject in Microsoft's DN form (as Windows requires to
//     install it); the Identity Name matched against bundle_id is in the
//     manifest the signature covers.
//   - Windows (Authenticode on a PE or an MSI): the identifiers matched
//     against bundle_id (InternalName/ProductName, MSI ProductName/
//     UpgradeCode) are bytes the signature covers, and the publisher the
//     package declares (VERSIONINFO CompanyName, the MSI's Manufacturer)
//     must be the organisation the signer's certificate names (its
//     subject O, or its CN when it has no O), ignoring ASCII case and runs
//     of white space. A package that declares no publisher does not bind.
//     So a file that says it is com.acme.app by Acme Ltd is approved only
//     when a certificate authority the gate trusts issued its signer to
//     Acme Ltd.
func BindSigner(sig *codesign.Result, id *pkgread.Identity, bundleID string) string {
	switch {
	case sig.Kind == "macho":
		if sig.SigningIdentity != bundleID {
			return fmt.Sprintf("the app is signed as %q, not %q", sig.SigningIdentity, bundleID)
		}
		return ""
	case id == nil:
		return "the package's identity could not be read, so its signer binds nothing"
	case sig.Kind == "pkg":
		// A flat package's identifiers (PackageInfo, Distribution) are files
		// its signature covers (their archived checksums are in the signed
		// TOC), and its signer is a Developer ID Installer certificate:
		// like a Mach-O's signing identifier, they are what the signer
		// asserts. Nothing in a .pkg names a publisher to compare.
		return ""
	case sig.Kind == "appx":
		// An MSIX names its publisher as a distinguished name, which
		// Windows installs only when it is exactly the signer's subject.
		if id.Publisher != sig.Publisher {
			return fmt.Sprintf("the package declares the publisher %q but is signed by %q", id.Publisher, sig.Publisher)
		}
		return ""
	}
	signer := signerName(sig)
	switch declared := id.Publisher; {
	case strings.TrimSpace(declared) == "":
		return fmt.Sprintf("the package declares no publisher (CompanyName, Manufacturer) to compare with its signer %q", signer)
	case !samePublisher(declared, signer):
		return fmt.Sprintf("the package declares the publisher %q but is signed by %q", declared, signer)
	}
	return ""
}

// signerName is the organisation a certificate names: its O, else its CN.
func signerName(sig *codesign.Result) string {
	if sig.SignerOrganization != "" {
		return sig.SignerOrganization
	}
	return sig.SignerCommonName
}

func samePublisher(a, b string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return strings.EqualFold(norm(a), norm(b))
}

// SignatureEvidenceOf is what a gate result records of a verified
// signature: the signer's certificate next to what the package declares.
func SignatureEvidenceOf(sig *codesign.Result, id *pkgread.Identity) *SignatureEvidence {
	ev := &SignatureEvidence{Kind: sig.Kind, SignerCN: sig.SignerCommonName, SignerOrg: sig.SignerOrganization,
		TeamID: sig.TeamID, SigningIdentity: sig.SigningIdentity, Notarized: sig.Notarized, NotarySource: sig.NotarySource}
	if c := sig.Signer; c != nil {
		sum := sha256.Sum256(c.Raw)
		ev.SignerSubject, ev.SignerIssuer = c.Subject.String(), c.Issuer.String()
		ev.SignerSerial, ev.SignerSHA256 = c.SerialNumber.Text(16), hex.EncodeToString(sum[:])
	}
	if id != nil && sig.Kind != "macho" && sig.Kind != "pkg" {
		ev.DeclaredPublisher = id.Publisher
	}
	if sig.Timestamped {
		ts := sig.SigningTime.UTC()
		ev.Timestamp = &ts
	}
	return ev
}
