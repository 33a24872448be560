package xpromo

import (
	"testing"

	"github.com/xpromo/xpromo/sdk/attribution"
)

func sdkGoldenCases() []goldenCase {
	offer := &attribution.Offer{Nonce: "eDd7UldXtJRCf4kBT5fXmQ", Publisher: "app_pub", Advertiser: "app_adv",
		CampaignID: "cmp_1", Category: "productivity", Platform: attribution.PlatformMac, PriceCents: 140,
		OfferedAt: 1795255200, MACKeyID: "mk_1", MAC: "1K6Y6C8qimFDWreW9eYU0GTFK-8YgWo-8L4zt_WSuI8"}
	return []goldenCase{
		{
			name:   "FillRequest/minimal",
			value:  FillRequest{AppID: "app_pub", Slot: SlotAboutWindow, Platform: PlatformMac, Signature: "h.p.s"},
			golden: `{"app_id":"app_pub","slot":"about_window","platform":"mac","signature":"h.p.s"}`,
		},
		{
			name:   "FillRequest/full",
			value:  FillRequest{AppID: "app_pub", Slot: SlotBeforeQuit, Platform: PlatformWin, DeviceID: "dev_1", Locale: "de-CH", Signature: "h.p.s"},
			golden: `{"app_id":"app_pub","slot":"before_quit","platform":"win","device_id":"dev_1","locale":"de-CH","signature":"h.p.s"}`,
		},
		{
			name: "FillResponse/filled",
			value: FillResponse{Filled: true, Creative: &Creative{Title: "Snip", IconURL: "https://cdn.example/snip.png",
				Description: "Screenshots, annotated.", CTA: "Download", SponsoredLabel: SponsoredLabel,
				DownloadURL: "https://dl.example.com/Snip.zip", AdvertiserAppID: "app_adv"},
				Offer: offer, ExpiresAt: ptr(t0)},
			golden: `{"filled":true,"no_fill_reason":null,
				"creative":{"title":"Snip","icon_url":"https://cdn.example/snip.png","description":"Screenshots, annotated.",
				"cta":"Download","sponsored_label":"Sponsored","download_url":"https://dl.example.com/Snip.zip","advertiser_app_id":"app_adv"},
				"offer":{"jti":"eDd7UldXtJRCf4kBT5fXmQ","iss":"app_pub","aud":"app_adv","campaign_id":"cmp_1","category":"productivity",
				"platform":"mac","price_cents":140,"oat":1795255200,"mac_kid":"mk_1","mac":"1K6Y6C8qimFDWreW9eYU0GTFK-8YgWo-8L4zt_WSuI8"},
				"expires_at":"2026-11-21T10:00:00Z"}`,
		},
		{
			name:   "FillResponse/no fill",
			value:  FillResponse{NoFillReason: ptr(NoFillNoCampaign)},
			golden: `{"filled":false,"no_fill_reason":"no_eligible_campaign","creative":null,"offer":null,"expires_at":null}`,
		},
		{
			name:   "ClickRequest",
			value:  ClickRequest{Token: "h.p.s"},
			golden: `{"token":"h.p.s"}`,
		},
		{
			name:   "ClickResponse",
			value:  ClickResponse{ChainID: "ch_1", ExpiresAt: t0},
			golden: `{"chain_id":"ch_1","expires_at":"2026-11-21T10:00:00Z"}`,
		},
		{
			name:   "InstallRequest",
			value:  InstallRequest{Token: "h.p.s", Countersignature: "h2.p2.s2"},
			golden: `{"token":"h.p.s","countersignature":"h2.p2.s2"}`,
		},
		{
			name:   "InstallResponse",
			value:  InstallResponse{ChainID: "ch_1", State: ChainInstalled},
			golden: `{"chain_id":"ch_1","state":"installed"}`,
		},
		{
			name:   "HeartbeatRequest",
			value:  HeartbeatRequest{Heartbeat: "h.p.s"},
			golden: `{"heartbeat":"h.p.s"}`,
		},
		{
			name:   "HeartbeatResponse",
			value:  HeartbeatResponse{ChainID: "ch_1", State: ChainActivated48h},
			golden: `{"chain_id":"ch_1","state":"activated_48h"}`,
		},
		{
			name: "Chain/clicked",
			value: Chain{ChainID: "ch_1", State: ChainClicked, CampaignID: "cmp_1", PublisherAppID: "app_pub",
				AdvertiserAppID: "app_adv", PriceCents: 140, ClickedAt: t0, ClickToken: "h.p.s"},
			golden: `{"chain_id":"ch_1","state":"clicked","reason":null,"campaign_id":"cmp_1","publisher_app_id":"app_pub",
				"advertiser_app_id":"app_adv","price_cents":140,"clicked_at":"2026-11-21T10:00:00Z",
				"installed_at":null,"activated_at":null,"settled_at":null,"click_token":"h.p.s","countersignature":null}`,
		},
		{
			name: "Chain/rejected",
			value: Chain{ChainID: "ch_1", State: ChainRejected, Reason: ptr(FraudCTITTooShort), CampaignID: "cmp_1",
				PublisherAppID: "app_pub", AdvertiserAppID: "app_adv", PriceCents: 140, ClickedAt: t0,
				InstalledAt: ptr(t0), SettledAt: ptr(t1), ClickToken: "h.p.s", Countersignature: ptr("h2.p2.s2")},
			golden: `{"chain_id":"ch_1","state":"rejected","reason":"fraud_ctit_too_short","campaign_id":"cmp_1",
				"publisher_app_id":"app_pub","advertiser_app_id":"app_adv","price_cents":140,
				"clicked_at":"2026-11-21T10:00:00Z","installed_at":"2026-11-21T10:00:00Z","activated_at":null,
				"settled_at":"2027-05-21T00:00:00Z","click_token":"h.p.s","countersignature":"h2.p2.s2"}`,
		},
		{
			name:   "RegisterSDKKeyRequest",
			value:  RegisterSDKKeyRequest{PublicKey: "5CRMXhbATtg-ojYS3HDT8Zi1X5vaV-QfWLcU4cmvyxM"},
			golden: `{"public_key":"5CRMXhbATtg-ojYS3HDT8Zi1X5vaV-QfWLcU4cmvyxM"}`,
		},
		{
			name:  "SDKKeyList",
			value: SDKKeyList{Keys: []SDKKey{{KeyID: "sk_7ZiRNeAXdKCYVvUrnVL2", PublicKey: "5CRMXhbATtg-ojYS3HDT8Zi1X5vaV-QfWLcU4cmvyxM", CreatedAt: t0}}},
			golden: `{"keys":[{"key_id":"sk_7ZiRNeAXdKCYVvUrnVL2","public_key":"5CRMXhbATtg-ojYS3HDT8Zi1X5vaV-QfWLcU4cmvyxM",
				"created_at":"2026-11-21T10:00:00Z","revoked_at":null}]}`,
		},
		{
			name:    "SDKKeyList/empty is []",
			value:   SDKKeyList{},
			golden:  `{"keys":[]}`,
			decoded: SDKKeyList{Keys: []SDKKey{}},
		},
	}
}

// The same checks as TestGoldenJSON, over the SDK-facing types.
func TestSDKWireGoldenJSON(t *testing.T) {
	testGoldenJSON(t, sdkGoldenCases())
}

func TestSDKWireEnums(t *testing.T) {
	valid := []interface{ Valid() bool }{
		SlotOnboardingComplete, SlotUpdateInstalled, SlotAboutWindow, SlotSettingsIdle, SlotBeforeQuit,
		ChainClicked, ChainInstalled, ChainActivated48h, ChainCleared, ChainRefunded, ChainRejected,
		FraudTokenReused, FraudTokenExpired, FraudBadSignature, FraudBadCountersignature, FraudDatacenterASN,
		FraudSelfPromotion, FraudCTITTooShort, FraudInstallVelocity, FraudDeviceReused, FraudAppMismatch, NotActivated,
	}
	for _, v := range valid {
		if !v.Valid() {
			t.Errorf("%T(%v).Valid() = false", v, v)
		}
	}
	for _, v := range []interface{ Valid() bool }{Slot("on_launch"), Slot(""), ChainState("activated"), ChainReason("fraud")} {
		if v.Valid() {
			t.Errorf("%T(%v).Valid() = true", v, v)
		}
	}
	if NotActivated.IsFraud() || !FraudTokenReused.IsFraud() || ChainReason("fraud_x").IsFraud() {
		t.Error("IsFraud")
	}
}

// The token package and the wire types name the same codes and platforms.
func TestSDKWireAgreesWithAttribution(t *testing.T) {
	for code, reason := range map[string]ChainReason{
		attribution.CodeBadSignature:        FraudBadSignature,
		attribution.CodeBadCountersignature: FraudBadCountersignature,
		attribution.CodeTokenExpired:        FraudTokenExpired,
		attribution.CodeAppMismatch:         FraudAppMismatch,
	} {
		if code != string(reason) {
			t.Errorf("attribution code %q, wire reason %q", code, reason)
		}
	}
	if attribution.PlatformMac != string(PlatformMac) || attribution.PlatformWin != string(PlatformWin) {
		t.Error("platform strings disagree")
	}
}

// Sign signs exactly the request's fields: the signature parses, verifies
// under the key and covers the request, and names the signing time.
func TestFillRequestSign(t *testing.T) {
	key, err := attribution.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := FillRequest{AppID: "app_pub", Slot: SlotBeforeQuit, Platform: PlatformWin, DeviceID: "dev_1", Locale: "de-CH"}
	if err := r.Sign(key, t0); err != nil {
		t.Fatal(err)
	}
	f, err := attribution.ParseFill(r.Signature)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(key.Public); err != nil {
		t.Fatal(err)
	}
	if err := f.Covers(r.Claims(t0)); err != nil {
		t.Fatal(err)
	}
	if f.Claims.IssuedTime() != t0 || f.Header.Kid != key.ID {
		t.Errorf("claims %+v, kid %s", f.Claims, f.Header.Kid)
	}
	other := r
	other.Slot = SlotAboutWindow
	if err := f.Covers(other.Claims(t0)); err == nil {
		t.Error("the signature covers another slot")
	}
	bad := FillRequest{AppID: "app pub", Slot: SlotBeforeQuit, Platform: PlatformWin}
	if err := bad.Sign(key, t0); err == nil || bad.Signature != "" {
		t.Errorf("signed an app id that is not an identifier: %v", err)
	}
}
