package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto"
	"encoding/binary"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sassoftware/relic/v7/lib/authenticode"
	"github.com/sassoftware/relic/v7/lib/binpatch"
	"github.com/sassoftware/relic/v7/lib/certloader"
	"github.com/sassoftware/relic/v7/lib/fruit/csblob"
	"github.com/sassoftware/relic/v7/lib/fruit/machos"
	"howett.net/plist"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// Variants of a sandbox package: the first label of the download host.
// Any other label (example.com's "example", "dl") is a good package.
const (
	variantGood        = ""
	variantUnsigned    = "unsigned"    // no signature: gate_unsigned_binary
	variantUnnotarized = "unnotarized" // macOS: signed, no ticket: gate_not_notarized
	variantInfected    = "infected"    // carries the EICAR test file: gate_malware_found
	variantMismatch    = "mismatch"    // declares <bundle_id>.mismatch: gate_bundle_mismatch
	variantUnreadable  = "unreadable"  // an HTML page: gate_package_unknown_format
	variantMissing     = "missing"     // 404: gate_download_failed
	// .dmg only (a download_url ending in .dmg); other formats build the
	// good package for them.
	variantBomb = "bomb" // a chunk decoding to 80 MiB of zeros: gate_package_too_large
	variantAPFS = "apfs" // an APFS volume: gate_package_apfs_unsupported
	// variantWrongSigner: every format signed by a certificate of the
	// wrong kind (pki.signersFor): a .pkg by the Developer ID Application
	// leaf, the zipped app's Mach-O, the .dmg's image, the .exe, .msi and
	// .msix by the Developer ID Installer leaf: gate_untrusted_signer.
	variantWrongSigner = "wrongsigner"
	// variantRevoked: every format, signed (and, for macOS, notarised) by
	// a leaf the sandbox's OCSP responder and CRL report revoked
	// (keyCompromise): gate_signature_revoked.
	variantRevoked = "revoked"
)

func variantOf(hostOrURL string) string {
	switch l := firstLabel(hostOrURL); l {
	case variantUnsigned, variantUnnotarized, variantInfected, variantMismatch, variantUnreadable, variantMissing, variantWrongSigner, variantRevoked:
		return l
	case variantBomb, variantAPFS:
		return l
	}
	return variantGood
}

// eicar is the EICAR anti-virus test file (eicar.org): harmless, and found
// by every scanner. It is joined at run time so that this source file is
// not itself reported by a scanner.
var eicar = []byte(`X5O!P%@AP[4\PZX54(P^)7CC)7}$` + `EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`)

// codeResources is the bundle's _CodeSignature/CodeResources (the sealed
// resources; the sandbox app has none besides its executable and
// Info.plist, which the signature binds directly).
var codeResources = []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict><key>files</key><dict/><key>files2</key><dict/></dict></plist>
`)

// ticket stands for a stapled notarisation ticket: stapler writes Apple's
// ticket to Contents/CodeResources; its content is Apple's and unchecked.
var ticket = []byte("s8ChAAAA xpromo sandbox notarisation ticket (test mode)\n")

const unreadablePage = `<!DOCTYPE html>
<html><head><title>Download</title></head>
<body><p>This is a web page, not an app package (xpromo sandbox: unreadable.*).</p></body></html>
`

// appName derives a bundle name from a bundle id: "com.acme.hello-world"
// → "HelloWorld".
func appName(bundleID string) string {
	last := bundleID[strings.LastIndexByte(bundleID, '.')+1:]
	var b strings.Builder
	up := true
	for _, r := range last {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "App"
	}
	return b.String()
}

// build makes the package for platform, bundleID, variant (not
// variantMissing) and format (formatOf).
func (s *Sandbox) build(platform xpromo.Platform, bundleID, variant string, format pkgFormat) ([]byte, error) {
	if variant == variantUnreadable {
		return []byte(unreadablePage), nil
	}
	if format.zipped {
		inner, err := s.build(platform, bundleID, variant, pkgFormat{kind: format.kind})
		if err != nil {
			return nil, err
		}
		// One entry at the root, named like a real download; stored, as
		// the installer is compressed already (and so that any scanner
		// sees the infected one's EICAR bytes).
		return zipOf([]zipFile{{name: appName(bundleID) + "-1.0." + format.kind, data: inner, store: true}})
	}
	declared := bundleID
	if variant == variantMismatch {
		declared += ".mismatch"
	}
	name := appName(bundleID)
	switch format.kind {
	case formatEXE:
		return s.windowsPackage(declared, name, variant)
	case formatMSI:
		return s.msiPackage(declared, name, variant)
	case formatMSIX:
		return s.msixPackage(declared, name, variant)
	case formatDMG:
		return s.notarise(variant)(s.dmgPackage(declared, name, variant))
	case formatPKG:
		return s.notarise(variant)(s.pkgPackage(declared, name, variant))
	}
	return s.notarise(variant)(s.macPackage(declared, name, variant))
}

// macPackage is a zipped <name>.app: Info.plist, a small Mach-O main
// executable signed with the Developer ID-shaped leaf (Info.plist and
// CodeResources bound, hardened runtime), and a stapled ticket.
func (s *Sandbox) macPackage(bundleID, name, variant string) ([]byte, error) {
	var signer *certloader.Certificate
	if variant != variantUnsigned {
		signer = s.pki.signersFor(variant).developer
	}
	files, err := s.macApp(bundleID, name, variant, signer, variant != variantUnnotarized)
	if err != nil {
		return nil, err
	}
	return zipOf(files)
}

// macApp is the files of the sandbox's <name>.app for variant (its
// Info.plist names it, so that each variant's code directory, the
// notarisation record's name, is its own), signed by signer unless it is
// nil, with a ticket stapled to it when staple.
func (s *Sandbox) macApp(bundleID, name, variant string, signer *certloader.Certificate, staple bool) ([]zipFile, error) {
	info, err := plist.MarshalIndent(map[string]any{
		"CFBundleIdentifier":            bundleID,
		"CFBundleExecutable":            name,
		"CFBundleName":                  name,
		"CFBundlePackageType":           "APPL",
		"CFBundleShortVersionString":    "1.0.0",
		"CFBundleVersion":               "1",
		"CFBundleInfoDictionaryVersion": "6.0",
		"LSMinimumSystemVersion":        "11.0",
		// The appcast the scoring job reads release cadence from, answered
		// by the reputation sandbox (server/reputation/sandbox).
		"SUFeedURL": FeedURL(bundleID),
		// Each variant's own bytes, so its signature (and the notarisation
		// record named after it) is its own.
		"XPromoSandboxVariant": variant,
	}, plist.XMLFormat, "\t")
	if err != nil {
		return nil, err
	}
	exe := fixture.MachO(nil)
	app := name + ".app/Contents/"
	files := []zipFile{{name: app + "Info.plist", data: info}}
	if signer != nil {
		if exe, err = signMachO(exe, signer, info); err != nil {
			return nil, err
		}
		files = append(files, zipFile{name: app + "_CodeSignature/CodeResources", data: codeResources})
		if staple {
			files = append(files, zipFile{name: app + "CodeResources", data: ticket})
		}
	}
	files = append(files, zipFile{name: app + "MacOS/" + name, data: exe, mode: 0o755})
	if variant == variantInfected {
		files = append(files, zipFile{name: app + "Resources/eicar.com", data: eicar, store: true})
	}
	return files, nil
}

// windowsPackage is a PE executable with a VERSIONINFO resource
// (InternalName = bundle id), Authenticode-signed with the sandbox's
// code-signing leaf. The infected variant carries the EICAR file as
// overlay data (after the last section, covered by the signature).
func (s *Sandbox) windowsPackage(bundleID, name, variant string) ([]byte, error) {
	exe := fixture.PE(map[string]string{
		"InternalName":     bundleID,
		"ProductName":      name,
		"CompanyName":      "xpromo sandbox",
		"FileDescription":  name + " (xpromo sandbox test package)",
		"OriginalFilename": name + ".exe",
	})
	if variant == variantInfected {
		exe = append(exe, eicar...)
	}
	if variant == variantUnsigned {
		return exe, nil
	}
	return signPE(exe, s.pki.signersFor(variant).windows)
}

// pkgFormat is the package a sandbox download serves (formatOf).
type pkgFormat struct {
	kind   string // formatApp, formatDMG, formatPKG (macOS); formatEXE, formatMSI, formatMSIX (Windows)
	zipped bool   // wrapped in a zip: one entry at its root, <Name>-1.0.<kind>
}

// The package kinds.
const (
	formatApp  = "app" // macOS's default: a zipped <Name>.app
	formatDMG  = "dmg" // a UDIF disk image of an HFS+ volume holding the app
	formatPKG  = "pkg" // a flat installer package
	formatEXE  = "exe" // Windows's default: a PE executable
	formatMSI  = "msi"
	formatMSIX = "msix" // .msix or .appx
)

// formatOf is the package a download URL asks for on platform, by the end
// of its path (any case): .dmg or .pkg (macOS), .exe, .msi, .msix or .appx
// (Windows) is that package, and the same followed by .zip
// (Snip-1.0.dmg.zip) is that package in a zip, as pkgread.Unwrap opens
// it. Anything else — a plain .zip, no extension, a package of the other
// platform — is the platform's default: the zipped .app (macOS; any
// platform but Windows), the PE (Windows).
func formatOf(platform xpromo.Platform, rawURL string) pkgFormat {
	win := platform == xpromo.PlatformWin
	def := pkgFormat{kind: formatApp}
	if win {
		def.kind = formatEXE
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return def
	}
	p := strings.ToLower(u.Path)
	zipped := strings.HasSuffix(p, ".zip")
	p = strings.TrimSuffix(p, ".zip")
	var kind string
	switch ext := path.Ext(p); {
	case win && ext == ".exe":
		kind = formatEXE
	case win && ext == ".msi":
		kind = formatMSI
	case win && (ext == ".msix" || ext == ".appx"):
		kind = formatMSIX
	case !win && ext == ".dmg":
		kind = formatDMG
	case !win && ext == ".pkg":
		kind = formatPKG
	default:
		return def
	}
	return pkgFormat{kind: kind, zipped: zipped}
}

// dmgPackage is a UDIF disk image (zlib chunks, zero chunks for the empty
// blocks, as hdiutil's UDZO) of an HFS+ volume holding the same <name>.app
// as macPackage's zip and an "Applications" symbolic link. The notarisation
// ticket is stapled to the image (its signature superblob's ticket slot),
// as `stapler staple app.dmg` does, not to the app; the image is signed
// (relic's DMG signer) by the same Developer ID-shaped leaf as the app
// (wrongsigner: the image by the installer leaf, its app as the good one).
func (s *Sandbox) dmgPackage(bundleID, name, variant string) ([]byte, error) {
	if variant == variantAPFS {
		nx := make([]byte, 64<<10)
		copy(nx[32:], "NXSB")
		return fixture.UDIF(nil, fixture.UDIFPartition{Name: "disk image (Apple_APFS : 1)", Data: nx}), nil
	}
	// The app: unsigned, or signed by the revoked leaf, or else by the good
	// one; never stapled (the ticket goes on the image).
	var signer *certloader.Certificate
	switch variant {
	case variantUnsigned:
	case variantRevoked:
		signer = s.pki.revoked.developer
	default:
		signer = s.pki.developer
	}
	files, err := s.macApp(bundleID, name, variant, signer, false)
	if err != nil {
		return nil, err
	}
	if variant == variantInfected {
		files = append(files, zipFile{name: name + ".app/Contents/Resources/eicar.com", data: eicar})
	}
	vol := []fixture.HFSFile{{Name: "Applications", Data: []byte("/Applications"), Mode: 0o120755}}
	for _, f := range files {
		mode := uint16(0o100644)
		if f.mode != 0 {
			mode = 0o100000 | uint16(f.mode)
		}
		vol = append(vol, fixture.HFSFile{Name: f.name, Data: f.data, Mode: mode})
	}
	part := fixture.UDIFPartition{Name: "disk image (Apple_HFS : 1)", Data: fixture.HFSPlus(name, vol...)}
	switch variant {
	case variantBomb:
		part.Bomb = 80 << 20
	case variantInfected: // stored, so that any scanner sees the EICAR bytes
		part.Chunk = func(int, []byte) uint32 { return fixture.ChunkRaw }
	}
	img := fixture.UDIF(nil,
		fixture.UDIFPartition{Name: "Protective Master Boot Record (MBR : 0)", Data: make([]byte, 512)},
		part)
	switch variant {
	case variantUnsigned:
		return img, nil
	case variantUnnotarized:
		return fixture.SignDMGWith(img, s.pki.developer, nil), nil
	}
	return fixture.SignDMGWith(img, s.pki.signersFor(variant).developer, ticket), nil
}

// msiPackage is an MSI database whose ProductName is the bundle id and
// Manufacturer the signer's organisation, Authenticode-signed in-process:
// the digest by codesign.DigestMSI (the verifier's own, which is held to
// osslsigncode's in its tests), the PKCS#7 by relic, stored in
// \x05DigitalSignature. infected adds the EICAR file as a stream.
func (s *Sandbox) msiPackage(bundleID, name, variant string) ([]byte, error) {
	props := map[string]string{
		"ProductName":    bundleID,
		"Manufacturer":   "xpromo sandbox",
		"ProductVersion": "1.0.0",
		"ProductCode":    "{5A4D5A4D-0000-4000-8000-000000000001}",
		"UpgradeCode":    "{5A4D5A4D-0000-4000-8000-000000000002}",
	}
	extra := map[string][]byte{}
	if variant == variantInfected {
		extra["eicar.com"] = eicar
	}
	unsigned := fixture.MSIWithStreams(props, extra)
	if variant == variantUnsigned {
		return unsigned, nil
	}
	digest, err := codesign.DigestMSI(context.Background(), bytes.NewReader(unsigned), int64(len(unsigned)), crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("sandbox: digesting the MSI: %w", err)
	}
	sig, err := authenticode.SignMSIImprint(context.Background(), digest, crypto.SHA256, s.pki.signersFor(variant).windows, &authenticode.OpusParams{Description: name + " (xpromo sandbox test package)"})
	if err != nil {
		return nil, fmt.Errorf("sandbox: signing the MSI: %w", err)
	}
	extra["\x05DigitalSignature"] = sig.Raw
	return fixture.MSIWithStreams(props, extra), nil
}

// signMachO signs a thin Mach-O in-process with relic's signer, as codesign
// does on a Mac, binding infoPlist and codeResources.
func signMachO(exe []byte, cert *certloader.Certificate, infoPlist []byte) ([]byte, error) {
	params := &csblob.SignatureParams{
		HashFunc:  crypto.SHA256,
		InfoPlist: infoPlist,
		Resources: codeResources,
		Flags:     csblob.FlagRuntime, // the hardened runtime notarisation requires
	}
	patch, _, err := machos.Sign(context.Background(), bytes.NewReader(exe), cert, params)
	if err != nil {
		return nil, fmt.Errorf("sandbox: signing the Mach-O: %w", err)
	}
	return applyPatch(exe, patch)
}

// signPE Authenticode-signs a PE image in-process with relic (SHA-256
// digest, page hashes), then fixes the PE checksum as signtool does.
func signPE(exe []byte, cert *certloader.Certificate) ([]byte, error) {
	digest, err := authenticode.DigestPE(bytes.NewReader(exe), crypto.SHA256, true)
	if err != nil {
		return nil, fmt.Errorf("sandbox: digesting the PE: %w", err)
	}
	patch, _, err := digest.Sign(context.Background(), cert, &authenticode.OpusParams{Description: "xpromo sandbox test package"})
	if err != nil {
		return nil, fmt.Errorf("sandbox: signing the PE: %w", err)
	}
	out, err := applyPatch(exe, patch)
	if err != nil {
		return nil, err
	}
	peStart := int(binary.LittleEndian.Uint32(out[0x3c:]))
	ck := authenticode.NewPEChecksum(peStart)
	ck.Write(out)
	copy(out[peStart+88:], ck.Sum(nil))
	return out, nil
}

// applyPatch applies relic's patch set in memory (relic's own Apply works
// on files).
func applyPatch(in []byte, p *binpatch.PatchSet) ([]byte, error) {
	idx := make([]int, len(p.Patches))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.Patches[idx[a]].Offset < p.Patches[idx[b]].Offset })
	var out []byte
	pos := int64(0)
	for _, i := range idx {
		h := p.Patches[i]
		if h.Offset < pos || h.Offset+int64(h.OldSize) > int64(len(in)) {
			return nil, fmt.Errorf("sandbox: signer patch out of range (%d+%d of %d)", h.Offset, h.OldSize, len(in))
		}
		out = append(out, in[pos:h.Offset]...)
		out = append(out, p.Blobs[i]...)
		pos = h.Offset + int64(h.OldSize)
	}
	return append(out, in[pos:]...), nil
}

type zipFile struct {
	name  string
	data  []byte
	mode  uint32 // permission bits; 0 means 0644
	store bool   // stored uncompressed (the EICAR file, so any scanner sees its bytes)
}

func zipOf(files []zipFile) ([]byte, error) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if f.store {
			h.Method = zip.Store
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		h.CreatorVersion = 3 << 8 // unix, so the mode bits count
		h.ExternalAttrs = (0o100000 | mode) << 16
		fw, err := w.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := fw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxPackages bounds the package cache (a package is a few KiB).
const maxPackages = 256

type packageKey struct {
	platform xpromo.Platform
	bundleID string
	variant  string
	format   pkgFormat
}

// packageCache keeps built packages, forgetting the oldest beyond max.
// Building under the lock means one build per key.
type packageCache struct {
	mu    sync.Mutex
	max   int
	m     map[packageKey][]byte
	order []packageKey
}

func newPackageCache(max int) *packageCache {
	return &packageCache{max: max, m: map[packageKey][]byte{}}
}

func (c *packageCache) get(k packageKey, build func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.m[k]; ok {
		return b, nil
	}
	b, err := build()
	if err != nil {
		return nil, err
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = b
	c.order = append(c.order, k)
	return b, nil
}

// FeedURL is the SUFeedURL of the sandbox's macOS package for bundleID: a
// reserved host, whose appcast the reputation sandbox serves.
func FeedURL(bundleID string) string {
	return "https://appcast.example.com/" + url.PathEscape(bundleID) + ".xml"
}
