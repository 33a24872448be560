package attribution

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Test fixtures: deterministic keys (seed = SHA-256 of a label), a fixed MAC
// secret, a fixed clock. testdata/vectors.json publishes the same values.

func seedOf(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

var (
	pubKeys = mustPair(seedOf("xpromo test publisher sdk key"))
	advKeys = mustPair(seedOf("xpromo test advertiser sdk key"))
	macKey  = MACKey{ID: "mk_2026_11", Secret: seedOf("xpromo test offer mac secret")}
	t0      = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
)

func mustPair(seed []byte) KeyPair {
	kp, err := KeyPairFromPrivate(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		panic(err)
	}
	return kp
}

func testOffer(t testing.TB) Offer {
	t.Helper()
	o, err := SealOffer(macKey, Offer{
		Nonce:      b64(seedOf("nonce")[:16]),
		Publisher:  "app_01jd3m5q0000publisher00",
		Advertiser: "app_01jd3m5q000advertiser00",
		CampaignID: "cmp_01jd3m5q0000campaign000",
		Category:   "productivity",
		Platform:   PlatformMac,
		PriceCents: 140,
		OfferedAt:  t0.Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// clickAt signs a click on the test offer at t0 + after.
func clickAt(t testing.TB, after time.Duration) (string, ClickClaims) {
	t.Helper()
	claims := NewClickClaims(testOffer(t), t0.Add(after))
	tok, err := SignClick(pubKeys.Private, pubKeys.ID, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok, claims
}

// resign signs arbitrary header and payload JSON with priv: a well-signed
// token whose content the parser must judge on its own.
func resign(priv ed25519.PrivateKey, header, payload string) string {
	return signCompact(priv, []byte(header), []byte(payload))
}

func header(alg, kid, typ string) string {
	b, _ := json.Marshal(Header{Alg: alg, Kid: kid, Typ: typ})
	return string(b)
}

// segments splits a compact token.
func segments(tok string) (h, p, s string) {
	parts := strings.Split(tok, ".")
	return parts[0], parts[1], parts[2]
}

// decodeSeg decodes a segment of a token the test made.
func decodeSeg(t testing.TB, s string) []byte {
	t.Helper()
	b, ok := unb64(s)
	if !ok {
		t.Fatalf("segment %q does not decode", s)
	}
	return b
}

// wantErr asserts err is an *Error with code and reason.
func wantErr(t testing.TB, err error, code string, reason Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s (%s)", code, reason)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if e.Code != code || e.Reason != reason {
		t.Fatalf("err = %v, want %s (%s)", err, code, reason)
	}
}

// editJSON decodes a JSON object, applies edit and encodes it again.
func editJSON(t testing.TB, data []byte, edit func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
