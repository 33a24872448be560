package attribution

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestClickRoundTrip(t *testing.T) {
	tok, claims := clickAt(t, time.Minute)
	c, err := ParseClick(tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Claims != claims {
		t.Errorf("claims = %+v, want %+v", c.Claims, claims)
	}
	if c.Header != (Header{Alg: AlgEd25519, Kid: pubKeys.ID, Typ: TypClick}) {
		t.Errorf("header = %+v", c.Header)
	}
	if err := c.Verify(pubKeys.Public); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := VerifyOfferMAC(macKey.Secret, c.Claims.Offer); err != nil {
		t.Errorf("VerifyOfferMAC: %v", err)
	}
	if err := c.CheckTime(t0.Add(2*time.Minute), DefaultClockSkew); err != nil {
		t.Errorf("CheckTime: %v", err)
	}
	if c.Encode() != tok || c.Raw != tok {
		t.Error("Encode does not give back the token")
	}
	if !strings.HasPrefix(tok, c.SigningInput+".") || len(c.Signature) != ed25519.SignatureSize {
		t.Error("SigningInput/Signature do not match the token")
	}
	if c.Hash() != TokenHashString(tok) || len(c.Hash()) != 43 {
		t.Errorf("Hash = %q", c.Hash())
	}
	sum := sha256.Sum256([]byte(tok))
	if TokenHash(tok) != sum || TokenHashString(tok) != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Error("TokenHash is not SHA-256 of the token")
	}
	if got, want := c.Claims.ExpiresTime().Sub(c.Claims.IssuedTime()), ClickTTL; got != want {
		t.Errorf("exp - iat = %v, want %v", got, want)
	}
	// The signer's member order is fixed.
	wantOrder := `{"jti":"`
	if p := string(c.PayloadJSON); !strings.HasPrefix(p, wantOrder) || !strings.HasSuffix(p, fmt.Sprintf(`"iat":%d,"exp":%d}`, claims.IssuedAt, claims.ExpiresAt)) {
		t.Errorf("payload order: %s", p)
	}
	if h := string(c.HeaderJSON); h != `{"alg":"Ed25519","kid":"`+pubKeys.ID+`","typ":"xpromo-click+jwt"}` {
		t.Errorf("header JSON: %s", h)
	}
}

func TestSignClickRefusesBadInput(t *testing.T) {
	claims := NewClickClaims(testOffer(t), t0)
	if _, err := SignClick(pubKeys.Private, advKeys.ID, claims); err == nil {
		t.Error("signed with a kid that is not the key's")
	}
	if _, err := SignClick(ed25519.PrivateKey{1, 2, 3}, pubKeys.ID, claims); err == nil {
		t.Error("signed with a short key")
	}
	long := claims
	long.ExpiresAt += 60
	if _, err := SignClick(pubKeys.Private, pubKeys.ID, long); err == nil {
		t.Error("signed a token living longer than ClickTTL")
	}
	unsealed := claims
	unsealed.MAC = ""
	if _, err := SignClick(pubKeys.Private, pubKeys.ID, unsealed); err == nil {
		t.Error("signed an offer without MAC")
	}
}

// Every part of a token is covered: changing any of it is refused with the
// code of the click, fraud_bad_signature, and the reason of the check.
func TestClickTampering(t *testing.T) {
	tok, _ := clickAt(t, time.Minute)
	h, p, s := segments(tok)
	hdr, payload, sig := decodeSeg(t, h), decodeSeg(t, p), decodeSeg(t, s)

	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 0x01
		return c
	}
	price := editJSON(t, payload, func(m map[string]any) { m["price_cents"] = 1 })

	cases := []struct {
		name   string
		token  string
		reason Reason // at parse, or at Verify when parse succeeds
	}{
		{"payload changed, old signature", h + "." + b64([]byte(price)) + "." + s, ReasonSignatureMismatch},
		{"signature bit flipped", h + "." + p + "." + b64(flip(sig, 10)), ReasonSignatureMismatch},
		{"signature of another token", h + "." + p + "." + segs3(t, clickAt)(t), ReasonSignatureMismatch},
		{"signature truncated", h + "." + p + "." + b64(sig[:63]), ReasonMalformed},
		{"signature empty", h + "." + p + ".", ReasonMalformed},
		{"alg none, no signature", b64([]byte(header("none", pubKeys.ID, TypClick))) + "." + p + ".", ReasonMalformed},
		{"alg none, old signature", b64([]byte(header("none", pubKeys.ID, TypClick))) + "." + p + "." + s, ReasonBadAlg},
		{"alg ES256", b64([]byte(header("ES256", pubKeys.ID, TypClick))) + "." + p + "." + s, ReasonBadAlg},
		{"alg HS256", b64([]byte(header("HS256", pubKeys.ID, TypClick))) + "." + p + "." + s, ReasonBadAlg},
		{"alg in lower case", b64([]byte(header("ed25519", pubKeys.ID, TypClick))) + "." + p + "." + s, ReasonBadAlg},
		{"alg EdDSA, old signature", b64([]byte(header(AlgEdDSA, pubKeys.ID, TypClick))) + "." + p + "." + s, ReasonSignatureMismatch},
		{"typ of an install", b64([]byte(header(AlgEd25519, pubKeys.ID, TypInstall))) + "." + p + "." + s, ReasonBadTyp},
		{"typ JWT", b64([]byte(header(AlgEd25519, pubKeys.ID, "JWT"))) + "." + p + "." + s, ReasonBadTyp},
		{"kid swapped to another key", b64([]byte(header(AlgEd25519, advKeys.ID, TypClick))) + "." + p + "." + s, ReasonKidMismatch},
		{"kid not an SDK key id", b64([]byte(header(AlgEd25519, "key1", TypClick))) + "." + p + "." + s, ReasonMalformed},
		{"header bit flipped", b64(flip(hdr, 3)) + "." + p + "." + s, ReasonMalformed},
		{"header with jku", b64([]byte(`{"alg":"Ed25519","kid":"`+pubKeys.ID+`","typ":"xpromo-click+jwt","jku":"https://evil.example/k"}`)) + "." + p + "." + s, ReasonMalformed},
		{"header with crit", b64([]byte(`{"alg":"Ed25519","kid":"`+pubKeys.ID+`","typ":"xpromo-click+jwt","crit":["exp"]}`)) + "." + p + "." + s, ReasonMalformed},
		{"header without typ", b64([]byte(`{"alg":"Ed25519","kid":"`+pubKeys.ID+`"}`)) + "." + p + "." + s, ReasonMalformed},
		{"header duplicate alg", b64([]byte(`{"alg":"none","alg":"Ed25519","kid":"`+pubKeys.ID+`","typ":"xpromo-click+jwt"}`)) + "." + p + "." + s, ReasonMalformed},
		{"padded signature", h + "." + p + "." + base64.URLEncoding.EncodeToString(sig), ReasonMalformed},
		{"padded header", base64.URLEncoding.EncodeToString(hdr) + "." + p + "." + s, ReasonMalformed},
		{"standard base64 alphabet", h + "." + p + "." + base64.RawStdEncoding.EncodeToString(sig), ReasonMalformed},
		{"line break in payload", h + "." + p[:10] + "\n" + p[10:] + "." + s, ReasonMalformed},
		{"non-zero trailing bits", h + "." + p + "." + nonCanonical(s), ReasonMalformed},
		{"four segments", tok + "." + s, ReasonMalformed},
		{"two segments", h + "." + p, ReasonMalformed},
		{"JWS JSON serialization", `{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`, ReasonMalformed},
		{"empty", "", ReasonMalformed},
		{"too large", h + "." + strings.Repeat("A", MaxTokenSize) + "." + s, ReasonTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseClick(tc.token)
			if err == nil {
				err = c.Verify(pubKeys.Public)
			}
			wantErr(t, err, CodeBadSignature, tc.reason)
			if !errors.Is(err, ErrBadSignature) {
				t.Error("errors.Is(err, ErrBadSignature) = false")
			}
		})
	}
}

// segs3 returns a function giving the signature segment of another click.
func segs3(t *testing.T, mk func(testing.TB, time.Duration) (string, ClickClaims)) func(*testing.T) string {
	return func(t *testing.T) string {
		tok, _ := mk(t, 2*time.Minute)
		_, _, s := segments(tok)
		return s
	}
}

// nonCanonical changes the last character of a base64url segment so that it
// decodes to the same bytes with non-zero unused bits (64 bytes = 86
// characters, 4 unused bits).
func nonCanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i|1])
}

func TestClickClaimsStrictness(t *testing.T) {
	tok, _ := clickAt(t, time.Minute)
	c, err := ParseClick(tok)
	if err != nil {
		t.Fatal(err)
	}
	hdr := header(AlgEd25519, pubKeys.ID, TypClick)
	sign := func(payload string) string { return resign(pubKeys.Private, hdr, payload) }
	edit := func(f func(m map[string]any)) string { return sign(editJSON(t, c.PayloadJSON, f)) }
	p := string(c.PayloadJSON)

	malformed := map[string]string{
		"duplicate price_cents":   sign(strings.Replace(p, `"price_cents":140`, `"price_cents":140,"price_cents":1`, 1)),
		"duplicate in other case": sign(strings.Replace(p, `"price_cents":140`, `"price_cents":140,"PRICE_CENTS":1`, 1)),
		"unknown member":          edit(func(m map[string]any) { m["sub"] = "x" }),
		"missing mac":             edit(func(m map[string]any) { delete(m, "mac") }),
		"missing exp":             edit(func(m map[string]any) { delete(m, "exp") }),
		"exp beyond 15 minutes":   edit(func(m map[string]any) { m["exp"] = c.Claims.ExpiresAt + 1 }),
		"exp before 15 minutes":   edit(func(m map[string]any) { m["exp"] = c.Claims.ExpiresAt - 1 }),
		"price_cents zero":        edit(func(m map[string]any) { m["price_cents"] = 0 }),
		"price_cents negative":    edit(func(m map[string]any) { m["price_cents"] = -140 }),
		"price_cents fraction":    edit(func(m map[string]any) { m["price_cents"] = 1.5 }),
		"price_cents string":      edit(func(m map[string]any) { m["price_cents"] = "140" }),
		"price_cents exponent":    sign(strings.Replace(p, `"price_cents":140`, `"price_cents":1.4e2`, 1)),
		"price_cents overflows":   sign(strings.Replace(p, `"price_cents":140`, `"price_cents":99999999999999999999`, 1)),
		"iat null":                edit(func(m map[string]any) { m["iat"] = nil }),
		"iss empty":               edit(func(m map[string]any) { m["iss"] = "" }),
		"iss with a space":        edit(func(m map[string]any) { m["iss"] = "app 1" }),
		"iss too long":            edit(func(m map[string]any) { m["iss"] = strings.Repeat("a", MaxIDLen+1) }),
		"category not ASCII":      edit(func(m map[string]any) { m["category"] = "produktivität" }),
		"platform linux":          edit(func(m map[string]any) { m["platform"] = "linux" }),
		"nonce too short":         edit(func(m map[string]any) { m["jti"] = b64(make([]byte, 15)) }),
		"nonce padded":            edit(func(m map[string]any) { m["jti"] = base64.URLEncoding.EncodeToString(make([]byte, 16)) }),
		"mac too short":           edit(func(m map[string]any) { m["mac"] = b64(make([]byte, 16)) }),
		"oat beyond year 9999":    edit(func(m map[string]any) { m["oat"] = int64(maxUnix + 1) }),
		"payload an array":        sign(`[` + p + `]`),
		"payload two objects":     sign(p + p),
		"payload trailing junk":   sign(p + `x`),
		"payload invalid UTF-8":   sign(strings.Replace(p, `"productivity"`, "\"product\xffivity\"", 1)),
		"payload not JSON":        sign(`Example of Ed25519 signing`),
	}
	for name, tok := range malformed {
		t.Run(name, func(t *testing.T) {
			_, err := ParseClick(tok)
			wantErr(t, err, CodeBadSignature, ReasonMalformed)
		})
	}

	// Member order, whitespace and escapes are the signer's business: the
	// signature covers the exact bytes. A Swift or C# SDK may serialize
	// differently and still be read the same.
	reordered := sign(editJSON(t, c.PayloadJSON, func(map[string]any) {})) // map order: sorted keys
	spaced := sign(strings.ReplaceAll(strings.ReplaceAll(p, ",", ", "), ":", ": "))
	escaped := sign(strings.Replace(p, `"category":"productivity"`, `"category":"\u0070roductivity"`, 1))
	for name, tok := range map[string]string{"sorted members": reordered, "whitespace": spaced, "escapes": escaped} {
		got, err := ParseClick(tok)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.Claims != c.Claims {
			t.Errorf("%s: claims %+v, want %+v", name, got.Claims, c.Claims)
		}
		if err := got.Verify(pubKeys.Public); err != nil {
			t.Errorf("%s: Verify: %v", name, err)
		}
	}
}

// RFC 9864: sign "Ed25519"; RFC 8037 libraries send "EdDSA", accepted too.
func TestClickAlgEdDSAAccepted(t *testing.T) {
	tok, claims := clickAt(t, time.Minute)
	c, _ := ParseClick(tok)
	eddsa := resign(pubKeys.Private, header(AlgEdDSA, pubKeys.ID, TypClick), string(c.PayloadJSON))
	got, err := ParseClick(eddsa)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Verify(pubKeys.Public); err != nil {
		t.Fatal(err)
	}
	if got.Claims != claims || got.Header.Alg != AlgEdDSA {
		t.Errorf("got %+v %+v", got.Header, got.Claims)
	}
}

func TestClickWrongKey(t *testing.T) {
	tok, _ := clickAt(t, time.Minute)
	c, _ := ParseClick(tok)
	// Verified with another app's key: the kid says it is not that key.
	wantErr(t, c.Verify(advKeys.Public), CodeBadSignature, ReasonKidMismatch)
	// A token claiming the other key's kid but signed by this one.
	forged := resign(pubKeys.Private, header(AlgEd25519, advKeys.ID, TypClick), string(c.PayloadJSON))
	f, err := ParseClick(forged)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.Verify(advKeys.Public), CodeBadSignature, ReasonSignatureMismatch)
	wantErr(t, c.Verify(ed25519.PublicKey{1, 2, 3}), CodeBadSignature, ReasonSignatureMismatch)
}

func TestClickTimes(t *testing.T) {
	const skew = 2 * time.Minute
	s := time.Second
	check := func(t *testing.T, clickAfter time.Duration, now time.Time, skew time.Duration, reason Reason) {
		t.Helper()
		tok, _ := clickAt(t, clickAfter)
		c, err := ParseClick(tok)
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckTime(now, skew)
		if reason == "" {
			if err != nil {
				t.Fatalf("click at oat%+v, now oat%+v, skew %v: %v", clickAfter, now.Sub(t0), skew, err)
			}
			return
		}
		wantErr(t, err, CodeTokenExpired, reason)
		if !errors.Is(err, ErrTokenExpired) {
			t.Error("errors.Is(err, ErrTokenExpired) = false")
		}
	}
	m := time.Minute
	iat := t0.Add(m) // click one minute after the offer
	exp := iat.Add(ClickTTL)
	cases := []struct {
		name       string
		clickAfter time.Duration
		now        time.Time
		skew       time.Duration
		reason     Reason
	}{
		{"just clicked", m, iat, 0, ""},
		{"a second before exp", m, exp.Add(-s), 0, ""},
		{"a nanosecond before exp", m, exp.Add(-1), 0, ""},
		{"exactly at exp", m, exp, 0, ReasonExpired},
		{"after exp", m, exp.Add(s), 0, ReasonExpired},
		{"within skew after exp", m, exp.Add(skew - s), skew, ""},
		{"exactly at exp + skew", m, exp.Add(skew), skew, ReasonExpired},
		{"negative skew is no skew", m, exp, -skew, ReasonExpired},
		{"clicked before now within skew", m, iat.Add(-skew), skew, ""},
		{"clicked in the verifier's future", m, iat.Add(-skew - s), skew, ReasonNotYetValid},
		{"clicked exactly at offer lapse", OfferTTL, t0.Add(OfferTTL), 0, ""},
		{"clicked after offer lapse", OfferTTL + s, t0.Add(OfferTTL + s), 0, ReasonOfferLapsed},
		{"clicked after lapse, within skew", OfferTTL + skew, t0.Add(OfferTTL + skew), skew, ""},
		{"clicked after lapse + skew", OfferTTL + skew + s, t0.Add(OfferTTL + skew + s), skew, ReasonOfferLapsed},
		{"clicked before the offer", -s, t0, 0, ReasonClickBeforeOffer},
		{"clicked before the offer within skew", -skew, t0, skew, ""},
		{"clicked before the offer beyond skew", -skew - s, t0, skew, ReasonClickBeforeOffer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.clickAfter, tc.now, tc.skew, tc.reason) })
	}
}

// A device whose clock runs slow can at most delay expiry by the skew: the
// whole chain fits in oat + OfferTTL + ClickTTL + 2·skew on the server clock.
func TestClickLifetimeBoundedByOffer(t *testing.T) {
	const skew = DefaultClockSkew
	tok, _ := clickAt(t, OfferTTL+skew)
	c, err := ParseClick(tok)
	if err != nil {
		t.Fatal(err)
	}
	limit := t0.Add(OfferTTL + ClickTTL + 2*skew)
	if err := c.CheckTime(limit.Add(-time.Second), skew); err != nil {
		t.Errorf("just inside the bound: %v", err)
	}
	wantErr(t, c.CheckTime(limit, skew), CodeTokenExpired, ReasonExpired)
}
