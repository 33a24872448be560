package attribution

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func testFillClaims(at time.Time) FillClaims {
	return FillClaims{AppID: "app_01jd3m5q0000publisher00", Slot: "onboarding_complete", Platform: PlatformMac,
		DeviceID: testDevice, Locale: "de-CH", IssuedAt: at.Unix()}
}

func testFill(t testing.TB, claims FillClaims) string {
	t.Helper()
	tok, err := SignFill(pubKeys.Private, pubKeys.ID, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestFillRoundTrip(t *testing.T) {
	claims := testFillClaims(t0)
	tok := testFill(t, claims)
	f, err := ParseFill(tok)
	if err != nil {
		t.Fatal(err)
	}
	if f.Claims != claims || f.Header != (Header{Alg: AlgEd25519, Kid: pubKeys.ID, Typ: TypFill}) {
		t.Errorf("parsed %+v %+v", f.Header, f.Claims)
	}
	if got := string(f.PayloadJSON); got != `{"app":"app_01jd3m5q0000publisher00","slot":"onboarding_complete","platform":"mac","dev":"`+testDevice+`","loc":"de-CH","iat":`+strconv.FormatInt(t0.Unix(), 10)+`}` {
		t.Errorf("claims JSON %s", got)
	}
	if err := f.Verify(pubKeys.Public); err != nil {
		t.Fatal(err)
	}
	if err := f.Covers(claims); err != nil {
		t.Fatal(err)
	}
	if f.Encode() != tok || f.Claims.IssuedTime() != t0 {
		t.Error("round trip")
	}
	// Another key (the advertiser's) does not verify it.
	wantErr(t, f.Verify(advKeys.Public), CodeBadSignature, ReasonKidMismatch)
	// A signature lifted from another request does not verify.
	other := claims
	other.Slot = "before_quit"
	hs, p, _ := segments(tok)
	_, _, sig := segments(testFill(t, other))
	x, err := ParseFill(hs + "." + p + "." + sig)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, x.Verify(pubKeys.Public), CodeBadSignature, ReasonSignatureMismatch)
	// No other kind of message passes for a fill request, nor the reverse.
	c, in := installAt(t, time.Minute)
	_, hb := testHeartbeat(t, 1, t0)
	for _, other := range []string{c.Raw, in, hb} {
		_, err := ParseFill(other)
		wantErr(t, err, CodeBadSignature, ReasonBadTyp)
	}
	_, err = ParseHeartbeat(tok)
	wantErr(t, err, CodeBadSignature, ReasonBadTyp)
	_, err = ParseClick(tok)
	wantErr(t, err, CodeBadSignature, ReasonBadTyp)
	_, err = ParseFill(tok[:len(tok)-2])
	wantErr(t, err, CodeBadSignature, ReasonMalformed)
}

func TestFillOptionalFieldsAreSignedEmpty(t *testing.T) {
	claims := testFillClaims(t0)
	claims.DeviceID, claims.Locale = "", ""
	f, err := ParseFill(testFill(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.PayloadJSON), `"dev":"","loc":""`) {
		t.Errorf("claims JSON %s: dev and loc must be present, empty", f.PayloadJSON)
	}
	// A token that leaves them out is refused: every member is required.
	tok := resign(pubKeys.Private, header(AlgEd25519, pubKeys.ID, TypFill),
		`{"app":"app_1","slot":"about_window","platform":"mac","iat":`+strconv.FormatInt(t0.Unix(), 10)+`}`)
	_, err = ParseFill(tok)
	wantErr(t, err, CodeBadSignature, ReasonMalformed)
}

func TestFillCovers(t *testing.T) {
	claims := testFillClaims(t0)
	f, err := ParseFill(testFill(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	later := claims
	later.IssuedAt += 60 // the request carries no iat of its own
	if err := f.Covers(later); err != nil {
		t.Errorf("iat compared: %v", err)
	}
	for name, edit := range map[string]func(*FillClaims){
		"app":      func(c *FillClaims) { c.AppID = "app_other" },
		"slot":     func(c *FillClaims) { c.Slot = "before_quit" },
		"platform": func(c *FillClaims) { c.Platform = PlatformWin },
		"dev":      func(c *FillClaims) { c.DeviceID = "dev_other" },
		"no dev":   func(c *FillClaims) { c.DeviceID = "" },
		"loc":      func(c *FillClaims) { c.Locale = "fr-CH" },
	} {
		req := claims
		edit(&req)
		if err := f.Covers(req); Code(err) != CodeBadSignature || ReasonOf(err) != ReasonRequestMismatch {
			t.Errorf("%s: %v, want request_mismatch", name, err)
		}
	}
}

func TestFillRefusesBadClaims(t *testing.T) {
	good := testFillClaims(t0)
	for name, edit := range map[string]func(*FillClaims){
		"no app":        func(c *FillClaims) { c.AppID = "" },
		"app with NUL":  func(c *FillClaims) { c.AppID = "a\x00b" },
		"long app":      func(c *FillClaims) { c.AppID = strings.Repeat("a", MaxIDLen+1) },
		"no slot":       func(c *FillClaims) { c.Slot = "" },
		"platform":      func(c *FillClaims) { c.Platform = "linux" },
		"dev":           func(c *FillClaims) { c.DeviceID = "dev 1" },
		"long dev":      func(c *FillClaims) { c.DeviceID = strings.Repeat("d", MaxIDLen+1) },
		"locale":        func(c *FillClaims) { c.Locale = "de_CH" },
		"long locale":   func(c *FillClaims) { c.Locale = "de-" + strings.Repeat("abcdefgh-", 4) },
		"no time":       func(c *FillClaims) { c.IssuedAt = 0 },
		"time too late": func(c *FillClaims) { c.IssuedAt = maxUnix + 1 },
	} {
		bad := good
		edit(&bad)
		if _, err := SignFill(pubKeys.Private, pubKeys.ID, bad); err == nil {
			t.Errorf("%s: signed", name)
		}
		// Nor does a token carrying them (signed by hand) parse.
		payload := editJSON(t, []byte(`{"app":"a","slot":"s","platform":"mac","dev":"","loc":"","iat":1}`), func(m map[string]any) {
			m["app"], m["slot"], m["platform"], m["dev"], m["loc"], m["iat"] = bad.AppID, bad.Slot, bad.Platform, bad.DeviceID, bad.Locale, bad.IssuedAt
		})
		_, err := ParseFill(resign(pubKeys.Private, header(AlgEd25519, pubKeys.ID, TypFill), payload))
		wantErr(t, err, CodeBadSignature, ReasonMalformed)
	}
	if _, err := SignFill(pubKeys.Private, advKeys.ID, good); err == nil {
		t.Error("signed under another key's id")
	}
}

func TestValidLocale(t *testing.T) {
	for _, s := range []string{"de", "de-CH", "zh-Hant-TW", "es-419", "en-US-x-twain", "x-klingon", "sr-Latn-RS"} {
		if !ValidLocale(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "-", "de-", "-de", "de--CH", "de_CH", "419", "de CH", "abcdefghi", "de-CH\x00",
		"de-" + strings.Repeat("a", 33), "dé"} {
		if ValidLocale(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestFillTimes(t *testing.T) {
	const skew = DefaultClockSkew
	f, err := ParseFill(testFill(t, testFillClaims(t0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now    time.Time
		reason Reason
	}{
		{t0, ""},
		{t0.Add(skew), ""},
		{t0.Add(skew + time.Second), ReasonStale},
		{t0.Add(-skew), ""},
		{t0.Add(-skew - time.Second), ReasonNotYetValid},
	} {
		err := f.CheckTime(tc.now, skew)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("now %v: %v", tc.now.Sub(t0), err)
			}
			continue
		}
		wantErr(t, err, CodeTokenExpired, tc.reason)
	}
}
