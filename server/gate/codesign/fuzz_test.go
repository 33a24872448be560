package codesign

import (
	"bytes"
	"context"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// The verifiers parse hostile signatures (PE certificate tables, CMS,
// code-signing superblobs). Whatever the bytes, they answer with a reason
// code, never a panic or a pass.

func FuzzVerifyPE(f *testing.F) {
	f.Add(fixture.PE(map[string]string{"ProductName": "x"}))
	f.Add(fixture.PE(nil))
	v := &Verifier{Roots: fixture.NewRoot("Fuzz Root").Pool()}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := v.VerifyPE(context.Background(), bytes.NewReader(b), int64(len(b)))
		if err == nil || ReasonOf(err) == "" {
			t.Fatalf("no reason code: res=%v err=%v", res, err)
		}
	})
}

func FuzzVerifyMachO(f *testing.F) {
	root := fixture.NewRoot("Fuzz Root")
	leaf := root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Fuzz", DeveloperID: true})
	plist := fixture.InfoPlist("com.example.fuzz", "Fuzz", false)
	f.Add(fixture.SignMachO(fixture.MachO(nil), leaf, fixture.MachOSignOptions{InfoPlist: plist}))
	f.Add(fixture.MachO(plist))
	v := &Verifier{Roots: fixture.NewRoot("Another Root").Pool()} // nothing fuzzed may pass
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := v.VerifyMachO(context.Background(), bytes.NewReader(b), int64(len(b)), plist, nil)
		if err == nil || ReasonOf(err) == "" {
			t.Fatalf("no reason code: res=%v err=%v", res, err)
		}
	})
}
