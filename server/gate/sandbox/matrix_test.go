package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
)

// The formats the sandbox serves, by download path, and the variants that
// apply to each (docs/gate.md, "Magic values").
var matrixFormats = []struct {
	platform xpromo.Platform
	path     string
	kind     string // what the gate reads: pkgread's format name
}{
	{xpromo.PlatformMac, "/Hello.zip", "zip"},
	{xpromo.PlatformMac, "/Hello.dmg", "dmg"},
	{xpromo.PlatformMac, "/Hello.pkg", "pkg"},
	{xpromo.PlatformMac, "/Hello.dmg.zip", "dmg"},
	{xpromo.PlatformMac, "/Hello.pkg.zip", "pkg"},
	{xpromo.PlatformWin, "/Hello.exe", "pe"},
	{xpromo.PlatformWin, "/Hello.msi", "msi"},
	{xpromo.PlatformWin, "/Hello.msix", "msix"},
	{xpromo.PlatformWin, "/Hello.exe.zip", "pe"},
	{xpromo.PlatformWin, "/Hello.msi.zip", "msi"},
	{xpromo.PlatformWin, "/Hello.msix.zip", "msix"},
}

// matrixReasons is what the gate's package checks (bundle_match, then
// signed) record for a variant of a format: nil for a package that passes.
func matrixReasons(platform xpromo.Platform, kind, variant string) []string {
	mac := platform == xpromo.PlatformMac
	switch variant {
	case variantGood:
		return nil
	case variantUnsigned:
		return []string{"gate_unsigned_binary"}
	case variantWrongSigner:
		return []string{"gate_untrusted_signer"}
	case variantRevoked:
		return []string{"gate_signature_revoked"}
	case variantUnnotarized:
		if mac {
			return []string{"gate_not_notarized"}
		}
	case variantMismatch:
		if kind == "zip" || kind == "dmg" {
			// a Mach-O's signing identifier is its bundle id: signed as the
			// declared one, not the registered one
			return []string{"gate_bundle_mismatch", "gate_signer_mismatch"}
		}
		return []string{"gate_bundle_mismatch"}
	case variantBomb:
		if kind == "dmg" {
			return []string{"gate_package_too_large", "gate_binary_unreadable"}
		}
	case variantAPFS:
		if kind == "dmg" {
			return []string{"gate_package_apfs_unsupported", "gate_binary_unreadable"}
		}
	}
	return nil // the variant does not apply: the good package
}

// Every format × variant the sandbox serves, through the gate's own
// package checks (gate.Inspect: pkgread.Unwrap for the zips, the readers,
// Match, the verifiers with the sandbox root, its ticket service and its
// revocation responder): approved for the good package, the variant's
// reason for each broken one.
func TestFetcherMatrix(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	const id = "com.acme.hello-world"
	variants := []string{variantGood, variantUnsigned, variantWrongSigner, variantRevoked, variantUnnotarized, variantMismatch, variantBomb, variantAPFS}
	for _, fm := range matrixFormats {
		for _, variant := range variants {
			host := "example.com"
			if variant != variantGood {
				host = variant + ".example.com"
			}
			t.Run(fmt.Sprintf("%s%s/%s", fm.platform, fm.path, host), func(t *testing.T) {
				t.Parallel()
				d := fetch(t, f, fm.platform, id, "https://"+host+fm.path)
				ins, err := gate.Inspect(context.Background(), d.Path, gate.InspectOptions{BundleID: id, Platform: fm.platform,
					Roots: s.Roots(), Notary: s.Notary(), Revocation: s.Revocation(), Now: s.now})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range ins.Checks {
					got = append(got, c.Reasons...)
				}
				want := matrixReasons(fm.platform, fm.kind, variant)
				if fmt.Sprint(got) != fmt.Sprint(want) || ins.Pass != (want == nil) {
					t.Fatalf("reasons %v (pass %v), want %v: %v", got, ins.Pass, want, ins.Details)
				}
				if ins.Package == nil || ins.Package.Format != fm.kind {
					t.Fatalf("read as %+v, want %s", ins.Package, fm.kind)
				}
				if nested := strings.HasSuffix(fm.path, ".zip") && fm.kind != "zip"; nested != (ins.Package.Container != "") {
					t.Fatalf("container %q", ins.Package.Container)
				}
			})
		}
	}
}

// The infected variant of each zip: the installer is stored, so the EICAR
// bytes inside it are in the download for any scanner.
func TestFetcherZipOfEachInfected(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	for _, fm := range matrixFormats {
		if !strings.HasSuffix(fm.path, ".zip") || fm.kind == "zip" {
			continue
		}
		d := fetch(t, f, fm.platform, "com.acme.hello-world", "https://infected.example.com"+fm.path)
		res, err := s.Scanner(nil).Scan(context.Background(), d)
		if err != nil || !res.Infected {
			t.Errorf("%s: %+v %v", fm.path, res, err)
		}
	}
}
