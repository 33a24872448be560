package attribution

import (
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeFlat is the differential test of decodeObject's one pass: on
// any data, decodeObject (one pass, falling back to the walk) and
// decodeObjectWalk (the decoder as it was) accept and refuse alike, with
// the same message, and decode to the same claims.
func FuzzDecodeFlat(f *testing.F) {
	for _, seed := range []string{
		`{"alg":"Ed25519","kid":"sdk_1","typ":"xpromo-fill+jwt"}`,
		`{"app":"app_1","slot":"s","platform":"mac","dev":"","loc":"en","iat":1764000000}`,
		`{"app":"a","slot":"s","platform":"mac","dev":"","loc":"en","iat":-0}`,
		`{"app":"a","slot":"s","platform":"mac","dev":"","loc":"en","iat":1.5}`,
		`{"app":"a","slot":"s","platform":"mac","dev":"","loc":"en","iat":"1"}`,
		`{"app":"a","app":"b","slot":"s","platform":"mac","dev":"","loc":"en","iat":1}`,
		`{"APP":"a","slot":"s","platform":"mac","dev":"","loc":"en","iat":1}`,
		`{"app":"\u0061","slot":"s","platform":"mac","dev":"","loc":"en","iat":1}`,
		`{"alg":"Ed25519","kid":"sdk_1"}`, `{"alg":"Ed25519","kid":"sdk_1","typ":"t"} x`, `{"alg":1,"kid":"k","typ":"t"}`,
		`{"jti":"n","iss":"app_p","aud":"app_a","campaign_id":"cmp_1","category":"c","platform":"mac","price_cents":400,"oat":1764000000,"mac_kid":"k","mac":"m","iat":1764000010,"exp":1764000910}`,
		`{"jti":"n","iss":"app_p","aud":"app_a","campaign_id":"cmp_1","category":"c","platform":"mac","price_cents":400,"oat":1764000000,"mac_kid":"k","mac":"m","iat":1764000010,"exp":1764000910,"jti":"m"}`,
		`{"th":"h","dev":"d","cat":1764000040,"app":"app_a"}`,
		`{"iat":99999999999999999999}`, ` { } `, `[]`, "{\"alg\":\"\xff\"}", `{"alg":{"a":1,"a":2},"kid":"k","typ":"t"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		for _, c := range []struct {
			dst   func() any
			names []string
		}{
			{func() any { return new(Header) }, []string{"alg", "kid", "typ"}},
			{func() any { return new(FillClaims) }, fillClaimNames},
			{func() any { return new(FillClaims) }, []string{"app", "slot"}},
			{func() any { return new(ClickClaims) }, clickClaimNames},
			{func() any { return new(InstallClaims) }, installClaimNames},
		} {
			want, got := c.dst(), c.dst()
			wantErr := decodeObjectWalk([]byte(data), want, c.names...)
			gotErr := decodeObject([]byte(data), got, c.names...)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("%T %q: walk %v, decodeObject %v", want, data, wantErr, gotErr)
			}
			if wantErr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%T %q: walk decoded %+v, decodeObject %+v", want, data, want, got)
			}
		}
	})
}

// A fill token's header and claims must take the one pass, or the
// optimisation is silently gone.
func TestDecodeFlatTakesFillTokens(t *testing.T) {
	var h Header
	if !decodeFlat([]byte(`{"alg":"Ed25519","kid":"sdk_1","typ":"xpromo-fill+jwt"}`), &h, []string{"alg", "kid", "typ"}) || h.Kid != "sdk_1" {
		t.Fatalf("header: %+v", h)
	}
	var c FillClaims
	if !decodeFlat([]byte(`{"app":"app_1","slot":"s","platform":"mac","dev":"","loc":"en","iat":1764000000}`), &c, fillClaimNames) || c.IssuedAt != 1764000000 || c.AppID != "app_1" {
		t.Fatalf("claims: %+v", c)
	}
}

// So must a click's claims (an embedded Offer) and an install's.
func TestDecodeFlatTakesClaimTokens(t *testing.T) {
	var c ClickClaims
	if !decodeFlat([]byte(`{"jti":"n","iss":"app_p","aud":"app_a","campaign_id":"cmp_1","category":"c","platform":"mac","price_cents":400,"oat":1764000000,"mac_kid":"k","mac":"m","iat":1764000010,"exp":1764000910}`), &c, clickClaimNames) ||
		c.Nonce != "n" || c.CampaignID != "cmp_1" || c.PriceCents != 400 || c.MAC != "m" || c.ExpiresAt != 1764000910 {
		t.Fatalf("click claims: %+v", c)
	}
	var in InstallClaims
	if !decodeFlat([]byte(`{"th":"h","dev":"d","cat":1764000040,"app":"app_a"}`), &in, installClaimNames) || in.DeviceID != "d" || in.ClaimedAt != 1764000040 {
		t.Fatalf("install claims: %+v", in)
	}
}

func BenchmarkDecodeClaims(b *testing.B) {
	header := []byte(`{"alg":"Ed25519","kid":"sdk_01HZX3K5Q8","typ":"xpromo-fill+jwt"}`)
	claims := []byte(`{"app":"app_01HZX3K5Q8","slot":"onboarding_complete","platform":"mac","dev":"dev_9f8e7d6c5b4a","loc":"en-US","iat":1764000000}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte, any, ...string) error
	}{{"one-pass", decodeObject}, {"walk", decodeObjectWalk}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var h Header
				var c FillClaims
				if bc.decode(header, &h, "alg", "kid", "typ") != nil || bc.decode(claims, &c, fillClaimNames...) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}

// BenchmarkParseClaim: one op parses an install claim's two tokens, the
// click token and the countersignature (not verified).
func BenchmarkParseClaim(b *testing.B) {
	tok, _ := clickAt(b, time.Minute)
	cs, err := Countersign(advKeys.Private, advKeys.ID, tok, "dev_9f8e7d6c5b4a", t0.Add(2*time.Minute), testOffer(b).Advertiser)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseClick(tok); err != nil {
			b.Fatal(err)
		}
		if _, err := ParseInstall(cs); err != nil {
			b.Fatal(err)
		}
	}
}
