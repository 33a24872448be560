package sandbox

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/clamav"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
	"github.com/xpromo/xpromo/server/gate/pkgread"
	"github.com/xpromo/xpromo/server/gate/rdap"
)

func TestReserved(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"example.com", true},
		{"example.net", true},
		{"example.org", true},
		{"dl.example.com", true},
		{"a.b.c.example.org", true},
		{"EXAMPLE.COM.", true},
		{"Dl.Example.Net", true},
		{"acme.test", true},
		{"dl.acme.test", true},
		{"young.example", true},
		{"foo.EXAMPLE", true},
		{"example.com:8443", true},
		{"https://dl.example.com/app.zip", true},
		{"https://dl.example.com:443/app.zip?x=1", true},
		{"HTTPS://UNSIGNED.EXAMPLE.COM./a", true},
		{"dev@example.com", true},
		{"Dev@Sub.Example.Org", true},
		{"bounce@acme.test", true},
		{"ｅｘａｍｐｌｅ.com", true}, // full-width letters map to example.com (UTS #46), as a resolver would
		{"bücher.test", true}, // an IDN under .test
		{"xn--bcher-kva.example", true},

		{"", false},
		{"com", false},
		{"example.co", false},
		{"example.com.evil.org", false},
		{"notexample.com", false},
		{"myexample.com", false},
		{"example-com.org", false},
		{"example.comm", false},
		{"testing", false},
		{"contest", false},
		{"attest.org", false},
		{"exämple.com", false}, // an IDN that is not example.com
		{"https://example.com@evil.org/app.zip", false},
		{"https://evil.org/example.com", false},
		{"https://evil.org/?u=https://example.com", false},
		{"dev@evil.org", false},
		{"example.com@evil.org", false},
		{"127.0.0.1", false},
		{"[::1]:80", false},
		{"https://[::1]/app.zip", false},
		{"evil.org/.test", false},
		{"exa mple.com", false},
	} {
		if got := Reserved(c.in); got != c.want {
			t.Errorf("Reserved(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func FuzzReserved(f *testing.F) {
	for _, s := range []string{"example.com", "https://dl.example.com/app.zip", "dev@acme.test", "example.com.evil.org", "ｅｘａｍｐｌｅ.com", "[::1]", "a@b@example.net"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !Reserved(s) {
			return
		}
		// A reserved name stays reserved in every form it is given in.
		h, ok := hostOf(s)
		if !ok {
			t.Fatalf("Reserved(%q) but no host", s)
		}
		for _, form := range []string{h, strings.ToUpper(h), h + ".", "https://" + h + "/app.zip", "dev@" + h} {
			if !Reserved(form) {
				t.Fatalf("Reserved(%q) but not Reserved(%q)", s, form)
			}
		}
		// And is one of the reserved suffixes, however it was spelled.
		if !(h == "example" || h == "test" || strings.HasSuffix(h, ".example") || strings.HasSuffix(h, ".test") ||
			strings.HasSuffix("."+h, ".example.com") || strings.HasSuffix("."+h, ".example.net") || strings.HasSuffix("."+h, ".example.org")) {
			t.Fatalf("Reserved(%q): host %q", s, h)
		}
	})
}

var (
	sbOnce sync.Once
	sb     *Sandbox
)

// testSandbox is shared by the tests (its packages are cached).
func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	sbOnce.Do(func() {
		var err error
		sb, err = New(time.Now)
		if err != nil {
			panic(err)
		}
	})
	return sb
}

// recorder is a real counterpart stand-in that only records that it was
// asked: the sandbox must hand it every name that is not reserved.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) record(s string) { r.mu.Lock(); r.calls = append(r.calls, s); r.mu.Unlock() }

func (r *recorder) Fetch(ctx context.Context, fr gate.FetchRequest) (*gate.Download, error) {
	r.record(fr.URL)
	return nil, &gate.CheckError{Reason: "gate_download_failed", Err: errors.New("recorder")}
}

func (r *recorder) Scan(ctx context.Context, d *gate.Download) (clamav.Result, error) {
	r.record(d.URL)
	return clamav.Result{Signature: "recorder"}, nil
}

func (r *recorder) Check(ctx context.Context, hostOrURL string) rdap.Result {
	r.record(hostOrURL)
	return rdap.Result{Reason: "recorder"}
}

func (r *recorder) Send(ctx context.Context, m contact.Message) error {
	r.record(m.To)
	return nil
}

func fetch(t *testing.T, f gate.Fetcher, platform xpromo.Platform, bundleID, u string) *gate.Download {
	t.Helper()
	d, err := f.Fetch(context.Background(), gate.FetchRequest{URL: u, Platform: platform, BundleID: bundleID})
	if err != nil {
		t.Fatalf("Fetch(%s): %v", u, err)
	}
	t.Cleanup(func() { d.Close() })
	if !d.Sandbox || d.URL != u || d.FinalURL != u || d.Size == 0 || len(d.SHA256) != 64 {
		t.Fatalf("download %+v", d)
	}
	st, err := os.Stat(d.Path)
	if err != nil || st.Size() != d.Size {
		t.Fatalf("download file: %v %v", st, err)
	}
	return d
}

// check runs what the gate runs on a download: pkgread and Match, the
// signature verifier with the sandbox root, and the scanner.
type verdict struct {
	identity  *pkgread.Identity
	readErr   error // pkgread.Read or Match
	signErr   error
	signed    *codesign.Result
	infected  bool
	signature string
}

func check(t *testing.T, s *Sandbox, d *gate.Download, platform xpromo.Platform, bundleID string) verdict {
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
	ver := &codesign.Verifier{Roots: s.Roots()}
	switch {
	case v.identity != nil && v.identity.Format == pkgread.FormatMSI:
		v.signed, v.signErr = ver.VerifyMSI(ctx, f, d.Size)
	case v.identity != nil && v.identity.Format == pkgread.FormatDMG:
		v.signed, v.signErr = ver.VerifyDMGApp(ctx, f, d.Size)
	case platform == xpromo.PlatformWin:
		v.signed, v.signErr = ver.VerifyPE(ctx, f, d.Size)
	default:
		v.signed, v.signErr = ver.VerifyApp(ctx, f, d.Size)
	}
	res, err := s.Scanner(nil).Scan(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	v.infected, v.signature = res.Infected, res.Signature
	return v
}

func TestFetcherMagicValues(t *testing.T) {
	s := testSandbox(t)
	next := &recorder{}
	f := s.Fetcher(next)
	const id = "com.acme.hello-world"
	for _, p := range []xpromo.Platform{xpromo.PlatformMac, xpromo.PlatformWin} {
		t.Run(string(p), func(t *testing.T) {
			for _, host := range []string{"example.com", "dl.acme.test", "downloads.example.org"} {
				d := fetch(t, f, p, id, "https://"+host+"/app.zip")
				v := check(t, s, d, p, id)
				if v.readErr != nil || v.signErr != nil || v.infected {
					t.Fatalf("%s: good package: read %v, sign %v, infected %v", host, v.readErr, v.signErr, v.infected)
				}
				if p == xpromo.PlatformMac {
					if v.identity.AppPath != "HelloWorld.app" || !v.signed.Notarized || v.signed.TeamID != TeamID || !v.signed.HardenedRuntime {
						t.Fatalf("%+v %+v", v.identity, v.signed)
					}
				} else if v.identity.VersionInfo["InternalName"] != id || v.identity.VersionInfo["CompanyName"] != "xpromo sandbox" || v.signed.Kind != "authenticode" {
					t.Fatalf("%+v %+v", v.identity, v.signed)
				}
			}

			v := check(t, s, fetch(t, f, p, id, "https://unsigned.example.com/app"), p, id)
			if v.readErr != nil || codesign.ReasonOf(v.signErr) != codesign.ReasonUnsigned || v.infected {
				t.Fatalf("unsigned: %v %v", v.readErr, v.signErr)
			}

			v = check(t, s, fetch(t, f, p, id, "https://unnotarized.acme.test/app"), p, id)
			if p == xpromo.PlatformMac {
				if codesign.ReasonOf(v.signErr) != codesign.ReasonNotNotarized || v.signed == nil || v.signed.TeamID != TeamID {
					t.Fatalf("unnotarized: %v %+v", v.signErr, v.signed)
				}
			} else if v.signErr != nil {
				t.Fatalf("unnotarized on Windows is a good package: %v", v.signErr)
			}

			v = check(t, s, fetch(t, f, p, id, "https://infected.example.net/app"), p, id)
			if !v.infected || v.signature != EicarSignature || v.readErr != nil || v.signErr != nil {
				t.Fatalf("infected: %+v", v)
			}

			v = check(t, s, fetch(t, f, p, id, "https://mismatch.example.com/app"), p, id)
			if pkgread.ReasonOf(v.readErr) != pkgread.ReasonBundleMismatch || v.signErr != nil {
				t.Fatalf("mismatch: %v %v", v.readErr, v.signErr)
			}
			if v.identity.BundleIDs[0] != id+".mismatch" {
				t.Fatalf("mismatch declares %v", v.identity.BundleIDs)
			}

			v = check(t, s, fetch(t, f, p, id, "https://unreadable.example.com/app"), p, id)
			if pkgread.ReasonOf(v.readErr) != pkgread.ReasonPackageUnknownFormat || v.infected {
				t.Fatalf("unreadable: %v", v.readErr)
			}

			_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: "https://missing.example.com/app.zip", Platform: p, BundleID: id})
			var ce *gate.CheckError
			if !errors.As(err, &ce) || ce.Reason != "gate_download_failed" || ce.Transient {
				t.Fatalf("missing: %v", err)
			}
		})
	}
	if len(next.calls) != 0 {
		t.Fatalf("reserved names reached the real fetcher: %v", next.calls)
	}
}

func TestFetcherPassesOtherNamesOn(t *testing.T) {
	s := testSandbox(t)
	next := &recorder{}
	f := s.Fetcher(next)
	for _, u := range []string{"https://dl.acme.com/app.zip", "https://example.com.evil.org/app.zip", "https://example.com@evil.org/x", "http://127.0.0.1/app.zip"} {
		_, err := f.Fetch(context.Background(), gate.FetchRequest{URL: u, Platform: xpromo.PlatformMac, BundleID: "com.acme.x"})
		if err == nil || !strings.Contains(err.Error(), "recorder") {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if len(next.calls) != 4 {
		t.Fatalf("next got %v", next.calls)
	}
}

func TestScanner(t *testing.T) {
	s := testSandbox(t)
	ctx := context.Background()
	clean := fetch(t, s.Fetcher(nil), xpromo.PlatformMac, "com.acme.scan", "https://example.com/a.zip")

	// A download that is not the sandbox's goes to the real scanner, and
	// without one the scan did not happen (transient), never "clean".
	live := &gate.Download{URL: "https://dl.acme.com/a.zip", Path: clean.Path, Size: clean.Size}
	_, err := s.Scanner(nil).Scan(ctx, live)
	var ce *gate.CheckError
	if !errors.As(err, &ce) || ce.Reason != clamav.ReasonScannerUnavailable || !ce.Transient {
		t.Fatalf("no scanner: %v", err)
	}
	next := &recorder{}
	if res, err := s.Scanner(next).Scan(ctx, live); err != nil || res.Signature != "recorder" {
		t.Fatal(res, err)
	}
	// With a real scanner configured, sandbox downloads go to it too.
	if res, err := s.Scanner(next).Scan(ctx, clean); err != nil || res.Signature != "recorder" {
		t.Fatal(res, err)
	}
	if len(next.calls) != 2 {
		t.Fatal(next.calls)
	}

	// The built-in matcher finds the EICAR string across read boundaries.
	for _, at := range []int{0, 1, 64<<10 - 30, 64 << 10, 200_000} {
		b := append(bytes.Repeat([]byte{'a'}, at), eicar...)
		b = append(b, "tail"...)
		res, err := matchEICAR(ctx, &oneByOne{b: b, n: 64 << 10})
		if err != nil || !res.Infected {
			t.Fatalf("at %d: %+v %v", at, res, err)
		}
	}
	res, err := matchEICAR(ctx, bytes.NewReader(eicar[:len(eicar)-1]))
	if err != nil || res.Infected || res.Bytes != int64(len(eicar)-1) {
		t.Fatalf("a truncated EICAR string is clean: %+v %v", res, err)
	}
}

// oneByOne returns at most n bytes per Read.
type oneByOne struct {
	b []byte
	n int
}

func (r *oneByOne) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.b))
	copy(p, r.b[:k])
	r.b = r.b[k:]
	if len(r.b) == 0 {
		return k, io.EOF
	}
	return k, nil
}

// The sandbox root vouches for the sandbox's packages only: a package signed
// under another CA (another process's sandbox, or any other) is untrusted.
func TestRootsTrustOnlyTheSandbox(t *testing.T) {
	s := testSandbox(t)
	other, err := New(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []xpromo.Platform{xpromo.PlatformMac, xpromo.PlatformWin} {
		d := fetch(t, other.Fetcher(nil), p, "com.acme.other", "https://example.com/app")
		if v := check(t, s, d, p, "com.acme.other"); codesign.ReasonOf(v.signErr) != codesign.ReasonUntrustedSigner {
			t.Fatalf("%s: another sandbox's package with this root: %v", p, v.signErr)
		}
	}

	// A Developer ID-shaped signature under an unrelated root.
	root := fixture.NewRoot("Somebody's Root")
	dev := root.Issue(fixture.CertOptions{CommonName: "Developer ID Application: Somebody (TEAM000001)", OrgUnit: "TEAM000001",
		EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, DeveloperID: true})
	plist := fixture.InfoPlist("com.somebody.app", "Hello", false)
	exe := fixture.SignMachO(fixture.MachO(nil), dev, fixture.MachOSignOptions{InfoPlist: plist, Resources: codeResources, Runtime: true})
	z := fixture.Zip(
		fixture.File{Name: "Hello.app/Contents/Info.plist", Data: plist},
		fixture.File{Name: "Hello.app/Contents/MacOS/Hello", Data: exe, Mode: 0o100755},
		fixture.File{Name: "Hello.app/Contents/_CodeSignature/CodeResources", Data: codeResources},
		fixture.File{Name: "Hello.app/Contents/CodeResources", Data: ticket},
	)
	if _, err := (&codesign.Verifier{Roots: root.Pool()}).VerifyApp(ctx, bytes.NewReader(z), int64(len(z))); err != nil {
		t.Fatalf("the app verifies under its own root: %v", err)
	}
	_, err = (&codesign.Verifier{Roots: s.Roots()}).VerifyApp(ctx, bytes.NewReader(z), int64(len(z)))
	if codesign.ReasonOf(err) != codesign.ReasonUntrustedSigner {
		t.Fatalf("with the sandbox root: %v", err)
	}
	// And the other way round: the sandbox's package under that root.
	d := fetch(t, s.Fetcher(nil), xpromo.PlatformMac, "com.acme.other", "https://example.com/app")
	fz, _ := os.ReadFile(d.Path)
	if _, err := (&codesign.Verifier{Roots: root.Pool()}).VerifyApp(ctx, bytes.NewReader(fz), int64(len(fz))); codesign.ReasonOf(err) != codesign.ReasonUntrustedSigner {
		t.Fatalf("sandbox package under another root: %v", err)
	}
}

func TestPackageCacheIsBounded(t *testing.T) {
	c := newPackageCache(2)
	builds := 0
	get := func(id string) {
		if _, err := c.get(packageKey{xpromo.PlatformMac, id, "", pkgFormat{kind: formatApp}}, func() ([]byte, error) { builds++; return []byte(id), nil }); err != nil {
			t.Fatal(err)
		}
	}
	get("a")
	get("a")
	get("b")
	get("c") // forgets a
	get("b")
	get("a")
	if builds != 4 || len(c.m) != 2 || len(c.order) != 2 {
		t.Fatalf("builds %d, cached %d", builds, len(c.m))
	}
}

func TestDomains(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	s, err := New(func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	next := &recorder{}
	d := s.Domains(next)
	ctx := context.Background()

	for _, h := range []string{"example.com", "https://dl.example.com/app.zip", "acme.test", "dl.acme.example", "young.example.com"} {
		r := d.Check(ctx, h)
		if !r.Passed() || !r.RegisteredAt.Equal(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) || !strings.HasPrefix(r.URL, rdapBase+"domain/") {
			t.Fatalf("%s: %+v", h, r)
		}
	}
	for _, h := range []string{"young.test", "https://dl.young.example/app.zip", "YOUNG.TEST."} {
		r := d.Check(ctx, h)
		if r.Reason != rdap.ReasonDomainTooYoung || !r.RegisteredAt.Equal(now.AddDate(0, 0, -30)) ||
			!r.EligibleAt.Equal(now.AddDate(0, 0, -30).AddDate(0, 6, 0)) || r.Retryable() {
			t.Fatalf("%s: %+v", h, r)
		}
	}
	for _, h := range []string{"unknown.test", "https://dl.unknown.example/"} {
		if r := d.Check(ctx, h); r.Reason != rdap.ReasonDomainUnknown || r.Retryable() {
			t.Fatalf("%s: %+v", h, r)
		}
	}
	if len(next.calls) != 0 {
		t.Fatal(next.calls)
	}
	for _, h := range []string{"acme.com", "https://example.com.evil.org/"} {
		if r := d.Check(ctx, h); r.Reason != "recorder" {
			t.Fatalf("%s: %+v", h, r)
		}
	}
	if len(next.calls) != 2 {
		t.Fatal(next.calls)
	}
}

func TestMailer(t *testing.T) {
	s, err := New(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	links := make(chan string, 4)
	next := &recorder{}
	m := s.Mailer(next, func(ctx context.Context, link string) error { links <- link; return nil })
	ctx := context.Background()
	link := "https://api.acme.test/v1/contact/verify?token=" + strings.Repeat("Ab_-", 11)
	text := "Hello,\n\nopen this link:\n\n  " + link + "\n\nor enter 123456. Ünïcödé = fine.\n" + strings.Repeat("a long line ", 20) + "\n"

	if err := m.Send(ctx, contact.Message{To: "dev@example.com", Subject: "Confirm \"Héllo\"", Text: text}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-links:
		if got != link {
			t.Fatalf("followed %q, want %q", got, link)
		}
		if u, _ := url.Parse(got); u.Query().Get("token") == "" {
			t.Fatal(got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the inbox never followed the link")
	}

	err = m.Send(ctx, contact.Message{To: "bounce@acme.test", Subject: "x", Text: text})
	if !errors.Is(err, contact.ErrUndeliverable) || contact.ReasonFor(err) != contact.ReasonContactUndeliverable {
		t.Fatalf("bounce: %v", err)
	}
	if err := m.Send(ctx, contact.Message{To: "unverified@example.org", Subject: "x", Text: text}); err != nil {
		t.Fatal(err)
	}
	if err := m.Send(ctx, contact.Message{To: "dev@acme.com", Subject: "x", Text: text}); err != nil {
		t.Fatal(err)
	}
	if len(next.calls) != 1 || next.calls[0] != "dev@acme.com" {
		t.Fatal(next.calls)
	}
	// Close waits for the inbox; "unverified" was never answered.
	s.Close()
	select {
	case l := <-links:
		t.Fatalf("unverified@ was answered: %s", l)
	default:
	}
	if err := m.Send(ctx, contact.Message{To: "dev@example.com", Subject: "x", Text: text}); !errors.Is(err, contact.ErrMailUnavailable) {
		t.Fatalf("after Close: %v", err)
	}
}

// A Windows download_url ending in .msi gets a signed MSI, through the same
// readers and verifiers, bound to its signer as the gate binds it.
func TestFetcherMSI(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	const id = "com.acme.hello-world"
	w := xpromo.PlatformWin
	v := check(t, s, fetch(t, f, w, id, "https://example.com/downloads/Hello.MSI"), w, id)
	if v.readErr != nil || v.signErr != nil || v.infected || v.identity.Format != pkgread.FormatMSI {
		t.Fatalf("good MSI: read %v, sign %v, infected %v, %+v", v.readErr, v.signErr, v.infected, v.identity)
	}
	if v.identity.Publisher != "xpromo sandbox" || v.signed.SignerOrganization != "xpromo sandbox" {
		t.Fatalf("%+v %+v", v.identity, v.signed)
	}
	if d := gate.BindSigner(v.signed, v.identity, id); d != "" {
		t.Fatalf("the sandbox MSI does not bind to its signer: %s", d)
	}
	v = check(t, s, fetch(t, f, w, id, "https://unsigned.example.com/Hello.msi"), w, id)
	if v.readErr != nil || codesign.ReasonOf(v.signErr) != codesign.ReasonUnsigned {
		t.Fatalf("unsigned MSI: %v %v", v.readErr, v.signErr)
	}
	v = check(t, s, fetch(t, f, w, id, "https://infected.example.com/Hello.msi"), w, id)
	if v.readErr != nil || v.signErr != nil || !v.infected {
		t.Fatalf("infected MSI: %v %v %v", v.readErr, v.signErr, v.infected)
	}
	v = check(t, s, fetch(t, f, w, id, "https://mismatch.example.com/Hello.msi"), w, id)
	if pkgread.ReasonOf(v.readErr) != pkgread.ReasonBundleMismatch || v.signErr != nil {
		t.Fatalf("mismatched MSI: %v %v", v.readErr, v.signErr)
	}
	// A sandbox MSI verifies against the sandbox root only.
	d := fetch(t, f, w, id, "https://example.com/Hello.msi")
	file, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	other, err := New(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&codesign.Verifier{Roots: other.Roots()}).VerifyMSI(context.Background(), file, d.Size)
	if codesign.ReasonOf(err) != codesign.ReasonUntrustedSigner {
		t.Fatalf("another sandbox's root: %v", err)
	}
}

// A macOS download_url ending in .dmg gets a UDIF disk image of an HFS+
// volume holding the app, through the same readers and verifiers.
func TestFetcherDMG(t *testing.T) {
	s := testSandbox(t)
	f := s.Fetcher(nil)
	const id = "com.acme.hello-world"
	m := xpromo.PlatformMac
	v := check(t, s, fetch(t, f, m, id, "https://example.com/downloads/Hello.DMG"), m, id)
	if v.readErr != nil || v.signErr != nil || v.infected || v.identity.Format != pkgread.FormatDMG {
		t.Fatalf("good dmg: read %v, sign %v, infected %v, %+v", v.readErr, v.signErr, v.infected, v.identity)
	}
	if v.identity.AppPath != "HelloWorld.app" || v.identity.DMG.Filesystem != "hfs+" || !v.signed.Notarized || v.signed.NotarySource != "stapled-dmg" || v.signed.TeamID != TeamID {
		t.Fatalf("%+v %+v %+v", v.identity, v.identity.DMG, v.signed)
	}
	for _, c := range []struct {
		host         string
		read, sign   string
		wantInfected bool
	}{
		{"unsigned", "", string(codesign.ReasonUnsigned), false},
		{"unnotarized", "", string(codesign.ReasonNotNotarized), false},
		{"infected", "", "", true},
		{"mismatch", string(pkgread.ReasonBundleMismatch), "", false},
		{"bomb", string(pkgread.ReasonPackageTooLarge), string(codesign.ReasonBinaryUnreadable), false},
		{"apfs", string(pkgread.ReasonAPFSUnsupported), string(codesign.ReasonBinaryUnreadable), false},
	} {
		v := check(t, s, fetch(t, f, m, id, "https://"+c.host+".example.com/Hello.dmg"), m, id)
		if string(pkgread.ReasonOf(v.readErr)) != c.read || string(codesign.ReasonOf(v.signErr)) != c.sign || v.infected != c.wantInfected {
			t.Errorf("%s: read %v, sign %v, infected %v", c.host, v.readErr, v.signErr, v.infected)
		}
	}
}
