package attribution

import (
	"testing"
	"time"
)

func testHeartbeat(t testing.TB, seq int64, at time.Time) (HeartbeatClaims, string) {
	t.Helper()
	c, _ := installAt(t, time.Minute)
	claims := HeartbeatClaims{AppID: c.Claims.Advertiser, DeviceID: testDevice, TokenHash: c.Hash(), Seq: seq, SentAt: at.Unix()}
	tok, err := SignHeartbeat(advKeys.Private, advKeys.ID, claims)
	if err != nil {
		t.Fatal(err)
	}
	return claims, tok
}

func TestHeartbeatRoundTrip(t *testing.T) {
	at := t0.Add(49 * time.Hour)
	claims, tok := testHeartbeat(t, 3, at)
	h, err := ParseHeartbeat(tok)
	if err != nil {
		t.Fatal(err)
	}
	if h.Claims != claims || h.Header != (Header{Alg: AlgEd25519, Kid: advKeys.ID, Typ: TypHeartbeat}) {
		t.Errorf("parsed %+v %+v", h.Header, h.Claims)
	}
	if err := h.Verify(advKeys.Public); err != nil {
		t.Fatal(err)
	}
	if h.Encode() != tok || h.Claims.SentTime() != at {
		t.Error("round trip")
	}
	wantErr(t, h.Verify(pubKeys.Public), CodeBadSignature, ReasonKidMismatch)
	hs, p, _ := segments(tok)
	_, _, other := segments(mustTok(testHeartbeat(t, 4, at)))
	x, err := ParseHeartbeat(hs + "." + p + "." + other)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, x.Verify(advKeys.Public), CodeBadSignature, ReasonSignatureMismatch)
	_, err = ParseHeartbeat(h.Raw[:len(h.Raw)-2])
	wantErr(t, err, CodeBadSignature, ReasonMalformed)
	// Neither a click nor a countersignature passes for a heartbeat.
	c, in := installAt(t, time.Minute)
	for _, tok := range []string{c.Raw, in} {
		_, err := ParseHeartbeat(tok)
		wantErr(t, err, CodeBadSignature, ReasonBadTyp)
	}
}

func mustTok(_ HeartbeatClaims, tok string) string { return tok }

func TestHeartbeatRefusesBadClaims(t *testing.T) {
	c, _ := installAt(t, time.Minute)
	good := HeartbeatClaims{AppID: c.Claims.Advertiser, DeviceID: testDevice, TokenHash: c.Hash(), Seq: 1, SentAt: t0.Unix()}
	for name, edit := range map[string]func(*HeartbeatClaims){
		"seq zero": func(h *HeartbeatClaims) { h.Seq = 0 },
		"no th":    func(h *HeartbeatClaims) { h.TokenHash = "" },
		"no app":   func(h *HeartbeatClaims) { h.AppID = "" },
		"no time":  func(h *HeartbeatClaims) { h.SentAt = 0 },
	} {
		bad := good
		edit(&bad)
		if _, err := SignHeartbeat(advKeys.Private, advKeys.ID, bad); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

func TestHeartbeatTimes(t *testing.T) {
	const skew = DefaultClockSkew
	at := t0.Add(50 * time.Hour)
	_, tok := testHeartbeat(t, 1, at)
	h, err := ParseHeartbeat(tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now    time.Time
		reason Reason
	}{
		{at, ""},
		{at.Add(skew), ""},
		{at.Add(skew + time.Second), ReasonStale},
		{at.Add(-skew), ""},
		{at.Add(-skew - time.Second), ReasonNotYetValid},
	} {
		err := h.CheckTime(tc.now, skew)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("now %v: %v", tc.now.Sub(at), err)
			}
			continue
		}
		wantErr(t, err, CodeTokenExpired, tc.reason)
	}
}
