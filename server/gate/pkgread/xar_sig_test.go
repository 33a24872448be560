package pkgread

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/gate/internal/fixture"
)

// rawXAR is a flat package with the given TOC XML and heap, for the TOCs
// no honest writer produces.
func rawXAR(toc string, heap []byte) []byte { return rawXARDeclaring(toc, int64(len(toc)), heap) }

// rawXARDeclaring is rawXAR with a header that declares plain bytes of TOC.
func rawXARDeclaring(toc string, plain int64, heap []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte(toc))
	zw.Close()
	var out bytes.Buffer
	out.WriteString("xar!")
	binary.Write(&out, binary.BigEndian, struct {
		HeaderSize, Version uint16
		Compressed, Plain   uint64
		Hash                uint32
	}{28, 1, uint64(z.Len()), uint64(plain), 1})
	out.Write(z.Bytes())
	out.Write(heap)
	return out.Bytes()
}

func readSig(b []byte) (*XARSignature, error) {
	return ReadXARSignature(bytes.NewReader(b), int64(len(b)), Limits{})
}

func wantSigReason(t *testing.T, b []byte, want Reason) {
	t.Helper()
	_, err := readSig(b)
	if got := ReasonOf(err); got != want {
		t.Fatalf("reason = %q (%v), want %q", got, err, want)
	}
}

func TestXARSignatureLinks(t *testing.T) {
	root := fixture.NewRoot("Root")
	leaf := root.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: X", DeveloperIDInstaller: true})
	pkg := fixture.SignPKG(fixture.PKG(fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"/>`)},
		fixture.XARFile{Name: "d", Files: []fixture.XARFile{{Name: "Payload", Data: []byte("payload")}}}), leaf)
	s, err := readSig(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if s.ChecksumStyle != "sha1" || !bytes.Equal(s.TOCDigest, s.StoredChecksum) || len(s.RSASignature) != 256 ||
		len(s.RSACertificates) != 1 || len(s.CMSSignature) == 0 || len(s.Files) != 2 || s.Files[1].Name != "d/Payload" || s.Ticket != nil {
		t.Fatalf("style %s, checksum %x/%x, RSA %d bytes, %d certificates, CMS %d bytes, files %+v, ticket %q",
			s.ChecksumStyle, s.TOCDigest, s.StoredChecksum, len(s.RSASignature), len(s.RSACertificates), len(s.CMSSignature), s.Files, s.Ticket)
	}
	stapled := StapleXAR(pkg, []byte("ticket bytes"))
	if s, err := readSig(stapled); err != nil || string(s.Ticket) != "ticket bytes" {
		t.Fatalf("%q %v", s.Ticket, err)
	}
	// Bytes after the heap that are not a trailer are not a ticket.
	if s, err := readSig(append(bytes.Clone(pkg), bytes.Repeat([]byte("t8lr"), 20)...)); err != nil || s.Ticket != nil {
		t.Fatalf("%q %v", s.Ticket, err)
	}
}

const sigTOCHead = `<?xml version="1.0"?><xar><toc><checksum style="sha1"><offset>0</offset><size>20</size></checksum>`

func TestBombXARSignatureOffsets(t *testing.T) {
	heap := make([]byte, 64)
	cases := map[string]string{
		"signature past EOF":   `<x-signature style="CMS"><offset>1000000</offset><size>100</size></x-signature>`,
		"signature too large":  `<x-signature style="CMS"><offset>0</offset><size>9223372036854775807</size></x-signature>`,
		"negative offset":      `<signature style="RSA"><offset>-5</offset><size>10</size></signature>`,
		"file past EOF":        `<file><name>Payload</name><data><offset>40</offset><length>4096</length></data></file>`,
		"file offset overflow": `<file><name>Payload</name><data><offset>9223372036854775800</offset><length>100</length></data></file>`,
		"overlapping files": `<file><name>a</name><data><offset>20</offset><length>40</length></data></file>` +
			`<file><name>b</name><data><offset>20</offset><length>40</length></data></file>`,
		"checksum of the wrong size": ``,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			toc := sigTOCHead + body + `</toc></xar>`
			if name == "checksum of the wrong size" {
				toc = strings.Replace(toc, "<size>20</size>", "<size>2000000</size>", 1)
			}
			wantSigReason(t, rawXAR(toc, heap), ReasonPackageUnreadable)
		})
	}
}

func TestBombXARSignatureCertificates(t *testing.T) {
	certs := strings.Repeat("<X509Certificate>AAAA</X509Certificate>", maxXARCertificates+1)
	toc := sigTOCHead + `<signature style="RSA"><offset>20</offset><size>4</size><KeyInfo><X509Data>` + certs + `</X509Data></KeyInfo></signature></toc></xar>`
	wantSigReason(t, rawXAR(toc, make([]byte, 64)), ReasonPackageTooLarge)
}

func TestBombXARTOCDecompression(t *testing.T) {
	toc := sigTOCHead + "<x>" + strings.Repeat(" ", 1<<20) + "</x></toc></xar>"
	// A TOC declaring more than the bound is refused from its header,
	// before anything is decompressed.
	wantSigReason(t, rawXARDeclaring(toc, 17<<20, make([]byte, 20)), ReasonPackageTooLarge)
	bombBytes(t, rawXARDeclaring(toc, 17<<20, make([]byte, 20)), ReasonPackageTooLarge)
	// One whose header lies (1 MiB of TOC declared as 1 KiB) stops one byte
	// past what it declared.
	wantSigReason(t, rawXARDeclaring(toc, 1<<10, make([]byte, 20)), ReasonPackageUnreadable)
	bombBytes(t, rawXARDeclaring(toc, 1<<10, make([]byte, 20)), ReasonPackageUnreadable)
}

func TestBombXARTOCDeepForSignature(t *testing.T) {
	toc := sigTOCHead + strings.Repeat("<file>", 200) + strings.Repeat("</file>", 200) + `</toc></xar>`
	wantSigReason(t, rawXAR(toc, make([]byte, 20)), ReasonPackageTooDeep)
}

func FuzzXARSignature(f *testing.F) {
	root := fixture.NewRoot("Fuzz Root")
	leaf := root.Issue(fixture.CertOptions{CommonName: "Developer ID Installer: Fuzz", DeveloperIDInstaller: true})
	pkg := fixture.PKG(fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"/>`)})
	f.Add(pkg)
	f.Add(StapleXAR(fixture.SignPKG(pkg, leaf), []byte("ticket")))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadXARSignature(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("no reason code: %v", err)
			}
			return
		}
		var total int64
		for _, f := range s.Files {
			if f.Offset < 0 || f.Length < 0 || f.Offset+f.Length > int64(len(b)) {
				t.Fatalf("a heap range outside the file: %+v", f)
			}
			total += f.Length
		}
		if total > int64(len(b)) || len(s.RSASignature) > maxXARSignature || len(s.CMSSignature) > maxXARSignature {
			t.Fatalf("over a bound: %d heap bytes", total)
		}
	})
}

// A zip around one .pkg (Homebrew's "zip → pkg" casks) unwraps to it.
func TestUnwrapPKG(t *testing.T) {
	pkg := fixture.PKG(fixture.XARFile{Name: "PackageInfo", Data: []byte(`<pkg-info identifier="a.b"/>`)})
	n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello 1.0/Hello.pkg", Data: pkg}, fixture.File{Name: "Hello 1.0/README", Data: []byte("x")}), 0)
	if err != nil || n == nil || n.Path != "Hello 1.0/Hello.pkg" {
		t.Fatalf("%+v %v", n, err)
	}
	// A .pkg next to an installer of another kind: not unwrapped (one installer only).
	exe := fixture.PE(map[string]string{"InternalName": "x"})
	if n, err := unwrap(t, fixture.Zip(fixture.File{Name: "Hello.pkg", Data: pkg}, fixture.File{Name: "setup.exe", Data: exe}), 0); err != nil || n == nil || n.Path != "setup.exe" {
		t.Fatalf("%+v %v", n, err)
	}
}
