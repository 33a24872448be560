// Package pkgread reads the bundle identity an app download declares for
// itself, from the bytes a macOS or Windows app actually ships. It is the
// reading half of the vetting gate's bundle_match check: the caller downloads
// download_url (through server/outbound), hands the file here, and compares
// the identifiers in the returned Identity with the app's declared bundle_id
// (Match does that comparison).
//
// What it reads, by magic bytes and never by file name:
//
//   - .zip holding a macOS app: the shallowest X.app/Contents/Info.plist
//     (XML or binary plist), its CFBundleIdentifier, CFBundleExecutable and
//     the path of the main executable (Contents/MacOS/<exe>) for the signature
//     check; __MACOSX/ junk and nested bundles (frameworks, helpers) are ignored.
//   - .msix/.appx (a zip with AppxManifest.xml) and .msixbundle/.appxbundle
//     (AppxMetadata/AppxBundleManifest.xml): Identity Name, Publisher,
//     Version, and the PackageFamilyName derived from them.
//   - .exe/.dll (PE): the VERSIONINFO string table (the resource path to it only). Windows has
//     no bundle identifier; the identifiers offered for matching are
//     InternalName then ProductName. These strings are self-asserted: the
//     caller binds them to the Authenticode signer (server/gate/codesign).
//   - .msi (compound file): the Property table's ProductName, ProductCode,
//     UpgradeCode, Manufacturer and ProductVersion; the identifiers offered
//     for matching are ProductName then UpgradeCode.
//   - .pkg (flat xar): the TOC, then Distribution and every PackageInfo;
//     the identifiers offered are the <bundle id> of installed app bundles,
//     then the package identifiers (pkg-info identifier, pkg-ref id).
//     ReadXARSignature returns the links of its signature (TOC checksum,
//     signatures, archived checksums, a stapled ticket), bounded.
//   - .dmg (UDIF, server/gate/udif): the koly trailer, its partitions (blkx)
//     and chunk tables, whether the image carries a code signature and a
//     stapled notarisation ticket; then the HFS+ partition
//     (server/gate/hfsplus) and the shallowest X.app/Contents/Info.plist at
//     the volume's root or one folder down, read as for a zip. Chunks are
//     decoded on demand (raw, zero, zlib, bzip2, ADC, LZFSE/LZVN, LZMA); an
//     unknown chunk type is ReasonUnsupportedCompression, an APFS volume
//     ReasonAPFSUnsupported.
//     OpenDMG also returns the volume, for the signature check.
//   - a bare Mach-O (thin or universal): the embedded __TEXT,__info_plist.
//
// What it does not do: verify signatures (server/gate/codesign does), fetch
// anything, look inside archives nested in archives by itself (Unwrap
// extracts the one installer or disk image a zip may hold — an .msi, .exe,
// .pkg, .msix or .dmg — for the caller to read; a .zip holding several .exe
// files is ReasonBundleIDMissing), or
// run installers. Every read is
// bounded by Limits: entry counts, the size of each decompressed file it
// reads (plists, manifests, the xar TOC, MSI tables), and it never
// decompresses anything else, so zip bombs cost nothing. Parsing hostile
// input is fuzzed; a panic in a third-party parser is turned into
// ReasonPackageUnreadable.
package pkgread
