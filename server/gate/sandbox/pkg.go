package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"time"

	"github.com/sassoftware/relic/v7/lib/certloader"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// Apple's Developer ID Installer marker and package-signing EKU
// (server/gate/codesign/pkg.go checks both).
var (
	oidDeveloperIDInstaller = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 1, 14}
	oidEKUPackageSigning    = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 4, 13}
)

// installerLeaf is the sandbox's Developer ID Installer-shaped leaf, the
// signer of its .pkg downloads.
func installerLeaf(root *x509.Certificate, rootKey *ecdsa.PrivateKey, notBefore, notAfter time.Time) (*certloader.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	t := &x509.Certificate{
		Subject: pkix.Name{CommonName: "Developer ID Installer: xpromo sandbox (" + TeamID + ")",
			Organization: []string{"xpromo sandbox"}, OrganizationalUnit: []string{TeamID}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		UnknownExtKeyUsage:    []asn1.ObjectIdentifier{oidEKUPackageSigning},
		BasicConstraintsValid: true,
		ExtraExtensions:       []pkix.Extension{{Id: oidDeveloperIDInstaller, Critical: true, Value: []byte{0x05, 0x00}}},
	}
	withRevocationURLs(t, true)
	c, err := create(t, root, key, rootKey)
	if err != nil {
		return nil, err
	}
	return &certloader.Certificate{Leaf: c, Certificates: []*x509.Certificate{c, root}, PrivateKey: key}, nil
}

// pkgPackage is a component package (pkgbuild's shape) installing
// <name>.app: PackageInfo declares the bundle id for the app and
// <bundle id>.pkg for the package, a Bom and a Payload stand for the rest;
// SHA-1 checksums, signed in-process (relic's xar signer, CMS) by the
// installer leaf, and a stapled ticket trailer.
func (s *Sandbox) pkgPackage(bundleID, name, variant string) (out []byte, err error) {
	defer func() { // the fixture writers panic on what cannot happen
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("sandbox: building the .pkg: %v", p)
		}
	}()
	info := fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>
<pkg-info format-version="2" identifier="%s.pkg" version="1.0.0" install-location="/Applications" auth="root">
  <payload numberOfFiles="3" installKBytes="1"/>
  <bundle path="./%s.app" id="%s" CFBundleShortVersionString="1.0.0" CFBundleVersion="1"/>
</pkg-info>`, bundleID, name, bundleID)
	files := []fixture.XARFile{
		{Name: "Bom", Data: []byte("BOMStore xpromo sandbox")},
		{Name: "Payload", Data: []byte(name + ".app (xpromo sandbox test package payload)\n")},
		{Name: "PackageInfo", Data: []byte(info)},
		// each variant's own bytes, so its TOC checksum (the notarisation
		// record's name) is its own
		{Name: "Variant", Data: []byte(variant)},
	}
	if variant == variantInfected {
		files = append(files, fixture.XARFile{Name: "Scripts", Data: eicar, Stored: true})
	}
	pkg := fixture.PKG(files...)
	if variant == variantUnsigned {
		return pkg, nil
	}
	signed := fixture.SignPKGWith(pkg, s.pki.signersFor(variant).installer)
	if variant == variantUnnotarized {
		return signed, nil
	}
	return pkgread.StapleXAR(signed, ticket), nil
}
