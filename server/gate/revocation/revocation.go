// Package revocation asks whether the certificates of a verified signing
// chain are revoked: OCSP (RFC 6960) at the certificate's AIA responder,
// falling back to the CRL (RFC 5280) at its distribution point when there
// is no responder or it gives no usable answer. Every answer's signature is
// checked (an OCSP answer signed by the issuer, or by a responder the
// issuer delegated with the OCSP-signing EKU; a CRL signed by the issuer),
// and its thisUpdate/nextUpdate against the client's clock. Usable answers
// are cached until their nextUpdate, in bounded caches.
//
// The client only gathers answers; Decide applies the gate's rule to them
// (docs/gate.md, "Revocation").
package revocation

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/crypto/ocsp"
)

// Status is what is known of one certificate, or of a chain.
type Status string

const (
	Good    Status = "good"
	Revoked Status = "revoked"
	// Unknown: the certificate names a responder or CRL, but none gave a
	// usable answer (unreachable, an error, a bad signature, stale, or the
	// responder does not know the certificate).
	Unknown Status = "unknown"
	// Unchecked: the certificate names neither, or checking is off.
	Unchecked Status = "unchecked"
)

// Sources of an answer.
const (
	SourceOCSP = "ocsp"
	SourceCRL  = "crl"
	SourceNone = "none"
)

// Limits on what a responder or distribution point may send.
const (
	// MaxOCSPBytes bounds an OCSP answer: a real one (a status, a
	// signature, at most a delegated responder's certificate) is 1-5 KiB.
	MaxOCSPBytes = 64 << 10
	// MaxCRLBytes bounds a CRL. Authenticode CAs' CRLs run to a few MiB.
	MaxCRLBytes = 32 << 20
	// maxCacheAge bounds how long an answer is kept, whatever its
	// nextUpdate says; an answer without nextUpdate is kept noNextUpdateAge.
	maxCacheAge     = 24 * time.Hour
	noNextUpdateAge = time.Hour
	// maxAgeWithoutNextUpdate: an answer without nextUpdate is usable only
	// this long after its thisUpdate.
	maxAgeWithoutNextUpdate = 24 * time.Hour
	// clockSkew is tolerated between the answer's clock and ours.
	clockSkew = 5 * time.Minute
	// maxChecked bounds the certificates of one chain asked about.
	maxChecked = 8
)

// CRLReason codes (RFC 5280, 5.3.1).
const (
	ReasonUnspecified          = 0
	ReasonKeyCompromise        = 1
	ReasonCACompromise         = 2
	ReasonAffiliationChanged   = 3
	ReasonSuperseded           = 4
	ReasonCessationOfOperation = 5
	ReasonCertificateHold      = 6
	ReasonRemoveFromCRL        = 8
	ReasonPrivilegeWithdrawn   = 9
	ReasonAACompromise         = 10
)

// ReasonName is the RFC 5280 name of a CRLReason code.
func ReasonName(code int) string {
	switch code {
	case ReasonUnspecified:
		return "unspecified"
	case ReasonKeyCompromise:
		return "keyCompromise"
	case ReasonCACompromise:
		return "cACompromise"
	case ReasonAffiliationChanged:
		return "affiliationChanged"
	case ReasonSuperseded:
		return "superseded"
	case ReasonCessationOfOperation:
		return "cessationOfOperation"
	case ReasonCertificateHold:
		return "certificateHold"
	case ReasonRemoveFromCRL:
		return "removeFromCRL"
	case ReasonPrivilegeWithdrawn:
		return "privilegeWithdrawn"
	case ReasonAACompromise:
		return "aACompromise"
	}
	return fmt.Sprintf("reason %d", code)
}

// Answer is what is known of one certificate of the chain.
type Answer struct {
	Subject string // the certificate's subject (RFC 4514)
	Status  Status
	Source  string // SourceOCSP, SourceCRL or SourceNone
	URL     string // the responder or CRL that answered (or was last asked)
	// Revoked only: the CRLReason (ReasonUnspecified when the answer gives
	// none) and the revocation time.
	Reason    int
	RevokedAt time.Time
	// Detail says why the status is Unknown (every source tried), or is
	// empty.
	Detail string
}

// Client asks responders and distribution points. HTTP must be a
// server/outbound client (its MaxResponseBytes at least MaxCRLBytes+1);
// its zero caches are usable.
type Client struct {
	HTTP *http.Client
	Now  func() time.Time

	ocspCache cache[ocspAnswer]
	crlCache  cache[*crlAnswer]
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Check asks about each certificate of chain (leaf first, each followed by
// its issuer) except the last, the root: the gate trusts its roots by
// configuration. At most maxChecked are asked about.
func (c *Client) Check(ctx context.Context, chain []*x509.Certificate) []Answer {
	var out []Answer
	for i := 0; i+1 < len(chain) && i < maxChecked; i++ {
		out = append(out, c.checkOne(ctx, chain[i], chain[i+1]))
	}
	return out
}

func (c *Client) checkOne(ctx context.Context, cert, issuer *x509.Certificate) Answer {
	a := Answer{Subject: cert.Subject.String(), Status: Unchecked, Source: SourceNone}
	var why []string
	for _, u := range httpURLs(cert.OCSPServer) {
		a.URL = u
		got, err := c.ocsp(ctx, u, cert, issuer)
		if err == nil {
			got.Subject = cert.Subject.String()
			return got
		}
		why = append(why, fmt.Sprintf("OCSP %s: %v", u, err))
	}
	for _, u := range httpURLs(cert.CRLDistributionPoints) {
		a.URL = u
		got, err := c.crl(ctx, u, cert, issuer)
		if err == nil {
			got.Subject = cert.Subject.String()
			return got
		}
		why = append(why, fmt.Sprintf("CRL %s: %v", u, err))
	}
	if len(why) > 0 {
		a.Status, a.Detail = Unknown, joinDetails(why)
		if ctx.Err() != nil {
			a.Detail = "cancelled: " + a.Detail
		}
	}
	return a
}

func joinDetails(why []string) string {
	var b bytes.Buffer
	for i, w := range why {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(w)
	}
	return b.String()
}

// httpURLs keeps the http and https URLs of a certificate's extension (an
// ldap: distribution point is not fetched), at most two.
func httpURLs(raw []string) []string {
	var out []string
	for _, s := range raw {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		out = append(out, s)
		if len(out) == 2 {
			break
		}
	}
	return out
}

// errAnswerTooLarge: a response body over its kind's limit.
var errAnswerTooLarge = errors.New("the answer is over the size limit")

// fetch sends req and reads at most limit bytes of a 200 answer.
func (c *Client) fetch(req *http.Request, limit int64) ([]byte, error) {
	if c.HTTP == nil {
		return nil, errors.New("no HTTP client is configured")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, errAnswerTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, errAnswerTooLarge
	}
	return body, nil
}

// fresh checks an answer's thisUpdate and nextUpdate against now.
func fresh(now, thisUpdate, nextUpdate time.Time) error {
	switch {
	case thisUpdate.After(now.Add(clockSkew)):
		return fmt.Errorf("its thisUpdate %s is in the future", thisUpdate.UTC().Format(time.RFC3339))
	case !nextUpdate.IsZero() && nextUpdate.Before(now.Add(-clockSkew)):
		return fmt.Errorf("it is stale: its nextUpdate %s has passed", nextUpdate.UTC().Format(time.RFC3339))
	case nextUpdate.IsZero() && thisUpdate.Before(now.Add(-maxAgeWithoutNextUpdate)):
		return fmt.Errorf("it is stale: it has no nextUpdate and its thisUpdate %s is over a day old", thisUpdate.UTC().Format(time.RFC3339))
	}
	return nil
}

// expiry is when a cached answer is dropped.
func expiry(now, nextUpdate time.Time) time.Time {
	limit := now.Add(maxCacheAge)
	if nextUpdate.IsZero() {
		return now.Add(noNextUpdateAge)
	}
	if nextUpdate.Before(limit) {
		return nextUpdate
	}
	return limit
}

// issuerKey identifies an issuer in cache keys: its certificate's SHA-256.
func issuerKey(issuer *x509.Certificate) string {
	s := sha256.Sum256(issuer.Raw)
	return hex.EncodeToString(s[:])
}

// ---- OCSP

type ocspAnswer struct {
	answer Answer
}

func (c *Client) ocsp(ctx context.Context, u string, cert, issuer *x509.Certificate) (Answer, error) {
	now := c.now()
	key := u + "|" + issuerKey(issuer) + "|" + cert.SerialNumber.Text(16)
	if hit, ok := c.ocspCache.get(key, now); ok {
		return hit.answer, nil
	}
	reqDER, err := ocsp.CreateRequest(cert, issuer, &ocsp.RequestOptions{Hash: crypto.SHA1})
	if err != nil {
		return Answer{}, fmt.Errorf("making the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(reqDER))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/ocsp-request")
	req.Header.Set("Accept", "application/ocsp-response")
	body, err := c.fetch(req, MaxOCSPBytes)
	if err != nil {
		return Answer{}, err
	}
	resp, err := ParseOCSP(body, cert, issuer, now)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Source: SourceOCSP, URL: u}
	switch resp.Status {
	case ocsp.Good:
		a.Status = Good
	case ocsp.Revoked:
		a.Status, a.Reason, a.RevokedAt = Revoked, resp.RevocationReason, resp.RevokedAt.UTC()
	default:
		// The responder does not know the certificate: not an answer.
		return Answer{}, errors.New("the responder says unknown")
	}
	c.ocspCache.put(key, ocspAnswer{answer: a}, expiry(now, resp.NextUpdate), maxOCSPCached)
	return a, nil
}

// ParseOCSP parses an OCSP answer about cert and checks it: its signature
// (by issuer, or by a responder certificate issuer signed that has the
// OCSP-signing EKU and is valid at now), that it is about cert's serial,
// and its freshness at now.
func ParseOCSP(der []byte, cert, issuer *x509.Certificate, now time.Time) (*ocsp.Response, error) {
	if len(der) > MaxOCSPBytes {
		return nil, errAnswerTooLarge
	}
	resp, err := ocsp.ParseResponseForCert(der, cert, issuer)
	if err != nil {
		var re ocsp.ResponseError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("the responder answered %q", re.Status.String())
		}
		return nil, fmt.Errorf("the answer does not parse or its signature does not verify: %w", err)
	}
	if rc := resp.Certificate; rc != nil && !bytes.Equal(rc.Raw, issuer.Raw) {
		// A delegated responder: x/crypto checked issuer signed it; the
		// delegation is its OCSP-signing EKU (RFC 6960, 4.2.2.2).
		if !hasOCSPSigning(rc) {
			return nil, fmt.Errorf("the answer is signed by %q, which is not the issuer and has no OCSP-signing EKU", rc.Subject.String())
		}
		if now.Before(rc.NotBefore) || now.After(rc.NotAfter) {
			return nil, fmt.Errorf("the responder certificate %q is not valid now", rc.Subject.String())
		}
	}
	if resp.SerialNumber == nil || resp.SerialNumber.Cmp(cert.SerialNumber) != 0 {
		return nil, errors.New("the answer is about another certificate")
	}
	if err := fresh(now, resp.ThisUpdate, resp.NextUpdate); err != nil {
		return nil, err
	}
	return resp, nil
}

func hasOCSPSigning(c *x509.Certificate) bool {
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageOCSPSigning {
			return true
		}
	}
	return false
}

// ---- CRL

// crlAnswer is a checked CRL's revoked serials.
type crlAnswer struct {
	revoked map[string]x509.RevocationListEntry // by serial, hex
}

func (c *Client) crl(ctx context.Context, u string, cert, issuer *x509.Certificate) (Answer, error) {
	now := c.now()
	key := u + "|" + issuerKey(issuer)
	list, ok := c.crlCache.get(key, now)
	if !ok {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return Answer{}, err
		}
		body, err := c.fetch(req, MaxCRLBytes)
		if err != nil {
			return Answer{}, err
		}
		rl, err := ParseCRL(body, issuer, now)
		if err != nil {
			return Answer{}, err
		}
		list = &crlAnswer{revoked: make(map[string]x509.RevocationListEntry, len(rl.RevokedCertificateEntries))}
		for _, e := range rl.RevokedCertificateEntries {
			if e.SerialNumber != nil {
				list.revoked[e.SerialNumber.Text(16)] = e
			}
		}
		c.crlCache.put(key, list, expiry(now, rl.NextUpdate), maxCRLsCached)
	}
	a := Answer{Source: SourceCRL, URL: u, Status: Good}
	if e, ok := list.revoked[cert.SerialNumber.Text(16)]; ok {
		a.Status, a.Reason, a.RevokedAt = Revoked, e.ReasonCode, e.RevocationTime.UTC()
		if e.ReasonCode == ReasonRemoveFromCRL {
			a.Status, a.Reason, a.RevokedAt = Good, 0, time.Time{} // un-held (RFC 5280, 5.3.1)
		}
	}
	return a, nil
}

// oidDeltaCRLIndicator marks a delta CRL, which lists only changes.
var oidDeltaCRLIndicator = asn1.ObjectIdentifier{2, 5, 29, 27}

// ParseCRL parses a CRL and checks it: issued and signed by issuer, a
// complete (not delta) CRL, fresh at now.
func ParseCRL(der []byte, issuer *x509.Certificate, now time.Time) (*x509.RevocationList, error) {
	if len(der) > MaxCRLBytes {
		return nil, errAnswerTooLarge
	}
	rl, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, fmt.Errorf("the CRL does not parse: %w", err)
	}
	if !bytes.Equal(rl.RawIssuer, issuer.RawSubject) {
		return nil, errors.New("the CRL is issued by another CA than the certificate's issuer")
	}
	if err := rl.CheckSignatureFrom(issuer); err != nil {
		return nil, fmt.Errorf("the CRL's signature does not verify with the issuer's key: %w", err)
	}
	for _, e := range rl.Extensions {
		if e.Id.Equal(oidDeltaCRLIndicator) {
			return nil, errors.New("a delta CRL, not a complete one")
		}
	}
	if err := fresh(now, rl.ThisUpdate, rl.NextUpdate); err != nil {
		return nil, err
	}
	return rl, nil
}
