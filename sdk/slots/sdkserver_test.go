package slots

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// sdkServer is a local counterpart of the server's /v1/sdk/ endpoints for
// the SDK's tests. It speaks the wire format of sdk/xpromo/sdkwire.go and
// docs/protocol.md and verifies everything with sdk/attribution as the
// reference server does: the offer MAC, the publisher's click signature,
// the advertiser's countersignature and its binding to the token, the
// heartbeat signature, the fill request's signature, every time check with the protocol's skew, single
// use per jti. It also checks what any request must carry: POST, JSON,
// an Idempotency-Key on every report (same key and body replay the first
// answer) and none on a fill (it stores nothing), and no
// Authorization header (the SDK never holds the api_key).
type sdkServer struct {
	t   testing.TB
	srv *httptest.Server

	mu    sync.Mutex
	now   time.Time
	keys  map[string]ed25519.PublicKey // kid → key
	owner map[string]string            // kid → app id
	mac   attribution.MACKeys
	macID string
	// down makes every request fail with 503; dropAfter processes the
	// next request, then drops the connection instead of answering.
	down      bool
	dropAfter int
	noFill    bool
	// offerFor overrides fill offers (to test the SDK's checks).
	offerFor func(*attribution.Offer)

	idem       map[string]idemEntry
	chains     map[string]*testChain // by jti
	byHash     map[string]*testChain // by th
	requests   []recorded
	heartbeats []attribution.HeartbeatClaims
	fills      []attribution.FillClaims // the signed fill requests accepted
}

type idemEntry struct {
	sum  [32]byte
	code int
	body []byte
}

type recorded struct {
	Path, Key string
	Body      []byte
}

type testChain struct {
	id         string
	click      *attribution.Click
	state      xpromo.ChainState
	install    *attribution.Install
	installed  time.Time
	lastSeq    int64
	clickCalls int
}

const testDownloadURL = "https://dl.example.com/Notes.dmg?v=2"

func newSDKServer(t testing.TB) *sdkServer {
	k := testKeys(t)
	s := &sdkServer{
		t:     t,
		now:   testClickAt.Add(-time.Minute),
		keys:  map[string]ed25519.PublicKey{k.publisher.ID: k.publisher.Public, k.advertiser.ID: k.advertiser.Public},
		owner: map[string]string{k.publisher.ID: "app_pub", k.advertiser.ID: "app_adv"},
		mac:   attribution.MACKeys{k.mac.ID: k.mac.Secret},
		macID: k.mac.ID,
		idem:  map[string]idemEntry{}, chains: map[string]*testChain{}, byHash: map[string]*testChain{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sdkServer) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *sdkServer) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

func (s *sdkServer) set(f func(s *sdkServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *sdkServer) recorded(path string) []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []recorded
	for _, r := range s.requests {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// fillsSent is a copy of the signed fill requests the server accepted.
func (s *sdkServer) fillsSent() []attribution.FillClaims {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attribution.FillClaims(nil), s.fills...)
}

// heartbeatsSent is a copy of the heartbeats the server accepted, in order.
func (s *sdkServer) heartbeatsSent() []attribution.HeartbeatClaims {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attribution.HeartbeatClaims(nil), s.heartbeats...)
}

func (s *sdkServer) chain(jti string) *testChain {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chains[jti]
}

func writeJSON(w http.ResponseWriter, code int, v any) []byte {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
	return b
}

func apiError(code string) xpromo.ErrorResponse {
	return xpromo.ErrorResponse{Error: xpromo.ErrorBody{Code: code, Message: code}}
}

func (s *sdkServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		writeJSON(w, 503, apiError(xpromo.CodeUnavailable))
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/sdk/") {
		writeJSON(w, 404, apiError(xpromo.CodeNotFound))
		return
	}
	if r.Header.Get("Authorization") != "" {
		s.t.Errorf("%s carries an Authorization header: the SDK must not hold an api_key", r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.t.Errorf("%s Content-Type %q", r.URL.Path, ct)
	}
	key := r.Header.Get("Idempotency-Key")
	if (key == "") != (r.URL.Path == "/v1/sdk/fill") {
		s.t.Errorf("%s with Idempotency-Key %q: every report carries one, a fill none", r.URL.Path, key)
	}
	body, _ := io.ReadAll(r.Body)
	s.requests = append(s.requests, recorded{r.URL.Path, key, body})
	sum := sha256.Sum256(append([]byte(r.URL.Path+"\x00"), body...))
	if e, ok := s.idem[key]; ok && key != "" {
		if e.sum != sum {
			writeJSON(w, 422, apiError(xpromo.CodeIdempotencyKeyReused))
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.code)
		w.Write(e.body)
		return
	}
	rec := httptest.NewRecorder()
	s.route(rec, r.URL.Path, body)
	if key != "" {
		s.idem[key] = idemEntry{sum, rec.Code, rec.Body.Bytes()}
	}
	if s.dropAfter > 0 {
		s.dropAfter--
		// Processed, but the answer is lost on the way back.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// decode decodes a request body strictly; a bad one fails the test and is
// answered 400.
func (s *sdkServer) decode(w http.ResponseWriter, what string, body []byte, v any) bool {
	if err := decodeStrict(body, v); err != nil {
		s.t.Errorf("bad %s request %s: %v", what, body, err)
		writeJSON(w, 400, apiError("invalid_request"))
		return false
	}
	return true
}

// decodeStrict decodes one JSON object with no unknown members.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

func (s *sdkServer) route(w http.ResponseWriter, path string, body []byte) {
	fraud := func(err error) { writeJSON(w, 403, apiError(attribution.Code(err))) }
	switch path {
	case "/v1/sdk/fill":
		var req xpromo.FillRequest
		if err := decodeStrict(body, &req); err != nil || req.AppID != "app_pub" || !req.Slot.Valid() || !req.Platform.Valid() {
			s.t.Errorf("bad fill request %s (%v)", body, err)
			writeJSON(w, 400, apiError("invalid_request"))
			return
		}
		if !validDeviceID(req.DeviceID) {
			s.t.Errorf("fill without a device id: %s", body)
		}
		fill, err := attribution.ParseFill(req.Signature)
		if err != nil {
			fraud(err)
			return
		}
		if err := s.verifySigned(fill.Header.Kid, req.AppID, attribution.ErrBadSignature,
			func(key ed25519.PublicKey) error {
				if err := fill.Verify(key); err != nil {
					return err
				}
				return fill.Covers(req.Claims(time.Time{}))
			}, fill.CheckTime); err != nil {
			fraud(err)
			return
		}
		s.fills = append(s.fills, fill.Claims)
		if s.noFill {
			reason := xpromo.NoFillNoCampaign
			writeJSON(w, 200, xpromo.FillResponse{NoFillReason: &reason})
			return
		}
		nonce, _ := attribution.NewNonce(nil)
		o := attribution.Offer{Nonce: nonce, Publisher: req.AppID, Advertiser: "app_adv", CampaignID: "cmp_1",
			Category: "productivity", Platform: string(req.Platform), PriceCents: 250, OfferedAt: s.now.Unix()}
		if s.offerFor != nil {
			s.offerFor(&o)
		}
		o, err = attribution.SealOffer(attribution.MACKey{ID: s.macID, Secret: s.mac[s.macID]}, o)
		if err != nil {
			s.t.Errorf("seal offer: %v", err)
			writeJSON(w, 500, apiError(xpromo.CodeInternal))
			return
		}
		exp := o.Expires()
		writeJSON(w, 200, xpromo.FillResponse{Filled: true, Offer: &o, ExpiresAt: &exp, Creative: &xpromo.Creative{
			Title: "Notes", IconURL: "https://cdn.example.com/notes.png", Description: "Plain-text notes, synced.",
			CTA: "Download", SponsoredLabel: xpromo.SponsoredLabel, DownloadURL: testDownloadURL, AdvertiserAppID: "app_adv",
		}})
	case pathClick:
		var req xpromo.ClickRequest
		if !s.decode(w, "click", body, &req) {
			return
		}
		click, err := s.verifyClick(req.Token)
		if err != nil {
			fraud(err)
			return
		}
		c := s.chains[click.Claims.Nonce]
		switch {
		case c == nil:
			c = &testChain{id: fmt.Sprintf("ch_%d", len(s.chains)+1), click: click, state: xpromo.ChainClicked}
			s.chains[click.Claims.Nonce], s.byHash[click.Hash()] = c, c
		case c.click.Raw != req.Token:
			writeJSON(w, 403, apiError(string(xpromo.FraudTokenReused)))
			return
		}
		c.clickCalls++
		writeJSON(w, 200, xpromo.ClickResponse{ChainID: c.id, ExpiresAt: click.Claims.ExpiresTime()})
	case pathInstall:
		var req xpromo.InstallRequest
		if !s.decode(w, "install", body, &req) {
			return
		}
		click, err := s.verifyClick(req.Token)
		if err != nil {
			fraud(err)
			return
		}
		in, err := attribution.ParseInstall(req.Countersignature)
		if err != nil {
			fraud(err)
			return
		}
		if err := s.verifySigned(in.Header.Kid, in.Claims.AppID, attribution.ErrBadCountersignature,
			func(key ed25519.PublicKey) error { return in.Verify(key, click) },
			func(now time.Time, skew time.Duration) error { return in.CheckTime(click, now, skew) },
		); err != nil {
			fraud(err)
			return
		}
		c := s.chains[click.Claims.Nonce]
		if c == nil { // the click report was lost: the claim carries the token
			c = &testChain{id: fmt.Sprintf("ch_%d", len(s.chains)+1), click: click}
			s.chains[click.Claims.Nonce], s.byHash[click.Hash()] = c, c
		}
		if c.install != nil {
			if c.install.Raw == req.Countersignature { // the same claim again: a retry
				writeJSON(w, 200, xpromo.InstallResponse{ChainID: c.id, State: c.state})
				return
			}
			writeJSON(w, 403, apiError(string(xpromo.FraudTokenReused)))
			return
		}
		c.install, c.installed, c.state = in, s.now, xpromo.ChainInstalled
		writeJSON(w, 200, xpromo.InstallResponse{ChainID: c.id, State: c.state})
	case pathHeartbeat:
		var req xpromo.HeartbeatRequest
		if !s.decode(w, "heartbeat", body, &req) {
			return
		}
		hb, err := attribution.ParseHeartbeat(req.Heartbeat)
		if err != nil {
			fraud(err)
			return
		}
		if err := s.verifySigned(hb.Header.Kid, hb.Claims.AppID, attribution.ErrBadSignature, hb.Verify, hb.CheckTime); err != nil {
			fraud(err)
			return
		}
		c := s.byHash[hb.Claims.TokenHash]
		if c == nil || c.install == nil || c.install.Claims.AppID != hb.Claims.AppID || c.install.Claims.DeviceID != hb.Claims.DeviceID {
			writeJSON(w, 404, apiError(xpromo.CodeNotFound))
			return
		}
		if hb.Claims.Seq <= c.lastSeq {
			writeJSON(w, 403, apiError(string(xpromo.FraudTokenReused)))
			return
		}
		c.lastSeq = hb.Claims.Seq
		s.heartbeats = append(s.heartbeats, hb.Claims)
		if age := s.now.Sub(c.installed); c.state == xpromo.ChainInstalled && age >= 48*time.Hour && age < 72*time.Hour {
			c.state = xpromo.ChainActivated48h
		}
		writeJSON(w, 200, xpromo.HeartbeatResponse{ChainID: c.id, State: c.state})
	default:
		writeJSON(w, 404, apiError(xpromo.CodeNotFound))
	}
}

// verifyClick checks a click token as the server does: structure, the
// publisher's registered key and signature, the offer MAC, the times.
func (s *sdkServer) verifyClick(token string) (*attribution.Click, error) {
	click, err := attribution.ParseClick(token)
	if err != nil {
		return nil, err
	}
	err = s.verifySigned(click.Header.Kid, click.Claims.Publisher, attribution.ErrBadSignature, click.Verify,
		func(now time.Time, skew time.Duration) error {
			if err := s.mac.Verify(click.Claims.Offer); err != nil {
				return err
			}
			return click.CheckTime(now, skew)
		})
	if err != nil {
		return nil, err
	}
	return click, nil
}

// verifySigned checks a message signed by an app as the server does, in
// order: the key kid is registered to appID (else wrongOwner), verify
// holds under that key, and checkTime holds at the server's clock with
// the protocol's skew.
func (s *sdkServer) verifySigned(kid, appID string, wrongOwner error,
	verify func(ed25519.PublicKey) error, checkTime func(now time.Time, skew time.Duration) error) error {
	if s.owner[kid] != appID {
		return wrongOwner
	}
	if err := verify(s.keys[kid]); err != nil {
		return err
	}
	return checkTime(s.now, attribution.DefaultClockSkew)
}
