package sandbox

import (
	"math/big"
	"net/http"
	"time"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/revocation"
)

// Revocation answers revocation checks of the sandbox's own downloads
// with a real revocation client asking the sandbox CA's OCSP responder and
// CRL (real RFC 6960 and RFC 5280 bytes signed by the sandbox root, served
// in memory at ocspURL and crlURL): the revoked.* leaves are revoked
// (keyCompromise), the other leaves good. The gate asks it only about
// sandbox downloads (gate.Service.SandboxRevocation).
func (s *Sandbox) Revocation() gate.RevocationChecker {
	return &revocation.Client{Now: s.now, HTTP: &http.Client{
		// Not server/outbound: this transport hands the request to the
		// in-memory responder and never opens a socket.
		Transport: handlerTransport{s.responder()}, Timeout: 10 * time.Second,
	}}
}

func (s *Sandbox) responder() *revocation.Responder {
	p := s.pki
	revoked := func(serial *big.Int) (time.Time, int, bool) {
		for _, c := range []*big.Int{p.revoked.developer.Leaf.SerialNumber, p.revoked.windows.Leaf.SerialNumber, p.revoked.installer.Leaf.SerialNumber} {
			if c.Cmp(serial) == 0 {
				return p.revokedAt, revocation.ReasonKeyCompromise, true
			}
		}
		return time.Time{}, 0, false
	}
	return &revocation.Responder{
		Issuer: p.root, Key: p.rootKey, Now: s.now,
		Known:   func(serial *big.Int) bool { return p.issued[serial.Text(16)] },
		Revoked: revoked,
		Serials: func() []*big.Int {
			return []*big.Int{p.revoked.developer.Leaf.SerialNumber, p.revoked.windows.Leaf.SerialNumber, p.revoked.installer.Leaf.SerialNumber}
		},
	}
}
