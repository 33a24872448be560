package attribution

import (
	"errors"
	"testing"
	"time"
)

const testDevice = "dev_Zk3pV0m2Qm8y1c9tXr4s5A"

// installAt countersigns a click made one minute after the offer, claimed
// ctit after the click.
func installAt(t testing.TB, ctit time.Duration) (*Click, string) {
	t.Helper()
	tok, claims := clickAt(t, time.Minute)
	c, err := ParseClick(tok)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Countersign(advKeys.Private, advKeys.ID, tok, testDevice, claims.IssuedTime().Add(ctit), claims.Advertiser)
	if err != nil {
		t.Fatal(err)
	}
	return c, in
}

func TestInstallRoundTrip(t *testing.T) {
	c, tok := installAt(t, 3*time.Minute)
	in, err := ParseInstall(tok)
	if err != nil {
		t.Fatal(err)
	}
	want := InstallClaims{TokenHash: c.Hash(), DeviceID: testDevice, ClaimedAt: c.Claims.IssuedAt + 180, AppID: c.Claims.Advertiser}
	if in.Claims != want {
		t.Errorf("claims = %+v, want %+v", in.Claims, want)
	}
	if in.Header != (Header{Alg: AlgEd25519, Kid: advKeys.ID, Typ: TypInstall}) {
		t.Errorf("header = %+v", in.Header)
	}
	if err := in.Verify(advKeys.Public, c); err != nil {
		t.Fatal(err)
	}
	if err := in.CheckTime(c, in.Claims.ClaimedTime().Add(time.Second), DefaultClockSkew); err != nil {
		t.Fatal(err)
	}
	if in.CTIT(c) != 3*time.Minute {
		t.Errorf("CTIT = %v", in.CTIT(c))
	}
	if in.Encode() != tok {
		t.Error("Encode does not give back the token")
	}
	if p := string(in.PayloadJSON); p[:7] != `{"th":"` {
		t.Errorf("payload order: %s", p)
	}
}

// The countersignature names one click token: over any other token, even
// one for the same offer and app, it fails.
func TestCountersignatureBoundToToken(t *testing.T) {
	c, tok := installAt(t, time.Minute)
	in, _ := ParseInstall(tok)

	otherTok, _ := clickAt(t, 2*time.Minute) // same offer, another click
	other, err := ParseClick(otherTok)
	if err != nil {
		t.Fatal(err)
	}
	err = in.Verify(advKeys.Public, other)
	wantErr(t, err, CodeBadCountersignature, ReasonTokenHashMismatch)
	if !errors.Is(err, ErrBadCountersignature) {
		t.Error("errors.Is(err, ErrBadCountersignature) = false")
	}

	// The same claims, spelled with alg EdDSA, are another token.
	eddsa := resign(pubKeys.Private, header(AlgEdDSA, pubKeys.ID, TypClick), string(c.PayloadJSON))
	e, err := ParseClick(eddsa)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, in.Verify(advKeys.Public, e), CodeBadCountersignature, ReasonTokenHashMismatch)
}

func TestCountersignatureFailures(t *testing.T) {
	c, tok := installAt(t, time.Minute)
	in, _ := ParseInstall(tok)
	h, p, s := segments(tok)

	// Signed by the publisher's key (the kid says the advertiser's).
	wantErr(t, in.Verify(pubKeys.Public, c), CodeBadCountersignature, ReasonKidMismatch)

	// Claims changed after signing.
	moved := editJSON(t, in.PayloadJSON, func(m map[string]any) { m["dev"] = "dev_other" })
	x, err := ParseInstall(h + "." + b64([]byte(moved)) + "." + s)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, x.Verify(advKeys.Public, c), CodeBadCountersignature, ReasonSignatureMismatch)

	// A click token is not a countersignature, nor the reverse.
	_, err = ParseInstall(c.Raw)
	wantErr(t, err, CodeBadCountersignature, ReasonBadTyp)
	_, err = ParseClick(tok)
	wantErr(t, err, CodeBadSignature, ReasonBadTyp)

	// Malformed countersignatures carry the countersignature's code.
	for name, bad := range map[string]string{
		"alg none":    b64([]byte(header("none", advKeys.ID, TypInstall))) + "." + p + "." + s,
		"truncated":   h + "." + p,
		"th not hash": resign(advKeys.Private, header(AlgEd25519, advKeys.ID, TypInstall), editJSON(t, in.PayloadJSON, func(m map[string]any) { m["th"] = "abc" })),
		"cat zero":    resign(advKeys.Private, header(AlgEd25519, advKeys.ID, TypInstall), editJSON(t, in.PayloadJSON, func(m map[string]any) { m["cat"] = 0 })),
		"extra claim": resign(advKeys.Private, header(AlgEd25519, advKeys.ID, TypInstall), editJSON(t, in.PayloadJSON, func(m map[string]any) { m["iss"] = "x" })),
	} {
		_, err := ParseInstall(bad)
		if Code(err) != CodeBadCountersignature {
			t.Errorf("%s: %v, want %s", name, err, CodeBadCountersignature)
		}
	}

	// Another app countersigning (with its own valid key) is an app mismatch.
	stranger := mustPair(seedOf("another advertiser"))
	forged := resign(stranger.Private, header(AlgEd25519, stranger.ID, TypInstall),
		editJSON(t, in.PayloadJSON, func(m map[string]any) { m["app"] = "app_stranger" }))
	f, err := ParseInstall(forged)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.Verify(stranger.Public, c), CodeAppMismatch, ReasonAppMismatch)
}

func TestCountersignRefuses(t *testing.T) {
	tok, claims := clickAt(t, time.Minute)
	if _, err := Countersign(advKeys.Private, advKeys.ID, tok, testDevice, t0, "app_someone_else"); err == nil {
		t.Error("countersigned a click for another app")
	}
	if _, err := Countersign(advKeys.Private, advKeys.ID, tok+"x", testDevice, t0, claims.Advertiser); err == nil {
		t.Error("countersigned a token that does not parse")
	}
	if _, err := Countersign(advKeys.Private, pubKeys.ID, tok, testDevice, t0, claims.Advertiser); err == nil {
		t.Error("countersigned with a kid that is not the key's")
	}
	if _, err := Countersign(advKeys.Private, advKeys.ID, tok, "", t0, claims.Advertiser); err == nil {
		t.Error("countersigned without a device id")
	}
}

func TestInstallTimes(t *testing.T) {
	const skew = DefaultClockSkew
	s := time.Second
	cases := []struct {
		name   string
		ctit   time.Duration // claim time after the click
		now    time.Duration // verifier's clock after the click
		reason Reason
	}{
		{"claimed and received in time", time.Minute, time.Minute, ""},
		{"claimed just before exp", ClickTTL - s, ClickTTL - s, ""},
		{"claimed at exp, within skew", ClickTTL, ClickTTL, ""},
		{"claimed at exp + skew", ClickTTL + skew, ClickTTL, ReasonExpired},
		{"received at exp + skew", time.Minute, ClickTTL + skew, ReasonExpired},
		{"claim dated in the verifier's future", 5 * time.Minute, 5*time.Minute - skew - s, ReasonNotYetValid},
		{"claim before click is left to CTIT", -time.Minute, time.Minute, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, tok := installAt(t, tc.ctit)
			in, err := ParseInstall(tok)
			if err != nil {
				t.Fatal(err)
			}
			err = in.CheckTime(c, c.Claims.IssuedTime().Add(tc.now), skew)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, CodeTokenExpired, tc.reason)
		})
	}
	c, tok := installAt(t, -time.Minute)
	in, _ := ParseInstall(tok)
	if in.CTIT(c) != -time.Minute {
		t.Errorf("CTIT = %v, want -1m", in.CTIT(c))
	}
}
