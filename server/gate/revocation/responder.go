package revocation

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/ocsp"
)

// Responder is a CA's revocation service over HTTP: OCSP (RFC 6960, POST
// of a DER request) at any path, and the CA's complete CRL (RFC 5280) for
// a GET of a path ending in ".crl". Both are signed by the CA itself. It
// is the test mode sandbox's responder (server/gate/sandbox) and the
// counterpart of the client's tests: real bytes, not a shortcut.
type Responder struct {
	Issuer *x509.Certificate
	Key    crypto.Signer
	// Known reports whether the CA issued serial; Revoked, whether (and
	// when, why) it revoked it.
	Known   func(serial *big.Int) bool
	Revoked func(serial *big.Int) (at time.Time, reason int, revoked bool)
	// Serials is every revoked serial, for the CRL.
	Serials func() []*big.Int
	Now     func() time.Time
	// Validity is how long an answer is valid (nextUpdate - thisUpdate);
	// zero means an hour.
	Validity time.Duration
}

func (r *Responder) times() (this, next time.Time) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	v := r.Validity
	if v <= 0 {
		v = time.Hour
	}
	this = now.Add(-time.Minute).UTC().Truncate(time.Second)
	return this, this.Add(v)
}

func (r *Responder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, ".crl"):
		r.serveCRL(w)
	case req.Method == http.MethodPost:
		r.serveOCSP(w, req)
	default:
		http.Error(w, "POST an OCSP request, or GET the .crl", http.StatusMethodNotAllowed)
	}
}

func (r *Responder) serveOCSP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/ocsp-response")
	q, err := ocsp.ParseRequest(body)
	if err != nil {
		w.Write(ocsp.MalformedRequestErrorResponse)
		return
	}
	this, next := r.times()
	tmpl := ocsp.Response{SerialNumber: q.SerialNumber, ThisUpdate: this, NextUpdate: next, Status: ocsp.Unknown}
	if r.Known != nil && r.Known(q.SerialNumber) {
		tmpl.Status = ocsp.Good
		if at, reason, ok := r.Revoked(q.SerialNumber); ok {
			tmpl.Status, tmpl.RevokedAt, tmpl.RevocationReason = ocsp.Revoked, at, reason
		}
	}
	der, err := ocsp.CreateResponse(r.Issuer, r.Issuer, tmpl, r.Key)
	if err != nil {
		w.Write(ocsp.InternalErrorErrorResponse)
		return
	}
	w.Write(der)
}

func (r *Responder) serveCRL(w http.ResponseWriter) {
	this, next := r.times()
	list := &x509.RevocationList{Number: big.NewInt(this.Unix()), ThisUpdate: this, NextUpdate: next}
	if r.Serials != nil {
		for _, s := range r.Serials() {
			at, reason, _ := r.Revoked(s)
			list.RevokedCertificateEntries = append(list.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: at, ReasonCode: reason})
		}
	}
	der, err := x509.CreateRevocationList(rand.Reader, list, r.Issuer, r.Key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/pkix-crl")
	w.Write(der)
}
