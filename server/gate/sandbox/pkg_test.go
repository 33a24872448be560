package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/notary"
	"github.com/xpromo/xpromo/server/gate/pkgread"
)

// verifyPKG runs what the gate runs on a .pkg download: pkgread and Match,
// VerifyPKG with the sandbox root, the scanner.
func verifyPKG(t *testing.T, s *Sandbox, d *gate.Download, bundleID string) verdict {
	t.Helper()
	ctx := context.Background()
	var v verdict
	v.identity, v.readErr = pkgread.Reader{}.ReadFile(ctx, d.Path)
	if v.readErr == nil {
		v.readErr = pkgread.Match(v.identity, bundleID)
	}
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v.signed, v.signErr = (&codesign.Verifier{Roots: s.Roots()}).VerifyPKG(ctx, f, d.Size)
	res, err := s.Scanner(nil).Scan(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	v.infected = res.Infected
	return v
}

// A macOS download_url ending in .pkg gets a signed, stapled flat package.
func TestFetcherPKG(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	const id = "com.acme.hello-world"
	m := xpromo.PlatformMac
	v := verifyPKG(t, s, fetch(t, f, m, id, "https://example.com/downloads/Hello.pkg"), id)
	if v.readErr != nil || v.signErr != nil || v.infected || v.identity.Format != pkgread.FormatPKG || v.identity.BundleIDs[0] != id {
		t.Fatalf("good pkg: read %v, sign %v, infected %v, %+v", v.readErr, v.signErr, v.infected, v.identity)
	}
	if !v.signed.Notarized || v.signed.TeamID != TeamID || v.signed.Kind != "pkg" {
		t.Fatalf("%+v", v.signed)
	}
	if d := gate.BindSigner(v.signed, v.identity, id); d != "" {
		t.Fatalf("the sandbox pkg does not bind: %s", d)
	}
	for host, want := range map[string]codesign.Reason{
		"unsigned":    codesign.ReasonUnsigned,
		"unnotarized": codesign.ReasonNotNotarized,
		"wrongsigner": codesign.ReasonUntrustedSigner,
	} {
		v := verifyPKG(t, s, fetch(t, f, m, id, "https://"+host+".example.com/Hello.pkg"), id)
		if v.readErr != nil || codesign.ReasonOf(v.signErr) != want {
			t.Fatalf("%s: read %v, sign %v, want %s", host, v.readErr, v.signErr, want)
		}
	}
	v = verifyPKG(t, s, fetch(t, f, m, id, "https://infected.example.com/Hello.pkg"), id)
	if v.readErr != nil || v.signErr != nil || !v.infected {
		t.Fatalf("infected pkg: %v %v %v", v.readErr, v.signErr, v.infected)
	}
	v = verifyPKG(t, s, fetch(t, f, m, id, "https://mismatch.example.com/Hello.pkg"), id)
	if pkgread.ReasonOf(v.readErr) != pkgread.ReasonBundleMismatch || v.signErr != nil {
		t.Fatalf("mismatched pkg: %v %v", v.readErr, v.signErr)
	}
	// Not .pkg: the zipped app, as before.
	v = verifyPKG(t, s, fetch(t, f, m, id, "https://example.com/Hello.zip"), id)
	if v.identity.Format != pkgread.FormatZip {
		t.Fatalf("%+v", v.identity)
	}
}

// A Windows download_url ending in .msix gets a signed MSIX whose
// manifest Publisher is its signer.
func TestFetcherMSIX(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	const id = "com.acme.hello-world"
	w := xpromo.PlatformWin
	verify := func(u string) verdict {
		t.Helper()
		d := fetch(t, f, w, id, u)
		ctx := context.Background()
		var v verdict
		v.identity, v.readErr = pkgread.Reader{}.ReadFile(ctx, d.Path)
		if v.readErr == nil {
			v.readErr = pkgread.Match(v.identity, id)
		}
		file, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		v.signed, v.signErr = (&codesign.Verifier{Roots: s.Roots()}).VerifyMSIX(ctx, file, d.Size)
		res, err := s.Scanner(nil).Scan(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		v.infected = res.Infected
		return v
	}
	v := verify("https://example.com/Hello.msix")
	if v.readErr != nil || v.signErr != nil || v.infected || v.identity.Format != pkgread.FormatMSIX {
		t.Fatalf("good msix: read %v, sign %v, infected %v, %+v", v.readErr, v.signErr, v.infected, v.identity)
	}
	if d := gate.BindSigner(v.signed, v.identity, id); d != "" {
		t.Fatalf("the sandbox MSIX does not bind: %s", d)
	}
	if v := verify("https://unsigned.example.com/Hello.appx"); v.readErr != nil || codesign.ReasonOf(v.signErr) != codesign.ReasonUnsigned {
		t.Fatalf("unsigned msix: %v %v", v.readErr, v.signErr)
	}
	if v := verify("https://infected.example.com/Hello.msix"); v.readErr != nil || v.signErr != nil || !v.infected {
		t.Fatalf("infected msix: %v %v %v", v.readErr, v.signErr, v.infected)
	}
	if v := verify("https://mismatch.example.com/Hello.msix"); pkgread.ReasonOf(v.readErr) != pkgread.ReasonBundleMismatch || v.signErr != nil {
		t.Fatalf("mismatched msix: %v %v", v.readErr, v.signErr)
	}
}

// The sandbox's ticket service knows the packages it notarised: the good
// app and .pkg are found by the record name the gate computes, the
// unnotarized ones are not.
func TestNotary(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	n := s.Notary()
	m := xpromo.PlatformMac
	for _, c := range []struct {
		url   string
		found bool
	}{
		{"https://example.com/Hello.pkg", true},
		{"https://example.com/Hello.zip", true},
		{"https://unnotarized.example.com/Hello.pkg", false},
		{"https://unnotarized.example.com/Hello.zip", false},
	} {
		d := fetch(t, f, m, "com.acme.hello", c.url)
		file, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		v := &codesign.Verifier{Roots: s.Roots()}
		var res *codesign.Result
		if strings.HasSuffix(c.url, ".pkg") {
			res, _ = v.VerifyPKG(context.Background(), file, d.Size)
		} else {
			res, _ = v.VerifyApp(context.Background(), file, d.Size)
		}
		file.Close()
		if res == nil {
			t.Fatalf("%s does not verify", c.url)
		}
		a, err := n.Lookup(context.Background(), notary.RecordName(notary.DigestType(res.DigestAlgorithm), res.CDHashes[0]))
		if err != nil || a.Found != c.found {
			t.Fatalf("%s: %+v %v, want found %v", c.url, a, err, c.found)
		}
	}
}
