package pkgread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xpromo/xpromo/server/apperr"
)

// Reason is a stable code saying why a package's identity could not be
// established. The strings are part of the gate's public reason catalogue.
type Reason string

const (
	// ReasonPackageUnknownFormat: the bytes are none of the formats below
	// (an HTML error page, a tarball, a Linux binary, ...).
	ReasonPackageUnknownFormat Reason = "gate_package_unknown_format"
	// ReasonPackageUnreadable: a known format that is damaged, truncated, or
	// uses a part this reader cannot read (the filesystem inside a .dmg).
	ReasonPackageUnreadable Reason = apperr.GatePackageUnreadable
	// ReasonPackageTooLarge: a limit was hit (entry count, a file to read
	// larger than its bound, a zip central directory, a PE resource tree,
	// a compound file's FAT); the package is not read further.
	ReasonPackageTooLarge Reason = apperr.GatePackageTooLarge
	// ReasonPackageTooDeep: a structure nests deeper than Limits.MaxDepth
	// (a plist, an XML manifest or TOC, a PE resource tree, compound-file
	// storages), or refers back into itself (a binary plist cycle).
	ReasonPackageTooDeep Reason = apperr.GatePackageTooDeep
	// ReasonBundleIDMissing: the package was read but declares no identity
	// (a zip without an .app, a PE without version info, ...).
	ReasonBundleIDMissing Reason = "gate_bundle_id_missing"
	// ReasonBundleMismatch: the package declares identifiers, none of which
	// is the app's declared bundle_id (returned by Match).
	ReasonBundleMismatch Reason = "gate_bundle_mismatch"
)

// Error is the error every function of this package returns.
type Error struct {
	Reason Reason
	Format Format
	Detail string // for people: what was wrong, never a secret
	Err    error  // the underlying parser error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Reason))
	if e.Format != FormatUnknown {
		b.WriteString(" (" + e.Format.String() + ")")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason code of err, or "" when err is nil or did not
// come from this package.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func fail(r Reason, f Format, err error, format string, args ...any) *Error {
	return &Error{Reason: r, Format: f, Detail: fmt.Sprintf(format, args...), Err: err}
}

// Platform is the operating system a format belongs to.
type Platform string

const (
	MacOS   Platform = "macos"
	Windows Platform = "windows"
)

// Identity is what a package says about itself.
type Identity struct {
	Format   Format
	Platform Platform
	// BundleIDs are the identifiers the package declares for itself, the
	// primary one first (see the package doc for each format's order).
	BundleIDs []string
	Name      string // display name (CFBundleName, ProductName, ...)
	Version   string
	Publisher string // CompanyName, Manufacturer, MSIX Publisher DN

	// macOS bundles (zip, bare Mach-O)
	AppPath    string // "Hello.app" inside the archive
	InfoPlist  []byte // the exact Info.plist bytes, for the signature's Info.plist binding
	Executable string // archive path of the main executable (Contents/MacOS/<CFBundleExecutable>)
	FeedURL    string // SUFeedURL (Sparkle appcast), when present

	// Windows
	VersionInfo       map[string]string // PE VERSIONINFO strings
	ProductCode       string            // MSI
	UpgradeCode       string            // MSI
	PackageFamilyName string            // MSIX: Name_PublisherId

	// .dmg: what the trailer says (the filesystem is not read)
	DMG *DMGInfo
}

// Limits bound every read. The zero value of a field means its default.
// docs/gate.md ("Limits") and docs/limits.md list them.
type Limits struct {
	// MaxEntries bounds zip entries (counted in the central directory
	// before archive/zip reads it, and the count it claims), xar TOC files
	// and compound-file directory entries; default 100 000.
	MaxEntries   int
	MaxFileBytes int64 // one decompressed plist, manifest, PackageInfo; default 4 MiB
	MaxTOCBytes  int64 // xar TOC (decompressed), dmg XML, MSI table stream, CFB FAT and directory; default 16 MiB
	// MaxCentralDirBytes bounds a zip's central directory; default 64 MiB.
	MaxCentralDirBytes int64
	// MaxDepth bounds nesting: plist containers, XML elements, PE resource
	// directories (Windows uses 3 levels), compound-file storages; default 64.
	MaxDepth int
	// MaxNodes bounds the elements of one XML document and the objects of
	// one plist; default 1 000 000.
	MaxNodes int
	// MaxResourceEntries bounds the PE resource directory entries a walk of
	// the tree visits (a directory reached twice counts twice, so a tree
	// whose entries share subdirectories cannot multiply); default 65 536.
	MaxResourceEntries int
	// MaxMachOCommands bounds a Mach-O's load commands (and
	// MaxMachOCommandBytes their total size); defaults 4 096 and 16 MiB.
	// A universal binary holds at most 16 architectures.
	MaxMachOCommands     int
	MaxMachOCommandBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = 100_000
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 4 << 20
	}
	if l.MaxTOCBytes <= 0 {
		l.MaxTOCBytes = 16 << 20
	}
	if l.MaxCentralDirBytes <= 0 {
		l.MaxCentralDirBytes = 64 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 64
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = 1_000_000
	}
	if l.MaxResourceEntries <= 0 {
		l.MaxResourceEntries = 65_536
	}
	if l.MaxMachOCommands <= 0 {
		l.MaxMachOCommands = 4096
	}
	if l.MaxMachOCommandBytes <= 0 {
		l.MaxMachOCommandBytes = 16 << 20
	}
	return l
}

// Reader reads package identities within its Limits. The zero value is ready.
type Reader struct {
	Limits Limits
}

// DefaultLimits are the bounds a zero Limits stands for.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

// ReadFile opens path and reads it with r.
func (r Reader) ReadFile(ctx context.Context, path string) (*Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return r.Read(ctx, f, st.Size())
}

// Read identifies the format of the size bytes of ra by their magic and reads
// the identity the package declares. On an *Error the returned Identity may
// still carry what was read (its Format at least), as evidence.
func (r Reader) Read(ctx context.Context, ra io.ReaderAt, size int64) (id *Identity, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lim := r.Limits.withDefaults()
	f, err := Detect(ra, size)
	if err != nil {
		return &Identity{Format: FormatUnknown}, err
	}
	defer func() {
		// The parsers (archive/zip, debug/pe, debug/macho, howett.net/plist,
		// and ours) see hostile bytes; a panic in one of them is an
		// unreadable package, not a crashed worker.
		if p := recover(); p != nil {
			id = &Identity{Format: f}
			err = fail(ReasonPackageUnreadable, f, nil, "parser failure: %v", p)
		}
	}()
	switch f {
	case FormatZip:
		id, err = readZip(ctx, ra, size, lim)
	case FormatPE:
		id, err = readPE(ra, size, lim)
	case FormatMSI:
		id, err = readMSI(ra, size, lim)
	case FormatPKG:
		id, err = readXAR(ctx, ra, size, lim)
	case FormatDMG:
		id, err = readDMG(ctx, ra, size, lim)
	case FormatMachO:
		id, err = readMachO(ra, size, lim)
	}
	if id == nil {
		id = &Identity{Format: f}
	}
	if id.Format == FormatUnknown {
		id.Format = f
	}
	if err == nil && len(id.BundleIDs) == 0 {
		err = fail(ReasonBundleIDMissing, id.Format, nil, "the package declares no identifier")
	}
	return id, err
}

// Match reports whether the identity declares bundleID: nil when one of
// BundleIDs equals it, an *Error with ReasonBundleMismatch otherwise.
// macOS identifiers compare exactly (CFBundleIdentifier is what the system
// uses); Windows ones ignore ASCII case, as Windows does for package names,
// product names and GUIDs.
func Match(id *Identity, bundleID string) error {
	for _, got := range id.BundleIDs {
		if got == bundleID || (id.Platform == Windows && strings.EqualFold(got, bundleID)) {
			return nil
		}
	}
	return fail(ReasonBundleMismatch, id.Format, nil, "declared %q, the package says %s", bundleID, quoteList(id.BundleIDs))
}

func quoteList(ss []string) string {
	if len(ss) == 0 {
		return "nothing"
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// readAllLimited reads all of rd, failing with ReasonPackageTooLarge beyond max.
func readAllLimited(rd io.Reader, max int64, f Format, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(rd, max+1))
	if err != nil {
		return nil, fail(ReasonPackageUnreadable, f, err, "reading %s", what)
	}
	if int64(len(b)) > max {
		return nil, fail(ReasonPackageTooLarge, f, nil, "%s is larger than %d bytes", what, max)
	}
	return b, nil
}

// addID appends s to ids unless it is empty or already there.
func addID(ids []string, s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ids
	}
	for _, have := range ids {
		if have == s {
			return ids
		}
	}
	return append(ids, s)
}
