package sandbox

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"time"

	"github.com/sassoftware/relic/v7/lib/certloader"
)

// oidDeveloperIDApplication marks an Apple Developer ID Application leaf;
// Apple issues it critical, and so does the sandbox.
var oidDeveloperIDApplication = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 1, 13}

// TeamID is the team identifier of the sandbox's Developer ID certificate.
const TeamID = "SANDBOX000"

// pki is the sandbox's certificate authority: a root and two code-signing
// leaves, one shaped like Apple's Developer ID Application certificates,
// one like a Windows code-signing certificate. Keys are ECDSA P-256
// (cheap to make at every start).
type pki struct {
	root    *x509.Certificate
	rootKey *ecdsa.PrivateKey
	signers
	// revoked are the same three shapes, reported revoked (keyCompromise)
	// by the sandbox's OCSP responder and CRL: the revoked.* downloads.
	revoked   signers
	revokedAt time.Time
	// issued is every leaf's serial (hex): the responder answers good for
	// those not revoked, unknown for any other.
	issued map[string]bool
}

// signers are the sandbox's three signing leaves.
type signers struct {
	developer *certloader.Certificate // macOS
	windows   *certloader.Certificate // Authenticode
	installer *certloader.Certificate // .pkg: Developer ID Installer-shaped
}

// signersFor is the leaves a variant's package is signed with. The
// wrongsigner variant swaps them for certificates of the wrong kind: the
// macOS code and the Windows packages by the Developer ID Installer-shaped
// leaf (Apple's package-signing EKU only, no code signing), the .pkg by
// the Developer ID Application leaf (code signing, not an installer
// certificate).
func (p *pki) signersFor(variant string) signers {
	switch variant {
	case variantRevoked:
		return p.revoked
	case variantWrongSigner:
		return signers{developer: p.installer, windows: p.installer, installer: p.developer}
	}
	return p.signers
}

// The sandbox CA's revocation services, under a reserved name (RFC 6761's
// .invalid): never dialled, answered in memory (Sandbox.Revocation).
const (
	ocspURL = "http://ocsp.sandbox.invalid/"
	crlURL  = "http://crl.sandbox.invalid/root.crl"
)

// withRevocationURLs names the CA's services in a leaf template: the macOS
// leaves an OCSP responder and a CRL (Apple's Developer ID CA is
// OCSP-only; the CRL is the fallback path), the Windows leaf only the CRL,
// so that test mode exercises both.
func withRevocationURLs(t *x509.Certificate, ocsp bool) {
	if ocsp {
		t.OCSPServer = []string{ocspURL}
	}
	t.CRLDistributionPoints = []string{crlURL}
}

func newPKI(now time.Time) (*pki, error) {
	notBefore, notAfter := now.AddDate(-1, 0, 0), now.AddDate(20, 0, 0)
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	rootTmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "xpromo sandbox root (test mode only)", Organization: []string{"xpromo sandbox"}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	root, err := create(rootTmpl, nil, rootKey, rootKey)
	if err != nil {
		return nil, err
	}
	leaf := func(cn, ou string, devID bool) (*certloader.Certificate, error) {
		return codeSigningLeaf(root, rootKey, notBefore, notAfter, cn, ou, devID)
	}
	p := &pki{root: root, rootKey: rootKey, revokedAt: notBefore.Add(24 * time.Hour), issued: map[string]bool{}}
	for _, s := range []*signers{&p.signers, &p.revoked} {
		if s.developer, err = leaf("Developer ID Application: xpromo sandbox ("+TeamID+")", TeamID, true); err != nil {
			return nil, err
		}
		if s.windows, err = leaf("xpromo sandbox code signing", "", false); err != nil {
			return nil, err
		}
		if s.installer, err = installerLeaf(root, rootKey, notBefore, notAfter); err != nil {
			return nil, err
		}
		for _, c := range []*certloader.Certificate{s.developer, s.windows, s.installer} {
			p.issued[c.Leaf.SerialNumber.Text(16)] = true
		}
	}
	return p, nil
}

// codeSigningLeaf is a code-signing leaf of the sandbox root: Developer
// ID Application-shaped (devID), or a Windows code-signing certificate.
func codeSigningLeaf(root *x509.Certificate, rootKey *ecdsa.PrivateKey, notBefore, notAfter time.Time, cn, ou string, devID bool) (*certloader.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	t := &x509.Certificate{
		Subject:   pkix.Name{CommonName: cn, Organization: []string{"xpromo sandbox"}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	if ou != "" {
		t.Subject.OrganizationalUnit = []string{ou}
	}
	if devID {
		t.ExtraExtensions = []pkix.Extension{{Id: oidDeveloperIDApplication, Critical: true, Value: []byte{0x05, 0x00}}}
	}
	withRevocationURLs(t, devID)
	c, err := create(t, root, key, rootKey)
	if err != nil {
		return nil, err
	}
	return &certloader.Certificate{Leaf: c, Certificates: []*x509.Certificate{c, root}, PrivateKey: key}, nil
}

func create(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sandbox: making a certificate: %w", err)
	}
	return x509.ParseCertificate(der)
}
