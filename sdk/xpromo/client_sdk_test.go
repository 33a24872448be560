package xpromo_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// sdkAnswers are the test server's answers to the attribution endpoints,
// by path, shaped as the server sends them (openapi.json).
var sdkAnswers = map[string]string{
	"/v1/apps/app 1/sdk-keys":             `{"key_id":"sk_1","public_key":"pk","created_at":"2026-11-21T09:00:00Z","revoked_at":null}`,
	"/v1/apps/app_1/sdk-keys/sk 1/revoke": `{"key_id":"sk 1","public_key":"pk","created_at":"2026-11-21T09:00:00Z","revoked_at":"2026-11-22T09:00:00Z"}`,
	"/v1/chains/ch/1":                     `{"chain_id":"ch/1","state":"cleared","reason":null,"campaign_id":"cmp_1","publisher_app_id":"app_p","advertiser_app_id":"app_a","price_cents":400,"clicked_at":"2026-11-21T09:00:00Z","installed_at":null,"activated_at":null,"settled_at":null,"click_token":"t","countersignature":"cs"}`,
	"/v1/sdk/fill":                        `{"filled":false,"no_fill_reason":"no_eligible_campaign","creative":null,"offer":null,"expires_at":null}`,
	"/v1/sdk/click":                       `{"chain_id":"ch_1","expires_at":"2026-11-21T09:15:00Z"}`,
	"/v1/sdk/install":                     `{"chain_id":"ch_1","state":"installed"}`,
	"/v1/sdk/heartbeat":                   `{"chain_id":"ch_1","state":"activated_48h"}`,
	"/v1/admin/clock":                     `{"now":"2026-11-21T09:00:00Z","offset_seconds":0,"test_mode":true}`,
	"/v1/admin/clock/advance":             `{"now":"2026-11-23T09:00:00Z","offset_seconds":172800,"test_mode":true}`,
	"/v1/admin/attribution/sweep":         `{"cleared":2,"refunded":1,"failed":0}`,
	"/v1/apps/app 1/sdk-keys?list":        `{"keys":[{"key_id":"sk_1","public_key":"pk","created_at":"2026-11-21T09:00:00Z","revoked_at":null}]}`,
}

// TestSDKEndpointsRequestShape: every attribution method sends its method,
// path (arguments escaped as one segment each), body and credential, and
// decodes the server's answer.
func TestSDKEndpointsRequestShape(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		key := r.URL.Path
		if r.Method == http.MethodGet && key == "/v1/apps/app 1/sdk-keys" {
			key += "?list"
		}
		body, ok := sdkAnswers[key]
		if !ok {
			writeJSON(w, 404, errBody("not_found", "no route", nil))
			return
		}
		status := 200
		if r.Method == http.MethodPost && key == "/v1/apps/app 1/sdk-keys" {
			status = 201
		}
		writeJSON(w, status, body)
	})
	c := f.client(xpromo.WithAdminToken("admintok"))
	ctx := context.Background()

	type call struct {
		name       string
		do         func() (any, error)
		method     string
		path       string
		body       string // "" = no body
		credential string // the Authorization header wanted ("" = none)
		check      func(t *testing.T, got any)
	}
	const key, admin = "Bearer xp_test_key", "Bearer admintok"
	calls := []call{
		{"RegisterSDKKey", func() (any, error) {
			return c.RegisterSDKKey(ctx, "app 1", &xpromo.RegisterSDKKeyRequest{PublicKey: "pk"})
		}, "POST", "/v1/apps/app 1/sdk-keys", `{"public_key":"pk"}`, key, func(t *testing.T, got any) {
			k := got.(*xpromo.SDKKey)
			if k.KeyID != "sk_1" || k.RevokedAt != nil || !k.CreatedAt.Equal(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)) {
				t.Errorf("key %+v", k)
			}
		}},
		{"ListSDKKeys", func() (any, error) { return c.ListSDKKeys(ctx, "app 1") },
			"GET", "/v1/apps/app 1/sdk-keys", "", key, func(t *testing.T, got any) {
				if l := got.(*xpromo.SDKKeyList); len(l.Keys) != 1 || l.Keys[0].KeyID != "sk_1" {
					t.Errorf("list %+v", l)
				}
			}},
		{"RevokeSDKKey", func() (any, error) { return c.RevokeSDKKey(ctx, "app_1", "sk 1") },
			"POST", "/v1/apps/app_1/sdk-keys/sk 1/revoke", "", key, func(t *testing.T, got any) {
				if k := got.(*xpromo.SDKKey); k.RevokedAt == nil {
					t.Errorf("revoked key without revoked_at: %+v", k)
				}
			}},
		{"GetChain", func() (any, error) { return c.GetChain(ctx, "ch/1") },
			"GET", "/v1/chains/ch/1", "", key, func(t *testing.T, got any) {
				ch := got.(*xpromo.Chain)
				if ch.State != xpromo.ChainCleared || ch.PriceCents != 400 || ch.Countersignature == nil || *ch.Countersignature != "cs" {
					t.Errorf("chain %+v", ch)
				}
			}},
		{"SDKFill", func() (any, error) {
			return c.SDKFill(ctx, &xpromo.FillRequest{AppID: "app_p", Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformWin, Signature: "h.p.s"})
		}, "POST", "/v1/sdk/fill", `{"app_id":"app_p","slot":"about_window","platform":"win","signature":"h.p.s"}`, "", func(t *testing.T, got any) {
			fr := got.(*xpromo.FillResponse)
			if fr.Filled || fr.NoFillReason == nil || *fr.NoFillReason != xpromo.NoFillNoCampaign || fr.Offer != nil {
				t.Errorf("fill %+v", fr)
			}
		}},
		{"SDKClick", func() (any, error) { return c.SDKClick(ctx, &xpromo.ClickRequest{Token: "tok"}) },
			"POST", "/v1/sdk/click", `{"token":"tok"}`, "", func(t *testing.T, got any) {
				cr := got.(*xpromo.ClickResponse)
				if cr.ChainID != "ch_1" || !cr.ExpiresAt.Equal(time.Date(2026, 11, 21, 9, 15, 0, 0, time.UTC)) {
					t.Errorf("click %+v", cr)
				}
			}},
		{"SDKInstall", func() (any, error) {
			return c.SDKInstall(ctx, &xpromo.InstallRequest{Token: "tok", Countersignature: "cs"})
		}, "POST", "/v1/sdk/install", `{"token":"tok","countersignature":"cs"}`, "", func(t *testing.T, got any) {
			if ir := got.(*xpromo.InstallResponse); ir.ChainID != "ch_1" || ir.State != xpromo.ChainInstalled {
				t.Errorf("install %+v", ir)
			}
		}},
		{"SDKHeartbeat", func() (any, error) { return c.SDKHeartbeat(ctx, &xpromo.HeartbeatRequest{Heartbeat: "hb"}) },
			"POST", "/v1/sdk/heartbeat", `{"heartbeat":"hb"}`, "", func(t *testing.T, got any) {
				if hr := got.(*xpromo.HeartbeatResponse); hr.State != xpromo.ChainActivated48h {
					t.Errorf("heartbeat %+v", hr)
				}
			}},
		{"AdminGetClock", func() (any, error) { return c.AdminGetClock(ctx) },
			"GET", "/v1/admin/clock", "", admin, func(t *testing.T, got any) {
				if cs := got.(*xpromo.ClockState); !cs.TestMode || cs.OffsetSeconds != 0 || cs.Now.IsZero() {
					t.Errorf("clock %+v", cs)
				}
			}},
		{"AdminAdvanceClock", func() (any, error) { return c.AdminAdvanceClock(ctx, 48*time.Hour+999*time.Millisecond) },
			"POST", "/v1/admin/clock/advance", `{"seconds":172800}`, admin, func(t *testing.T, got any) {
				if cs := got.(*xpromo.ClockState); cs.OffsetSeconds != 172800 {
					t.Errorf("clock %+v", cs)
				}
			}},
		{"AdminSweep", func() (any, error) { return c.AdminSweep(ctx) },
			"POST", "/v1/admin/attribution/sweep", "", admin, func(t *testing.T, got any) {
				if r := got.(*xpromo.SweepResult); *r != (xpromo.SweepResult{Cleared: 2, Refunded: 1}) {
					t.Errorf("sweep %+v", r)
				}
			}},
	}
	for i, tc := range calls {
		got, err := tc.do()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		tc.check(t, got)
		reqs := f.requests()
		if len(reqs) != i+1 {
			t.Fatalf("%s: %d requests in all, want %d", tc.name, len(reqs), i+1)
		}
		r := reqs[i]
		if r.Method != tc.method || r.Path != tc.path || r.RawQuery != "" {
			t.Errorf("%s: %s %s?%s, want %s %s", tc.name, r.Method, r.Path, r.RawQuery, tc.method, tc.path)
		}
		if r.Body != tc.body {
			t.Errorf("%s: body %q, want %q", tc.name, r.Body, tc.body)
		}
		if got := r.Header.Get("Authorization"); got != tc.credential {
			t.Errorf("%s: Authorization %q, want %q", tc.name, got, tc.credential)
		}
		if ct := r.Header.Get("Content-Type"); (tc.body != "") != (ct == "application/json") {
			t.Errorf("%s: Content-Type %q with body %q", tc.name, ct, r.Body)
		}
		// Every POST but a fill is keyed: a fill stores nothing, and a key
		// would cost the server two write transactions on its hottest path.
		keyed := tc.method == "POST" && tc.path != "/v1/sdk/fill"
		if idem := r.Header.Get("Idempotency-Key"); keyed != idemKeyRE.MatchString(idem) {
			t.Errorf("%s: Idempotency-Key %q on a %s %s", tc.name, idem, tc.method, tc.path)
		}
	}
}

// TestSDKMethodsSendNoCredential: the in-app SDK's calls carry no
// Authorization whatever credentials the client (or the client it was
// derived from) holds; the caller's idempotency key is sent on every retry.
func TestSDKMethodsSendNoCredential(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n%2 == 1 { // each call's first attempt fails
			writeJSON(w, 503, errBody("unavailable", "x", nil))
			return
		}
		writeJSON(w, 200, sdkAnswers[r.URL.Path])
	})
	base := f.client(xpromo.WithAdminToken("admintok"))
	c := base.With(xpromo.WithAPIKey("xp_test_other"))
	ctx := context.Background()
	sends := map[string]func(opt xpromo.CallOption) error{
		"fill": func(o xpromo.CallOption) error {
			_, err := c.SDKFill(ctx, &xpromo.FillRequest{AppID: "app_p", Slot: xpromo.SlotBeforeQuit, Platform: xpromo.PlatformMac}, o)
			return err
		},
		"click": func(o xpromo.CallOption) error {
			_, err := c.SDKClick(ctx, &xpromo.ClickRequest{Token: "t"}, o)
			return err
		},
		"install": func(o xpromo.CallOption) error {
			_, err := c.SDKInstall(ctx, &xpromo.InstallRequest{Token: "t", Countersignature: "c"}, o)
			return err
		},
		"heartbeat": func(o xpromo.CallOption) error {
			_, err := c.SDKHeartbeat(ctx, &xpromo.HeartbeatRequest{Heartbeat: "h"}, o)
			return err
		},
	}
	for name, send := range sends {
		if err := send(xpromo.WithIdempotencyKey(name + "_key")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	reqs := f.requests()
	if len(reqs) != 2*len(sends) {
		t.Fatalf("%d requests, want %d (one retry each)", len(reqs), 2*len(sends))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("%s sent Authorization %q: the in-app SDK holds no credential", r.Path, got)
		}
	}
	for i := 0; i < len(reqs); i += 2 {
		first, retry := reqs[i], reqs[i+1]
		if first.Header.Get("Idempotency-Key") != retry.Header.Get("Idempotency-Key") || first.Body != retry.Body {
			t.Errorf("%s: the retry changed the key (%q, %q) or the body", first.Path, first.Header.Get("Idempotency-Key"), retry.Header.Get("Idempotency-Key"))
		}
		if k := first.Header.Get("Idempotency-Key"); k == "" || k[len(k)-4:] != "_key" {
			t.Errorf("%s: Idempotency-Key %q, want the caller's", first.Path, k)
		}
	}
}

// TestSDKRefusalIsAnError: a refused claim is an *Error with the fraud
// code, and a nil params still sends a JSON object.
func TestSDKRefusalIsAnError(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 403, errBody(string(xpromo.FraudCTITTooShort), "too fast", nil))
	})
	resp, err := f.client().SDKInstall(context.Background(), nil)
	if resp != nil || !xpromo.IsCode(err, string(xpromo.FraudCTITTooShort)) {
		t.Fatalf("SDKInstall = %+v, %v; want the 403 fraud_ctit_too_short", resp, err)
	}
	var e *xpromo.Error
	if !errors.As(err, &e) || e.Status != 403 || e.RequestID != "req_test" {
		t.Errorf("error %#v", err)
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].Body != `{"token":"","countersignature":""}` {
		t.Errorf("requests %+v (a 403 is not retried; nil params send an object)", reqs)
	}
}
