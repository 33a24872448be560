package pkgread

import (
	"crypto"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
)

// A flat package is signed in three links: the TOC's <checksum> is a hash
// of the compressed TOC bytes, stored in the heap; the <signature> (RSA
// PKCS#1 v1.5) and <x-signature> (CMS) sign that hash; and the TOC lists
// an <archived-checksum> for every file's heap bytes. ReadXARSignature
// returns those links, bounded, for server/gate/codesign to verify.

const (
	maxXARSignature    = 1 << 20 // one signature blob; real ones are a few KiB
	maxXARCertificates = 16
	maxXARCertificate  = 64 << 10
	maxXARTicket       = 1 << 20
)

// XARHeapFile is one file's archived bytes in the heap.
type XARHeapFile struct {
	Name           string
	Offset, Length int64  // absolute, in the package
	ChecksumStyle  string // "sha1", "sha256", "sha512", "md5", "" (none)
	Checksum       []byte
}

// XARSignature is what a flat package says about its own signature.
type XARSignature struct {
	// ChecksumStyle is the TOC checksum's algorithm ("sha1", "sha256",
	// "sha512", "md5"), "" when the package has none. ChecksumHash is it
	// as a crypto.Hash (0 for "").
	ChecksumStyle string
	ChecksumHash  crypto.Hash
	// TOCDigest is ChecksumHash over the compressed TOC, computed here;
	// StoredChecksum is what the heap holds where <checksum> points.
	TOCDigest, StoredChecksum []byte
	// RSASignature signs TOCDigest with RSACertificates[0] (DER, leaf first).
	RSASignature    []byte
	RSACertificates [][]byte
	// CMSSignature is a detached CMS SignedData over TOCDigest, as stored
	// (BER or DER, followed by the zero padding of its reserved heap space).
	CMSSignature []byte
	// Files are the files with bytes in the heap, in TOC order.
	Files []XARHeapFile
	// Ticket is a stapled notarisation ticket: the bytes between two
	// "t8lr" trailers appended after the heap, as stapler writes them;
	// nil when there is none.
	Ticket []byte
}

var xarHashes = map[string]crypto.Hash{"sha1": crypto.SHA1, "md5": crypto.MD5, "sha256": crypto.SHA256, "sha512": crypto.SHA512}

// xarHeaderHashes names the header's checksum algorithm field (xar.h).
var xarHeaderHashes = map[uint32]string{0: "", 1: "sha1", 2: "md5", 3: "sha256", 4: "sha512"}

// ReadXARSignature reads the signature links of a flat package within lim
// (and fixed bounds: a signature at most 1 MiB, 16 certificates of 64 KiB,
// a ticket of 1 MiB). Every heap range must lie inside the file, and the
// files' archived bytes may not add up to more than the heap holds (so
// verifying them hashes each byte at most once). It verifies nothing.
func ReadXARSignature(ra io.ReaderAt, size int64, lim Limits) (*XARSignature, error) {
	lim = lim.withDefaults()
	p, err := parseXAR(ra, size, lim)
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fail(ReasonPackageUnreadable, FormatPKG, nil, format, args...)
	}
	style, ok := xarHeaderHashes[p.headerAlg]
	if !ok {
		return nil, bad("unknown TOC checksum algorithm %d in the header", p.headerAlg)
	}
	s := &XARSignature{ChecksumStyle: style, ChecksumHash: xarHashes[style]}
	heapEnd := p.heap
	// heapRange checks a TOC element's heap range and returns its absolute offset.
	heapRange := func(what string, off, n, max int64) (int64, error) {
		if off < 0 || n < 0 || n > max || off > size-p.heap || p.heap+off > size-n {
			return 0, bad("%s (%d bytes at heap offset %d) lies outside the file", what, n, off)
		}
		heapEnd = maxInt64(heapEnd, p.heap+off+n)
		return p.heap + off, nil
	}
	readRange := func(what string, e *xarSigElement, max int64) ([]byte, error) {
		abs, err := heapRange(what, e.Offset, e.Size, max)
		if err != nil {
			return nil, err
		}
		b := make([]byte, e.Size)
		if _, err := ra.ReadAt(b, abs); err != nil {
			return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "reading %s", what)
		}
		return b, nil
	}
	if c := p.toc.Checksum; c != nil {
		if st := strings.ToLower(c.Style); st != style {
			return nil, bad("the TOC checksum is %q but the header says %q", c.Style, style)
		}
		if s.ChecksumHash == 0 || c.Size != int64(s.ChecksumHash.Size()) {
			return nil, bad("the TOC checksum is %d bytes, not a %s digest", c.Size, style)
		}
		if s.StoredChecksum, err = readRange("the TOC checksum", c, 64); err != nil {
			return nil, err
		}
		h := s.ChecksumHash.New()
		if _, err := io.Copy(h, io.NewSectionReader(ra, p.tocOffset, p.tocLen)); err != nil {
			return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "reading the TOC")
		}
		s.TOCDigest = h.Sum(nil)
	} else if style != "" {
		return nil, bad("the header names a %s TOC checksum the TOC does not have", style)
	}
	if sig := p.toc.Signature; sig != nil {
		if s.RSASignature, err = readRange("the RSA signature", sig, maxXARSignature); err != nil {
			return nil, err
		}
		if s.RSACertificates, err = xarCertificates(sig.Certificates); err != nil {
			return nil, err
		}
	}
	if sig := p.toc.XSignature; sig != nil {
		if s.CMSSignature, err = readRange("the CMS signature", sig, maxXARSignature); err != nil {
			return nil, err
		}
	}
	var total int64
	count := 0
	var walk func(files []*xarFile, dir string) error
	walk = func(files []*xarFile, dir string) error {
		for _, f := range files {
			if count++; count > lim.MaxEntries {
				return fail(ReasonPackageTooLarge, FormatPKG, nil, "more than %d entries in the TOC", lim.MaxEntries)
			}
			name := f.Name
			if dir != "" {
				name = dir + "/" + f.Name
			}
			if f.Length != 0 {
				abs, err := heapRange(name, f.Offset, f.Length, size)
				if err != nil {
					return err
				}
				if total += f.Length; total > size-p.heap {
					return bad("the files' archived bytes add up to more than the heap holds (overlapping ranges)")
				}
				hf := XARHeapFile{Name: name, Offset: abs, Length: f.Length, ChecksumStyle: strings.ToLower(f.ArchivedChecksum.Style)}
				if d := strings.TrimSpace(f.ArchivedChecksum.Digest); d != "" || hf.ChecksumStyle != "" {
					if len(d) > 128 {
						return bad("%s has a %d-character checksum", name, len(d))
					}
					if hf.Checksum, err = hex.DecodeString(d); err != nil {
						return fail(ReasonPackageUnreadable, FormatPKG, err, "%s's archived checksum", name)
					}
				}
				s.Files = append(s.Files, hf)
			}
			if err := walk(f.Files, name); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(p.toc.Files, ""); err != nil {
		return nil, err
	}
	s.Ticket = xarTicket(ra, size, heapEnd)
	return s, nil
}

func xarCertificates(enc []string) ([][]byte, error) {
	if len(enc) > maxXARCertificates {
		return nil, fail(ReasonPackageTooLarge, FormatPKG, nil, "the signature carries %d certificates, more than %d", len(enc), maxXARCertificates)
	}
	out := make([][]byte, 0, len(enc))
	for _, e := range enc {
		e = strings.Join(strings.Fields(e), "")
		if base64.StdEncoding.DecodedLen(len(e)) > maxXARCertificate {
			return nil, fail(ReasonPackageTooLarge, FormatPKG, nil, "a signature certificate is larger than %d bytes", maxXARCertificate)
		}
		der, err := base64.StdEncoding.DecodeString(e)
		if err != nil {
			return nil, fail(ReasonPackageUnreadable, FormatPKG, err, "a signature certificate is not base64")
		}
		out = append(out, der)
	}
	return out, nil
}

// xarTicket finds a stapled ticket after heapEnd: a "t8lr" terminator
// trailer, the ticket, and a "t8lr" ticket trailer giving its length, each
// trailer 16 bytes (magic, version 1, type 1 or 2, length, unused; little
// endian), the ticket trailer last in the file.
func xarTicket(ra io.ReaderAt, size, heapEnd int64) []byte {
	if size-heapEnd < 32 {
		return nil
	}
	trailer := func(off int64, typ uint16) (uint32, bool) {
		b := make([]byte, 16)
		if _, err := ra.ReadAt(b, off); err != nil {
			return 0, false
		}
		le := binary.LittleEndian
		return le.Uint32(b[8:]), string(b[:4]) == "t8lr" && le.Uint16(b[4:]) == 1 && le.Uint16(b[6:]) == typ
	}
	n, ok := trailer(size-16, 2)
	if !ok || n == 0 || int64(n) > maxXARTicket || int64(n) > size-heapEnd-32 {
		return nil
	}
	start := size - 16 - int64(n)
	if _, ok := trailer(start-16, 1); !ok {
		return nil
	}
	t := make([]byte, n)
	if _, err := ra.ReadAt(t, start); err != nil {
		return nil
	}
	return t
}

// StapleXAR is pkg with ticket stapled the way stapler does it
// (xarTicket's layout). Test fixtures and the test-mode sandbox use it.
func StapleXAR(pkg, ticket []byte) []byte {
	le := binary.LittleEndian
	tr := func(typ uint16, n int) []byte {
		b := make([]byte, 16)
		copy(b, "t8lr")
		le.PutUint16(b[4:], 1)
		le.PutUint16(b[6:], typ)
		le.PutUint32(b[8:], uint32(n))
		return b
	}
	out := append(append([]byte{}, pkg...), tr(1, 0)...)
	out = append(out, ticket...)
	return append(out, tr(2, len(ticket))...)
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
