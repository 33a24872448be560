package attribution

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCanonicalOffer(t *testing.T) {
	o := testOffer(t)
	want := fmt.Sprintf(`{"jti":"%s","iss":"app_01jd3m5q0000publisher00","aud":"app_01jd3m5q000advertiser00",`+
		`"campaign_id":"cmp_01jd3m5q0000campaign000","category":"productivity","platform":"mac",`+
		`"price_cents":140,"oat":%d,"mac_kid":"mk_2026_11"}`, o.Nonce, t0.Unix())
	if got := string(CanonicalOffer(o)); got != want {
		t.Errorf("canonical offer:\n got %s\nwant %s", got, want)
	}
	if o.Expires() != t0.Add(OfferTTL) {
		t.Errorf("Expires = %v", o.Expires())
	}
}

// The MAC covers every member: the server recognises its own offers only.
func TestOfferMACCoversEveryMember(t *testing.T) {
	o := testOffer(t)
	if err := VerifyOfferMAC(macKey.Secret, o); err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(*Offer){
		"jti":         func(o *Offer) { o.Nonce = b64(bytes.Repeat([]byte{7}, 16)) },
		"iss":         func(o *Offer) { o.Publisher = "app_other" },
		"aud":         func(o *Offer) { o.Advertiser = "app_other" },
		"campaign_id": func(o *Offer) { o.CampaignID = "cmp_other" },
		"category":    func(o *Offer) { o.Category = "games" },
		"platform":    func(o *Offer) { o.Platform = PlatformWin },
		"price_cents": func(o *Offer) { o.PriceCents = 139 },
		"oat":         func(o *Offer) { o.OfferedAt++ },
		"mac_kid":     func(o *Offer) { o.MACKeyID = "mk_other" },
		"mac":         func(o *Offer) { o.MAC = b64(bytes.Repeat([]byte{1}, 32)) },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			x := o
			edit(&x)
			wantErr(t, VerifyOfferMAC(macKey.Secret, x), CodeBadSignature, ReasonBadMAC)
		})
	}
	wantErr(t, VerifyOfferMAC(bytes.Repeat([]byte{9}, 32), o), CodeBadSignature, ReasonBadMAC)
	bad := o
	bad.Platform = "linux"
	wantErr(t, VerifyOfferMAC(macKey.Secret, bad), CodeBadSignature, ReasonMalformed)
}

// A click signed by the publisher over an offer it altered carries a valid
// publisher signature and a MAC that no longer verifies.
func TestClickOverAlteredOffer(t *testing.T) {
	claims := NewClickClaims(testOffer(t), t0.Add(time.Minute))
	claims.PriceCents = 9999
	tok, err := SignClick(pubKeys.Private, pubKeys.ID, claims)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseClick(tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(pubKeys.Public); err != nil {
		t.Fatalf("publisher signature: %v", err)
	}
	wantErr(t, MACKeys{macKey.ID: macKey.Secret}.Verify(c.Claims.Offer), CodeBadSignature, ReasonBadMAC)
}

func TestMACKeysRotation(t *testing.T) {
	old := testOffer(t)
	next := MACKey{ID: "mk_2026_12", Secret: seedOf("next secret")}
	fresh, err := SealOffer(next, old)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.MACKeyID != next.ID || fresh.MAC == old.MAC {
		t.Fatalf("SealOffer did not re-seal: %+v", fresh)
	}
	both := MACKeys{macKey.ID: macKey.Secret, next.ID: next.Secret}
	for _, o := range []Offer{old, fresh} {
		if err := both.Verify(o); err != nil {
			t.Errorf("%s: %v", o.MACKeyID, err)
		}
	}
	retired := MACKeys{next.ID: next.Secret}
	wantErr(t, retired.Verify(old), CodeBadSignature, ReasonUnknownMACKey)
	// A forger naming a key id cannot pass off one key's MAC as another's.
	swapped := old
	swapped.MACKeyID = next.ID
	wantErr(t, both.Verify(swapped), CodeBadSignature, ReasonBadMAC)
}

func TestSealOfferRefusesBadInput(t *testing.T) {
	o := testOffer(t)
	if _, err := SealOffer(MACKey{ID: "k", Secret: make([]byte, MinMACSecretSize-1)}, o); err == nil {
		t.Error("sealed with a short secret")
	}
	if _, err := SealOffer(MACKey{ID: "bad id", Secret: macKey.Secret}, o); err == nil {
		t.Error("sealed with a bad key id")
	}
	o.PriceCents = 0
	if _, err := SealOffer(macKey, o); err == nil {
		t.Error("sealed a free offer")
	}
}

func TestNewNonce(t *testing.T) {
	n, err := NewNonce(nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewNonce(nil)
	if b, ok := unb64(n); !ok || len(b) != NonceSize || n == m {
		t.Errorf("nonces %q %q", n, m)
	}
	fixed, _ := NewNonce(bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	if fixed != "_____________________w" {
		t.Errorf("nonce of ff×16 = %q", fixed)
	}
	if _, err := NewNonce(strings.NewReader("short")); err == nil {
		t.Error("nonce from a short reader")
	}
}

func TestErrorHelpers(t *testing.T) {
	err := fmt.Errorf("claim: %w", fail(CodeTokenExpired, ReasonOfferLapsed, "late"))
	if Code(err) != CodeTokenExpired || ReasonOf(err) != ReasonOfferLapsed {
		t.Errorf("Code/ReasonOf = %q %q", Code(err), ReasonOf(err))
	}
	if !errors.Is(err, ErrTokenExpired) || errors.Is(err, ErrBadSignature) {
		t.Error("errors.Is on code")
	}
	if !errors.Is(err, &Error{Code: CodeTokenExpired, Reason: ReasonOfferLapsed}) ||
		errors.Is(err, &Error{Code: CodeTokenExpired, Reason: ReasonExpired}) {
		t.Error("errors.Is on code and reason")
	}
	if Code(errors.New("x")) != "" || Code(nil) != "" || ReasonOf(nil) != "" {
		t.Error("non-attribution errors have no code")
	}
	if got := err.Error(); got != "claim: attribution: fraud_token_expired (offer_lapsed): late" {
		t.Errorf("Error() = %q", got)
	}
}
