package sandbox

import (
	"fmt"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// msixPackage is an MSIX whose manifest Identity Name is the bundle id,
// holding the sandbox's (unsigned) PE as its executable, signed in-process
// with relic's appx signer by the Windows leaf — which, as signtool
// requires, makes the manifest's Publisher the leaf's subject, so it
// binds. infected adds the EICAR file, stored.
func (s *Sandbox) msixPackage(bundleID, name, variant string) (out []byte, err error) {
	defer func() { // the fixture writers panic on what cannot happen
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("sandbox: building the MSIX: %v", p)
		}
	}()
	manifest := []byte(`<?xml version="1.0" encoding="utf-8"?>
<Package xmlns="http://schemas.microsoft.com/appx/manifest/foundation/windows10">
  <Identity Name="` + bundleID + `" Publisher="CN=unsigned" Version="1.0.0.0" ProcessorArchitecture="x64"/>
  <Properties><DisplayName>` + name + `</DisplayName><PublisherDisplayName>xpromo sandbox</PublisherDisplayName><Logo>logo.png</Logo></Properties>
</Package>`)
	files := []fixture.File{{Name: name + ".exe", Data: fixture.PE(map[string]string{"InternalName": bundleID, "CompanyName": "xpromo sandbox"})}}
	if variant == variantInfected {
		files = append(files, fixture.File{Name: "eicar.com", Data: eicar})
	}
	unsigned := fixture.MSIX(manifest, files...)
	if variant == variantUnsigned {
		return unsigned, nil
	}
	return fixture.SignMSIXWith(unsigned, s.pki.signersFor(variant).windows), nil
}
