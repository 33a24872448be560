package revocation

import (
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// FuzzParseOCSP: any bytes from a responder end in an answer or an error,
// never a panic.
func FuzzParseOCSP(f *testing.F) {
	w := newWorld(f, true, true)
	for _, st := range []int{ocsp.Good, ocsp.Revoked, ocsp.Unknown} {
		der, err := ocsp.CreateResponse(w.ca.cert, w.ca.cert, ocsp.Response{SerialNumber: w.leaf.SerialNumber, Status: st,
			ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour), RevokedAt: now.Add(-time.Hour), RevocationReason: ReasonKeyCompromise}, w.ca.key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(der)
	}
	f.Add(ocsp.TryLaterErrorResponse)
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseOCSP(b, w.leaf, w.ca.cert, now)
	})
}

// FuzzParseCRL: any bytes from a distribution point end in a CRL or an
// error, never a panic.
func FuzzParseCRL(f *testing.F) {
	c := newCA(f, "Fuzz CA")
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: big.NewInt(7), RevocationTime: now.Add(-time.Hour), ReasonCode: ReasonSuperseded}}}, c.cert, c.key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(der)
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseCRL(b, c.cert, now)
	})
}
