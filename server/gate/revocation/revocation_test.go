package revocation

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/xpromo/xpromo/server/outbound"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var serial atomic.Int64

func issue(t testing.TB, tmpl *x509.Certificate, parent *ca, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(1000 + serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = now.AddDate(-1, 0, 0), now.AddDate(1, 0, 0)
	p, signer := tmpl, key
	if parent != nil {
		p, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newCA(t testing.TB, name string) *ca {
	k := newKey(t)
	c := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}, nil, k)
	return &ca{cert: c, key: k}
}

// world is a CA with a leaf whose AIA and CRLDP name a local HTTP server;
// handler answers there (the default: the CA's own Responder).
type world struct {
	ca       *ca
	leaf     *x509.Certificate
	srv      *httptest.Server
	handler  http.Handler
	requests atomic.Int64
	revoked  map[string]x509.RevocationListEntry
	resp     *Responder
	client   *Client
}

func newWorld(t testing.TB, withOCSP, withCRL bool) *world {
	w := &world{ca: newCA(t, "Test CA"), revoked: map[string]x509.RevocationListEntry{}}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		w.handler.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "Leaf", Organization: []string{"Acme"}},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	if withOCSP {
		tmpl.OCSPServer = []string{w.srv.URL + "/ocsp"}
	}
	if withCRL {
		tmpl.CRLDistributionPoints = []string{w.srv.URL + "/ca.crl"}
	}
	w.leaf = issue(t, tmpl, w.ca, newKey(t))
	w.resp = &Responder{Issuer: w.ca.cert, Key: w.ca.key, Now: func() time.Time { return now },
		Known: func(s *big.Int) bool { return s.Cmp(w.leaf.SerialNumber) == 0 },
		Revoked: func(s *big.Int) (time.Time, int, bool) {
			e, ok := w.revoked[s.Text(16)]
			return e.RevocationTime, e.ReasonCode, ok
		},
		Serials: func() []*big.Int {
			var out []*big.Int
			for _, e := range w.revoked {
				out = append(out, e.SerialNumber)
			}
			return out
		}}
	w.handler = w.resp
	w.client = &Client{HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true, Timeout: 10 * time.Second, MaxResponseBytes: MaxCRLBytes + 1}),
		Now: func() time.Time { return now }}
	return w
}

func (w *world) revoke(at time.Time, reason int) {
	w.revoked[w.leaf.SerialNumber.Text(16)] = x509.RevocationListEntry{SerialNumber: w.leaf.SerialNumber, RevocationTime: at, ReasonCode: reason}
}

func (w *world) check(t *testing.T) Answer {
	t.Helper()
	got := w.client.Check(context.Background(), []*x509.Certificate{w.leaf, w.ca.cert})
	if len(got) != 1 {
		t.Fatalf("%d answers", len(got))
	}
	return got[0]
}

func TestOCSPGoodAndCached(t *testing.T) {
	w := newWorld(t, true, true)
	a := w.check(t)
	if a.Status != Good || a.Source != SourceOCSP || a.URL != w.srv.URL+"/ocsp" {
		t.Fatalf("%+v", a)
	}
	w.check(t)
	if n := w.requests.Load(); n != 1 {
		t.Fatalf("%d requests; the answer is cached until nextUpdate", n)
	}
	// After nextUpdate (an hour), it is asked again.
	w.client.Now = func() time.Time { return now.Add(2 * time.Hour) }
	w.resp.Now = w.client.Now
	w.check(t)
	if n := w.requests.Load(); n != 2 {
		t.Fatalf("%d requests after nextUpdate", n)
	}
}

func TestOCSPRevoked(t *testing.T) {
	w := newWorld(t, true, false)
	at := now.Add(-48 * time.Hour).Truncate(time.Second)
	w.revoke(at, ReasonKeyCompromise)
	a := w.check(t)
	if a.Status != Revoked || a.Source != SourceOCSP || a.Reason != ReasonKeyCompromise || !a.RevokedAt.Equal(at) {
		t.Fatalf("%+v", a)
	}
}

func TestCRLFallback(t *testing.T) {
	// No OCSP URL: the CRL decides.
	w := newWorld(t, false, true)
	at := now.Add(-time.Hour).Truncate(time.Second)
	w.revoke(at, ReasonSuperseded)
	a := w.check(t)
	if a.Status != Revoked || a.Source != SourceCRL || a.Reason != ReasonSuperseded || !a.RevokedAt.Equal(at) {
		t.Fatalf("%+v", a)
	}
	// The CRL is cached.
	w.check(t)
	if n := w.requests.Load(); n != 1 {
		t.Fatalf("%d requests", n)
	}

	// A responder that does not answer: the CRL decides too.
	w2 := newWorld(t, true, true)
	w2.handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		w2.resp.ServeHTTP(rw, r)
	})
	if a := w2.check(t); a.Status != Good || a.Source != SourceCRL {
		t.Fatalf("%+v", a)
	}
}

func TestUnknownAnswers(t *testing.T) {
	other := newCA(t, "Other CA")
	cases := map[string]func(w *world) http.Handler{
		"unreachable": func(w *world) http.Handler { w.srv.Close(); return w.resp },
		"responder says unknown": func(w *world) http.Handler {
			w.resp.Known = func(*big.Int) bool { return false }
			return w.resp
		},
		"oversized answer": func(w *world) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.Write(bytes.Repeat([]byte{0x30}, MaxOCSPBytes+1))
			})
		},
		"wrong responder signature": func(w *world) http.Handler {
			return &Responder{Issuer: w.ca.cert, Key: other.key, Known: w.resp.Known, Revoked: w.resp.Revoked, Now: w.resp.Now}
		},
		"delegated responder without the OCSP-signing EKU": func(w *world) http.Handler {
			return delegated(t, w, false)
		},
		"stale nextUpdate": func(w *world) http.Handler {
			w.resp.Now = func() time.Time { return now.Add(-3 * time.Hour) }
			return w.resp
		},
		"thisUpdate in the future": func(w *world) http.Handler {
			w.resp.Now = func() time.Time { return now.Add(time.Hour) }
			return w.resp
		},
		"garbage": func(w *world) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.Write([]byte("<html>")) })
		},
		"responder error status": func(w *world) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.Write(ocsp.TryLaterErrorResponse) })
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, true, false)
			w.revoke(now.Add(-time.Hour), ReasonKeyCompromise) // a usable answer would say revoked
			w.handler = mk(w)
			a := w.check(t)
			if a.Status != Unknown || a.Detail == "" || !strings.Contains(a.Detail, "OCSP") {
				t.Fatalf("%+v", a)
			}
			if v := Decide([]Answer{a}, time.Time{}, false); v.Fail || v.Status != Unknown || !strings.HasPrefix(v.Detail, "soft-fail") {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}

// delegated answers with a responder certificate the CA issued, with or
// without the OCSP-signing EKU.
func delegated(t *testing.T, w *world, eku bool) http.Handler {
	k := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "Test CA OCSP responder"}, KeyUsage: x509.KeyUsageDigitalSignature}
	if eku {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageOCSPSigning}
	}
	rc := issue(t, tmpl, w.ca, k)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		der, err := ocsp.CreateResponse(w.ca.cert, rc, ocsp.Response{SerialNumber: w.leaf.SerialNumber, Status: ocsp.Good,
			ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour), Certificate: rc}, k)
		if err != nil {
			t.Error(err)
		}
		rw.Write(der)
	})
}

func TestDelegatedResponder(t *testing.T) {
	w := newWorld(t, true, false)
	w.handler = delegated(t, w, true)
	if a := w.check(t); a.Status != Good || a.Source != SourceOCSP {
		t.Fatalf("%+v", a)
	}
}

func TestCRLRefused(t *testing.T) {
	other := newCA(t, "Other CA")
	for name, mk := range map[string]func(w *world) http.Handler{
		"signed by another key": func(w *world) http.Handler {
			return &Responder{Issuer: w.ca.cert, Key: other.key, Revoked: w.resp.Revoked, Serials: w.resp.Serials, Now: w.resp.Now}
		},
		"issued by another CA": func(w *world) http.Handler {
			return &Responder{Issuer: other.cert, Key: other.key, Revoked: w.resp.Revoked, Serials: w.resp.Serials, Now: w.resp.Now}
		},
		"stale": func(w *world) http.Handler {
			w.resp.Now = func() time.Time { return now.Add(-3 * time.Hour) }
			return w.resp
		},
		"oversized": func(w *world) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.Write(make([]byte, MaxCRLBytes+1))
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, false, true)
			w.handler = mk(w)
			if a := w.check(t); a.Status != Unknown || !strings.Contains(a.Detail, "CRL") {
				t.Fatalf("%+v", a)
			}
		})
	}
}

func TestNoURLsIsUnchecked(t *testing.T) {
	w := newWorld(t, false, false)
	if a := w.check(t); a.Status != Unchecked || a.Source != SourceNone {
		t.Fatalf("%+v", a)
	}
	if w.requests.Load() != 0 {
		t.Fatal("asked something")
	}
}

// The client goes through server/outbound: loopback is refused unless a
// test allows it, and that is an unknown answer, not an error.
func TestThroughOutbound(t *testing.T) {
	w := newWorld(t, true, false)
	w.client.HTTP = outbound.New(outbound.Options{})
	if a := w.check(t); a.Status != Unknown || !strings.Contains(a.Detail, "not allowed") {
		t.Fatalf("%+v", a)
	}
}

func TestDecide(t *testing.T) {
	revokedAt := now.Add(-24 * time.Hour)
	before, after := revokedAt.Add(-time.Hour), revokedAt.Add(time.Hour)
	rev := func(reason int) Answer {
		return Answer{Subject: "CN=Leaf", Status: Revoked, Source: SourceOCSP, Reason: reason, RevokedAt: revokedAt}
	}
	good := Answer{Status: Good, Source: SourceOCSP}
	for _, c := range []struct {
		name        string
		answers     []Answer
		signed      time.Time
		timestamped bool
		fail        bool
		status      Status
	}{
		{"good", []Answer{good, good}, time.Time{}, false, false, Good},
		{"leaf unchecked", []Answer{{Status: Unchecked, Source: SourceNone}, good}, time.Time{}, false, false, Unchecked},
		{"unknown intermediate", []Answer{good, {Status: Unknown, Detail: "x"}}, time.Time{}, false, false, Unknown},
		{"keyCompromise, timestamped before", []Answer{rev(ReasonKeyCompromise)}, before, true, true, Revoked},
		{"unspecified, timestamped before", []Answer{rev(ReasonUnspecified)}, before, true, true, Revoked},
		{"cACompromise of the intermediate", []Answer{good, rev(ReasonCACompromise)}, before, true, true, Revoked},
		{"superseded, no timestamp", []Answer{rev(ReasonSuperseded)}, time.Time{}, false, true, Revoked},
		{"superseded, timestamped after", []Answer{rev(ReasonSuperseded)}, after, true, true, Revoked},
		{"superseded, timestamped before", []Answer{rev(ReasonSuperseded)}, before, true, false, Revoked},
		{"cessationOfOperation, timestamped before", []Answer{rev(ReasonCessationOfOperation)}, before, true, false, Revoked},
		{"revoked beats unknown", []Answer{{Status: Unknown}, rev(ReasonKeyCompromise)}, time.Time{}, false, true, Revoked},
		{"none asked", nil, time.Time{}, false, false, Unchecked},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(c.answers, c.signed, c.timestamped)
			if v.Fail != c.fail || v.Status != c.status {
				t.Fatalf("%+v", v)
			}
			if v.Status == Revoked && (v.Decisive.Status != Revoked || v.Detail == "") {
				t.Fatalf("%+v", v)
			}
		})
	}
}
