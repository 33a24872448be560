package xpromo

import (
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
)

// Wire types of the SDK-facing endpoints under /v1/sdk/, which the SDK
// inside an app calls (additive to the API document). The SDK never carries
// the api_key: it names its app by app_id, and everything it asserts is
// signed with the app's SDK key (package attribution; docs/protocol.md is
// the full protocol):
//
//	POST /v1/sdk/fill       FillRequest      → 200 FillResponse (filled or not; the request signed)
//	POST /v1/sdk/click      ClickRequest     → 200 ClickResponse (chain `clicked`)
//	POST /v1/sdk/install    InstallRequest   → 200 InstallResponse
//	POST /v1/sdk/heartbeat  HeartbeatRequest → 200 HeartbeatResponse
//
// and, for app teams with their api_key, the registration of SDK public
// keys (SDKKey). Every refusal is answered 403 with an Error whose code is
// the fraud reason code (fraud_bad_signature, fraud_token_expired, …); a
// message that fails verification leaves the chain it names untouched,
// while a fraud rule refusing a claim whose signatures verified rejects the
// chain (state `rejected`). docs/protocol.md has the details.

// Slot is a lifecycle moment of a desktop app where a publisher shows one
// promoted app.
type Slot string

// Slots.
const (
	SlotOnboardingComplete Slot = "onboarding_complete" // first-run onboarding finished
	SlotUpdateInstalled    Slot = "update_installed"    // first launch after an update
	SlotAboutWindow        Slot = "about_window"        // the About window is open
	SlotSettingsIdle       Slot = "settings_idle"       // the settings window sat idle
	SlotBeforeQuit         Slot = "before_quit"         // the user quits (never blocks quitting)
)

// Valid reports whether s is one of the documented slots.
func (s Slot) Valid() bool {
	switch s {
	case SlotOnboardingComplete, SlotUpdateInstalled, SlotAboutWindow, SlotSettingsIdle, SlotBeforeQuit:
		return true
	}
	return false
}

// FillRequest is the body of POST /v1/sdk/fill: the publisher's SDK asks for
// a creative for one of its slots, and signs what it asks with the app's
// SDK key (Sign), so that nobody else can ask for the app's fills or count
// its impressions.
type FillRequest struct {
	// AppID is the publisher's app id (an identifier: at most 128
	// characters of A-Z a-z 0-9 - _ . : ~).
	AppID    string   `json:"app_id"`
	Slot     Slot     `json:"slot"`
	Platform Platform `json:"platform"`
	// DeviceID (optional) is the SDK's opaque per-install id (an
	// identifier), the same the device signs as "dev" in its
	// countersignatures.
	DeviceID string `json:"device_id,omitempty"`
	// Locale (optional) is a BCP 47 language tag, e.g. "de-CH", at most 35
	// characters.
	Locale string `json:"locale,omitempty"`
	// Signature is the request signed with the publisher's SDK key: a
	// compact JWS (typ xpromo-fill+jwt) whose claims are the fields above
	// and the signing time (attribution.FillClaims). Required; Sign sets
	// it.
	Signature string `json:"signature"`
}

// Claims are the fill request's fields as the signature covers them, signed
// at iat.
func (r *FillRequest) Claims(iat time.Time) attribution.FillClaims {
	return attribution.FillClaims{AppID: r.AppID, Slot: string(r.Slot), Platform: string(r.Platform),
		DeviceID: r.DeviceID, Locale: r.Locale, IssuedAt: iat.Unix()}
}

// Sign signs the request's fields at now with key, the publisher app's SDK
// key, and sets Signature. Sign each request when sending it: the server
// refuses one signed further than its clock skew (2 minutes) from its
// clock (fraud_token_expired). now is the device's clock; an SDK that
// talks to a server whose test clock was advanced signs with that clock.
func (r *FillRequest) Sign(key attribution.KeyPair, now time.Time) error {
	sig, err := attribution.SignFill(key.Private, key.ID, r.Claims(now))
	if err != nil {
		return err
	}
	r.Signature = sig
	return nil
}

// NoFillReason says why a fill request got nothing.
type NoFillReason string

// No-fill reasons. Clients must tolerate reasons not listed here.
const (
	// NoFillNoCampaign: no eligible campaign for the slot's category and platform.
	NoFillNoCampaign NoFillReason = "no_eligible_campaign"
	// NoFillPublisherNotEligible: the publisher app is not (or no longer)
	// trading: pending, rejected or suspended.
	NoFillPublisherNotEligible NoFillReason = "publisher_not_eligible"
)

// FillResponse is the 200 answer of POST /v1/sdk/fill, filled or not: no
// fill is an ordinary answer (Filled false, the other members null, and
// NoFillReason set), not a 204 or an error, so an SDK handles one status and
// one shape. A filled answer carries the creative to render and the offer
// the SDK signs if the user clicks before ExpiresAt.
type FillResponse struct {
	Filled bool `json:"filled"`
	// NoFillReason is null when Filled.
	NoFillReason *NoFillReason `json:"no_fill_reason"`
	// Creative is null when not Filled.
	Creative *Creative `json:"creative"`
	// Offer is the unsigned token body, sealed by the server's MAC; its jti
	// identifies the fill. The SDK copies it unchanged into the click
	// token's claims. Null when not Filled.
	Offer *attribution.Offer `json:"offer"`
	// ExpiresAt is when the offer lapses (oat + 15 minutes): a click after it
	// is refused, so the SDK stops showing the creative then. Null when not
	// Filled.
	ExpiresAt *time.Time `json:"expires_at"`
}

// SponsoredLabel is the label every creative carries (the IAB Native
// "sponsored" data asset).
const SponsoredLabel = "Sponsored"

// Limits of creative texts (IAB Native 1.2 recommendations), in characters:
// the server never sends longer ones, so a slot template can size for them.
const (
	MaxCreativeTitle       = 90
	MaxCreativeDescription = 140
	MaxCreativeCTA         = 15
)

// Creative is what a slot renders: an IAB Native-style unit promoting one
// advertiser app.
type Creative struct {
	// Title is the advertised app's name (at most 90 characters).
	Title string `json:"title"`
	// IconURL is a square icon (at least 128×128 px).
	IconURL string `json:"icon_url"`
	// Description is at most 140 characters.
	Description string `json:"description"`
	// CTA is the call to action, at most 15 characters, e.g. "Download".
	CTA string `json:"cta"`
	// SponsoredLabel is always "Sponsored" and must be shown.
	SponsoredLabel string `json:"sponsored_label"`
	// DownloadURL is where a click leads: the SDK opens it with the signed
	// click token added as the xpromo_click query parameter
	// (attribution.HandoffURL).
	DownloadURL     string `json:"download_url"`
	AdvertiserAppID string `json:"advertiser_app_id"`
}

// ClickRequest is the body of POST /v1/sdk/click: the publisher's SDK
// reports a click with the click token it signed.
type ClickRequest struct {
	Token string `json:"token"`
}

// ClickResponse is the 200 answer of POST /v1/sdk/click: the chain the click
// opened (state `clicked`), and until when an install can claim it (the
// token's exp). Reporting the same token again answers the same chain.
type ClickResponse struct {
	ChainID   string    `json:"chain_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// InstallRequest is the body of POST /v1/sdk/install: the advertiser's SDK,
// on first launch, posts the click token it found and its countersignature.
type InstallRequest struct {
	Token            string `json:"token"`
	Countersignature string `json:"countersignature"`
}

// InstallResponse is the 200 answer of POST /v1/sdk/install: the chain and
// its state (`installed`; the same claim posted again answers the chain in
// its current state). A refused claim is answered 403 with the fraud code
// (409 when the advertiser cannot pay) instead; the SDK has nothing more to
// do either way.
type InstallResponse struct {
	ChainID string     `json:"chain_id"`
	State   ChainState `json:"state"`
}

// HeartbeatRequest is the body of POST /v1/sdk/heartbeat: a signed
// heartbeat (compact JWS, typ xpromo-heartbeat+jwt).
type HeartbeatRequest struct {
	Heartbeat string `json:"heartbeat"`
}

// HeartbeatResponse is the 200 answer of POST /v1/sdk/heartbeat: the chain
// the heartbeat names and its state after it (`activated_48h` once a
// heartbeat arrived in [48 h, 72 h) after the install). An SDK can stop
// sending heartbeats for a chain whose state is no longer `installed`.
type HeartbeatResponse struct {
	ChainID string     `json:"chain_id"`
	State   ChainState `json:"state"`
}

// ChainState is the state of an event chain (one click, at most one
// install): `clicked` → `installed` → `activated_48h` → `cleared`, or
// `refunded`, or `rejected` (with a reason).
type ChainState string

// Chain states.
const (
	ChainClicked      ChainState = "clicked"       // a signed click was reported
	ChainInstalled    ChainState = "installed"     // countersigned install accepted; escrow held
	ChainActivated48h ChainState = "activated_48h" // heartbeat in [48 h, 72 h) after the install
	ChainCleared      ChainState = "cleared"       // advertiser charged, publisher paid
	ChainRefunded     ChainState = "refunded"      // escrow released, or a cleared install refunded
	ChainRejected     ChainState = "rejected"      // refused by a fraud rule; nothing was charged
)

// Valid reports whether s is one of the documented chain states.
func (s ChainState) Valid() bool {
	switch s {
	case ChainClicked, ChainInstalled, ChainActivated48h, ChainCleared, ChainRefunded, ChainRejected:
		return true
	}
	return false
}

// ChainReason is the stable reason a chain was rejected or refunded. The
// fraud codes are also the keys of Stats.FraudRejected.
type ChainReason string

// Chain reasons. Clients must tolerate reasons not listed here.
const (
	FraudTokenReused         ChainReason = "fraud_token_reused"         // the click token's jti was already claimed
	FraudTokenExpired        ChainReason = "fraud_token_expired"        // offer lapsed, or claimed at or after exp
	FraudBadSignature        ChainReason = "fraud_bad_signature"        // click token malformed, forged, or its offer MAC bad
	FraudBadCountersignature ChainReason = "fraud_bad_countersignature" // countersignature malformed, forged, or for another token
	FraudDatacenterASN       ChainReason = "fraud_datacenter_asn"       // claim from a datacenter or cloud network
	FraudSelfPromotion       ChainReason = "fraud_self_promotion"       // publisher and advertiser are the same party
	FraudCTITTooShort        ChainReason = "fraud_ctit_too_short"       // click to install under 10 s
	FraudInstallVelocity     ChainReason = "fraud_install_velocity"     // too many installs too fast
	FraudDeviceReused        ChainReason = "fraud_device_reused"        // the device already claimed an install of the app
	FraudAppMismatch         ChainReason = "fraud_app_mismatch"         // the claiming app is not the campaign's app
	// NotActivated: refunded because no heartbeat arrived in [48 h, 72 h).
	NotActivated ChainReason = "not_activated"
	// PublisherSuspended: refunded by the sweep instead of cleared, because
	// the publisher is suspended for fraud.
	PublisherSuspended ChainReason = "publisher_suspended"
	// FraudClawedBack is never a chain's reason: it is the reason of the
	// fraud.flagged event announcing that a cleared chain was clawed back
	// because its publisher was suspended for fraud.
	FraudClawedBack ChainReason = "fraud_clawed_back"
)

// Valid reports whether r is one of the documented chain reasons.
func (r ChainReason) Valid() bool {
	switch r {
	case FraudTokenReused, FraudTokenExpired, FraudBadSignature, FraudBadCountersignature,
		FraudDatacenterASN, FraudSelfPromotion, FraudCTITTooShort, FraudInstallVelocity,
		FraudDeviceReused, FraudAppMismatch, NotActivated, PublisherSuspended, FraudClawedBack:
		return true
	}
	return false
}

// IsFraud reports whether r is a fraud reason.
func (r ChainReason) IsFraud() bool { return r.Valid() && r != NotActivated }

// Chain is an event chain, the record LedgerLine.event_chain_id resolves
// to: the click token with the publisher SDK's signature and the install
// countersignature with the advertiser SDK's, two independent Ed25519
// signatures anyone can verify with the apps' registered SDK keys.
type Chain struct {
	ChainID string     `json:"chain_id"`
	State   ChainState `json:"state"`
	// Reason is null unless the chain is rejected or refunded.
	Reason          *ChainReason `json:"reason"`
	CampaignID      string       `json:"campaign_id"`
	PublisherAppID  string       `json:"publisher_app_id"`
	AdvertiserAppID string       `json:"advertiser_app_id"`
	// PriceCents is the price locked into the offer at fill.
	PriceCents int64     `json:"price_cents"`
	ClickedAt  time.Time `json:"clicked_at"`
	// InstalledAt, ActivatedAt and SettledAt are null until the chain gets
	// there; SettledAt is when it was cleared, refunded or rejected.
	InstalledAt *time.Time `json:"installed_at"`
	ActivatedAt *time.Time `json:"activated_at"`
	SettledAt   *time.Time `json:"settled_at"`
	// ClickToken is the compact click token, signed by the publisher's SDK.
	ClickToken string `json:"click_token"`
	// Countersignature is the compact install countersignature, signed by
	// the advertiser's SDK; null until an install claimed the chain.
	Countersignature *string `json:"countersignature"`
}

// RegisterSDKKeyRequest is the body of POST /v1/apps/{app_id}/sdk-keys: the
// public half of an SDK key pair made with `xpromo keys sdk new`.
type RegisterSDKKeyRequest struct {
	// PublicKey is the raw 32-byte Ed25519 public key, unpadded base64url
	// (attribution.EncodePublicKey).
	PublicKey string `json:"public_key"`
}

// SDKKey is a registered SDK public key of an app.
type SDKKey struct {
	// KeyID is attribution.KeyID of the key, the "kid" of what it signs.
	KeyID     string    `json:"key_id"`
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is null while the key is valid; tokens signed by a revoked
	// key are refused from then on.
	RevokedAt *time.Time `json:"revoked_at"`
}

// SDKKeyList is the answer of GET /v1/apps/{app_id}/sdk-keys.
type SDKKeyList struct {
	Keys []SDKKey `json:"keys"`
}

// MarshalJSON emits Keys as [] when nil.
func (l SDKKeyList) MarshalJSON() ([]byte, error) {
	type plain SDKKeyList
	if l.Keys == nil {
		l.Keys = []SDKKey{}
	}
	return json.Marshal(plain(l))
}
