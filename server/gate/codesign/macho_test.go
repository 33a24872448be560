package codesign

import (
	"bytes"
	"context"
	"crypto/x509"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// The Mach-O fixtures are signed in-process by relic's Mach-O signer (the
// same code relic's `relic sign` uses), with a Developer ID-shaped leaf
// from a test root standing in for Apple's.

type macPKI struct {
	root, devID, plainLeaf, other *fixture.Cert
}

var testMacPKI = sync1(func() *macPKI {
	root := fixture.NewRoot("Test Apple Root")
	return &macPKI{
		root: root,
		devID: root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Example Ltd (TEAM123456)", Organization: "Example Ltd",
			OrgUnit: "TEAM123456", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true}),
		plainLeaf: root.Issue(fixture.CertOptions{CommonName: "Some Code Signer", EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}),
		other:     fixture.NewRoot("Somebody Else's Root"),
	}
})

var (
	helloPlist     = fixture.InfoPlist("com.example.hello", "Hello", false)
	codeResources  = []byte(`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>files</key><dict/></dict></plist>`)
	signedHelloApp = sync1(func() []byte {
		return fixture.SignMachO(fixture.MachO(nil), testMacPKI().devID,
			fixture.MachOSignOptions{InfoPlist: helloPlist, Resources: codeResources, Runtime: true})
	})
)

func verifyMachO(t *testing.T, v *Verifier, b, plist, res []byte) (*Result, error) {
	t.Helper()
	return v.VerifyMachO(context.Background(), bytes.NewReader(b), int64(len(b)), plist, res)
}

func TestMachOSigned(t *testing.T) {
	p := testMacPKI()
	res, err := verifyMachO(t, &Verifier{Roots: p.root.Pool()}, signedHelloApp(), helloPlist, codeResources)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "macho" || res.SigningIdentity != "com.example.hello" || res.TeamID != "TEAM123456" || !res.HardenedRuntime ||
		len(res.CDHashes) != 1 || len(res.CDHashes[0]) != 20 || res.SignerOrganization != "Example Ltd" || res.Notarized {
		t.Fatalf("%+v", res)
	}
}

func TestMachOInfoPlistBinding(t *testing.T) {
	p := testMacPKI()
	forged := fixture.InfoPlist("com.example.impostor", "Hello", false)
	_, err := verifyMachO(t, &Verifier{Roots: p.root.Pool()}, signedHelloApp(), forged, codeResources)
	wantReason(t, err, ReasonSignatureInvalid)

	// A signature that binds no Info.plist cannot vouch for a bundle's.
	unbound := fixture.SignMachO(fixture.MachO(nil), p.devID, fixture.MachOSignOptions{Identity: "com.example.hello"})
	_, err = verifyMachO(t, &Verifier{Roots: p.root.Pool()}, unbound, helloPlist, nil)
	wantReason(t, err, ReasonSignatureInvalid)
}

func TestMachOTampered(t *testing.T) {
	b := append([]byte(nil), signedHelloApp()...)
	b[0x400] ^= 0xff // the first instruction
	_, err := verifyMachO(t, &Verifier{Roots: testMacPKI().root.Pool()}, b, helloPlist, codeResources)
	wantReason(t, err, ReasonSignatureInvalid)
}

func TestMachOUnsigned(t *testing.T) {
	_, err := verifyMachO(t, &Verifier{Roots: testMacPKI().root.Pool()}, fixture.MachO(nil), nil, nil)
	wantReason(t, err, ReasonUnsigned)
}

func TestMachOUntrustedSigner(t *testing.T) {
	p := testMacPKI()
	_, err := verifyMachO(t, &Verifier{Roots: p.other.Pool()}, signedHelloApp(), helloPlist, codeResources)
	wantReason(t, err, ReasonUntrustedSigner)

	// Chains to the root, but is not a Developer ID Application certificate.
	notDevID := fixture.SignMachO(fixture.MachO(nil), p.plainLeaf, fixture.MachOSignOptions{InfoPlist: helloPlist})
	_, err = verifyMachO(t, &Verifier{Roots: p.root.Pool()}, notDevID, helloPlist, nil)
	wantReason(t, err, ReasonUntrustedSigner)
}

func TestMachOUniversal(t *testing.T) {
	p := testMacPKI()
	opts := fixture.MachOSignOptions{InfoPlist: helloPlist, Resources: codeResources, Runtime: true}
	arm := fixture.SignMachO(fixture.MachOFor(fixture.CPUARM64, nil), p.devID, opts)
	fat := fixture.Fat(signedHelloApp(), arm)
	res, err := verifyMachO(t, &Verifier{Roots: p.root.Pool()}, fat, helloPlist, codeResources)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CDHashes) != 2 {
		t.Fatalf("one cdhash per architecture: %d", len(res.CDHashes))
	}
	// One unsigned architecture fails the whole binary.
	_, err = verifyMachO(t, &Verifier{Roots: p.root.Pool()}, fixture.Fat(signedHelloApp(), fixture.MachOFor(fixture.CPUARM64, nil)), helloPlist, codeResources)
	wantReason(t, err, ReasonUnsigned)
}

func zippedApp(exe, plist, ticket []byte) []byte {
	files := []fixture.File{
		{Name: "Hello.app/Contents/Info.plist", Data: plist},
		{Name: "Hello.app/Contents/MacOS/Hello", Data: exe, Mode: 0o100755},
		{Name: "Hello.app/Contents/_CodeSignature/CodeResources", Data: codeResources},
	}
	if ticket != nil {
		files = append(files, fixture.File{Name: "Hello.app/Contents/CodeResources", Data: ticket})
	}
	return fixture.Zip(files...)
}

func verifyApp(t *testing.T, v *Verifier, z []byte) (*Result, error) {
	t.Helper()
	return v.VerifyApp(context.Background(), bytes.NewReader(z), int64(len(z)))
}

func TestZippedAppNotarized(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyApp(t, v, zippedApp(signedHelloApp(), helloPlist, []byte("s8ChAAAAstapled-ticket")))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Notarized || res.NotarySource != "stapled-bundle" || res.SigningIdentity != "com.example.hello" {
		t.Fatalf("%+v", res)
	}
}

func TestZippedAppWithoutTicket(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	res, err := verifyApp(t, v, zippedApp(signedHelloApp(), helloPlist, nil))
	wantReason(t, err, ReasonNotNotarized)
	if res == nil || res.SigningIdentity != "com.example.hello" {
		t.Fatalf("the verified signature comes back with the reason: %+v", res)
	}
}

func TestZippedAppWithSwappedInfoPlist(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	_, err := verifyApp(t, v, zippedApp(signedHelloApp(), fixture.InfoPlist("com.example.impostor", "Hello", false), []byte("ticket")))
	wantReason(t, err, ReasonSignatureInvalid)
}

func TestZippedAppUnsigned(t *testing.T) {
	v := &Verifier{Roots: testMacPKI().root.Pool()}
	_, err := verifyApp(t, v, zippedApp(fixture.MachO(nil), helloPlist, nil))
	wantReason(t, err, ReasonUnsigned)
}
