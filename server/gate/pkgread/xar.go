package pkgread

import (
	"compress/bzip2"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/xml"
	"io"
	"path"
	"strings"
)

// A flat .pkg is a xar archive: a 28-byte header, a zlib-compressed XML table
// of contents, then the heap the TOC's <data> elements point into. Only the
// installer's metadata files are read: Distribution (product archives) and
// PackageInfo (at the root of a component package, or in each <x>.pkg
// folder of a product archive). Payloads are never decompressed.

type xarTOC struct {
	Checksum   *xarSigElement `xml:"toc>checksum"`
	Signature  *xarSigElement `xml:"toc>signature"`
	XSignature *xarSigElement `xml:"toc>x-signature"`
	Files      []*xarFile     `xml:"toc>file"`
}

// xarSigElement is the TOC checksum or a signature: a heap range, and for
// signatures the certificates (base64 DER) in an XML-DSig KeyInfo.
type xarSigElement struct {
	Style        string   `xml:"style,attr"`
	Offset       int64    `xml:"offset"`
	Size         int64    `xml:"size"`
	Certificates []string `xml:"KeyInfo>X509Data>X509Certificate"`
}

type xarFile struct {
	Name     string `xml:"name"`
	Type     string `xml:"type"`
	Encoding struct {
		Style string `xml:"style,attr"`
	} `xml:"data>encoding"`
	Offset           int64 `xml:"data>offset"`
	Length           int64 `xml:"data>length"`
	Size             int64 `xml:"data>size"`
	ArchivedChecksum struct {
		Style  string `xml:"style,attr"`
		Digest string `xml:",chardata"`
	} `xml:"data>archived-checksum"`
	Files []*xarFile `xml:"file"`
}

// xarParsed is a flat package's header and decoded TOC.
type xarParsed struct {
	toc       xarTOC
	headerAlg uint32 // the header's checksum algorithm: 0 none, 1 SHA-1, 2 MD5, 3 SHA-256, 4 SHA-512
	tocOffset int64  // where the compressed TOC starts
	tocLen    int64  // its compressed length
	heap      int64  // where the heap starts
}

// parseXAR reads the header and the TOC: the compressed TOC at most
// lim.MaxTOCBytes (its decompressed form too), its XML within lim's depth
// and node bounds before encoding/xml decodes it.
func parseXAR(ra io.ReaderAt, size int64, lim Limits) (*xarParsed, error) {
	hdr := make([]byte, 28)
	if _, err := ra.ReadAt(hdr, 0); err != nil {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "reading the xar header")
	}
	be := binary.BigEndian
	hdrSize := int64(be.Uint16(hdr[4:]))
	tocLen := int64(be.Uint64(hdr[8:]))
	if hdrSize < 28 || tocLen <= 0 || tocLen > size-hdrSize {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, nil, "xar header sizes (%d, %d) do not fit a %d-byte file", hdrSize, tocLen, size)
	}
	if tocLen > lim.MaxTOCBytes {
		return nil, fail(ReasonPackageTooLarge, FormatPKG, nil, "the compressed TOC is %d bytes, more than %d", tocLen, lim.MaxTOCBytes)
	}
	// The header declares the TOC's decompressed size: it is refused over
	// the bound before anything is decompressed, and the decompression
	// reads into exactly that much room, stopping one byte past it.
	plain := int64(be.Uint64(hdr[16:]))
	if plain > lim.MaxTOCBytes {
		return nil, fail(ReasonPackageTooLarge, FormatPKG, nil, "the TOC declares %d bytes, more than %d", plain, lim.MaxTOCBytes)
	}
	if plain <= 0 {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, nil, "the TOC declares %d bytes", plain)
	}
	zr, err := zlib.NewReader(io.NewSectionReader(ra, hdrSize, tocLen))
	if err != nil {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "decompressing the TOC")
	}
	raw := make([]byte, plain+1)
	n, err := io.ReadFull(zr, raw)
	switch {
	case n > int(plain):
		return nil, fail(ReasonPackageUnreadable, FormatPKG, nil, "the TOC is larger than the %d bytes its header declares", plain)
	case err != nil && err != io.ErrUnexpectedEOF:
		return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "decompressing the TOC")
	}
	raw = raw[:n]
	if err := checkXML(raw, lim, FormatPKG, "the TOC"); err != nil {
		return nil, err
	}
	p := &xarParsed{headerAlg: be.Uint32(hdr[24:]), tocOffset: hdrSize, tocLen: tocLen, heap: hdrSize + tocLen}
	if err := xml.Unmarshal(raw, &p.toc); err != nil {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "decoding the TOC")
	}
	return p, nil
}

func readXAR(ctx context.Context, ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatPKG, Platform: MacOS}
	p, err := parseXAR(ra, size, lim)
	if err != nil {
		return id, err
	}
	toc, heap := p.toc, p.heap

	var metas []*xarFile // Distribution first, then every PackageInfo
	count := 0
	var walk func(files []*xarFile, dir string, depth int) error
	walk = func(files []*xarFile, dir string, depth int) error {
		for _, f := range files {
			if count++; count > lim.MaxEntries {
				return fail(ReasonPackageTooLarge, FormatPKG, nil, "more than %d entries in the TOC", lim.MaxEntries)
			}
			p := path.Join(dir, f.Name)
			switch {
			case depth == 0 && f.Name == "Distribution" && f.Type == "file":
				metas = append([]*xarFile{f}, metas...)
			case depth <= 1 && f.Name == "PackageInfo" && f.Type == "file":
				metas = append(metas, f)
			}
			if depth < 1 { // PackageInfo is at most one folder down; payload trees are not walked
				if err := walk(f.Files, p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(toc.Files, "", 0); err != nil {
		return id, err
	}
	if len(metas) == 0 {
		return id, fail(ReasonBundleIDMissing, FormatPKG, nil, "neither Distribution nor PackageInfo in the package")
	}
	var appIDs, pkgIDs []string
	for _, f := range metas {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := xarRead(ra, size, heap, f, lim)
		if err != nil {
			return id, err
		}
		if err := checkXML(b, lim, FormatPKG, f.Name); err != nil {
			return id, err
		}
		if f.Name == "Distribution" {
			var d pkgDistribution
			if err := xml.Unmarshal(b, &d); err != nil {
				return id, fail(ReasonPackageUnreadable, FormatPKG, err, "decoding Distribution")
			}
			id.Name = firstNonEmpty(id.Name, d.Title)
			id.Version = firstNonEmpty(id.Version, d.Product.Version)
			pkgIDs = addID(pkgIDs, d.Product.ID)
			for _, r := range d.PkgRefs {
				for _, bnd := range r.Bundles {
					if isTopApp(bnd.Path) {
						appIDs = addID(appIDs, bnd.ID)
					}
				}
			}
			for _, r := range d.PkgRefs {
				pkgIDs = addID(pkgIDs, r.ID)
			}
			continue
		}
		var pi pkgInfo
		if err := xml.Unmarshal(b, &pi); err != nil {
			return id, fail(ReasonPackageUnreadable, FormatPKG, err, "decoding PackageInfo")
		}
		for _, bnd := range append(pi.Bundles, pi.BundleVersions...) {
			if isTopApp(bnd.Path) {
				appIDs = addID(appIDs, bnd.ID)
				id.Version = firstNonEmpty(id.Version, bnd.ShortVersion)
			}
		}
		pkgIDs = addID(pkgIDs, pi.Identifier)
		id.Version = firstNonEmpty(id.Version, pi.Version)
	}
	for _, s := range append(appIDs, pkgIDs...) {
		id.BundleIDs = addID(id.BundleIDs, s)
	}
	return id, nil
}

type pkgBundle struct {
	ID           string `xml:"id,attr"`
	Path         string `xml:"path,attr"`
	ShortVersion string `xml:"CFBundleShortVersionString,attr"`
}

type pkgDistribution struct {
	Title   string `xml:"title"`
	Product struct {
		ID      string `xml:"id,attr"`
		Version string `xml:"version,attr"`
	} `xml:"product"`
	PkgRefs []struct {
		ID      string      `xml:"id,attr"`
		Bundles []pkgBundle `xml:"bundle-version>bundle"`
	} `xml:"pkg-ref"`
}

type pkgInfo struct {
	Identifier     string      `xml:"identifier,attr"`
	Version        string      `xml:"version,attr"`
	Bundles        []pkgBundle `xml:"bundle"`
	BundleVersions []pkgBundle `xml:"bundle-version>bundle"`
}

// isTopApp reports whether a bundle path names an app that is not inside
// another bundle ("./Hello.app", "Applications/Hello.app"). A <bundle> with no
// path (bundle-version lists in Distribution) counts as an app when its id
// is all there is: Apple's tools only list the installed top-level bundles there.
func isTopApp(p string) bool {
	if p == "" {
		return true
	}
	p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
	if !strings.HasSuffix(p, ".app") {
		return false
	}
	return !insideBundle(strings.Split(path.Dir(p), "/"))
}

// xarRead reads one heap file, decompressing by its declared encoding and
// bounded by MaxFileBytes.
func xarRead(ra io.ReaderAt, size, heap int64, f *xarFile, lim Limits) ([]byte, error) {
	if f.Offset < 0 || f.Length < 0 || f.Length > size || heap+f.Offset > size-f.Length {
		return nil, fail(ReasonPackageUnreadable, FormatPKG, nil, "%s lies outside the file", f.Name)
	}
	if f.Size > lim.MaxFileBytes {
		return nil, fail(ReasonPackageTooLarge, FormatPKG, nil, "%s declares %d bytes, more than %d", f.Name, f.Size, lim.MaxFileBytes)
	}
	var rd io.Reader = io.NewSectionReader(ra, heap+f.Offset, f.Length)
	switch f.Encoding.Style {
	case "", "application/octet-stream":
	case "application/x-gzip": // xar's name for zlib
		zr, err := zlib.NewReader(rd)
		if err != nil {
			return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "decompressing %s", f.Name)
		}
		rd = zr
	case "application/x-bzip2":
		rd = bzip2.NewReader(rd)
	default:
		return nil, fail(ReasonPackageUnreadable, FormatPKG, nil, "%s uses encoding %q", f.Name, f.Encoding.Style)
	}
	return readAllLimited(rd, lim.MaxFileBytes, FormatPKG, f.Name)
}
