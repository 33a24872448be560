package attribution

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// Vectors are the published test vectors of docs/protocol.md: fixed keys
// and secret, and the exact messages this implementation signs with them.
// An implementation in another language reproduces them byte for byte
// (Ed25519 signatures are deterministic) and must accept them.
type Vectors struct {
	Comment string `json:"comment"`

	PublisherSeedHex    string `json:"publisher_seed_hex"`
	PublisherPublicKey  string `json:"publisher_public_key"`
	PublisherKid        string `json:"publisher_kid"`
	PublisherPrivatePEM string `json:"publisher_private_pem"`
	AdvertiserSeedHex   string `json:"advertiser_seed_hex"`
	AdvertiserPublicKey string `json:"advertiser_public_key"`
	AdvertiserKid       string `json:"advertiser_kid"`
	MACKeyID            string `json:"mac_kid"`
	MACSecretHex        string `json:"mac_secret_hex"`

	Offer          Offer  `json:"offer"`
	CanonicalOffer string `json:"canonical_offer"`
	ClickTime      int64  `json:"click_time"`
	ClickHeader    string `json:"click_header_json"`
	ClickClaims    string `json:"click_claims_json"`
	ClickToken     string `json:"click_token"`
	ClickTokenHash string `json:"click_token_hash"`

	DeviceID        string `json:"device_id"`
	ClaimTime       int64  `json:"claim_time"`
	InstallClaims   string `json:"install_claims_json"`
	InstallToken    string `json:"install_token"`
	HeartbeatClaims string `json:"heartbeat_claims_json"`
	HeartbeatToken  string `json:"heartbeat_token"`
	HandoffURL      string `json:"handoff_url"`

	// The fill request the publisher's SDK signed before the offer (at
	// FillTime, the offer time).
	FillTime   int64  `json:"fill_time"`
	FillHeader string `json:"fill_header_json"`
	FillClaims string `json:"fill_claims_json"`
	FillToken  string `json:"fill_token"`
}

func makeVectors(t *testing.T) Vectors {
	offer := testOffer(t)
	clickTime := t0.Add(90 * time.Second)
	click, _ := clickAt(t, 90*time.Second)
	c, err := ParseClick(click)
	if err != nil {
		t.Fatal(err)
	}
	claimTime := clickTime.Add(4 * time.Minute)
	install, err := Countersign(advKeys.Private, advKeys.ID, click, testDevice, claimTime, offer.Advertiser)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := ParseInstall(install)
	hb, err := SignHeartbeat(advKeys.Private, advKeys.ID, HeartbeatClaims{
		AppID: offer.Advertiser, DeviceID: testDevice, TokenHash: c.Hash(), Seq: 1, SentAt: claimTime.Add(49 * time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeartbeat(hb)
	fill := testFill(t, FillClaims{AppID: offer.Publisher, Slot: "onboarding_complete", Platform: offer.Platform,
		DeviceID: testDevice, Locale: "de-CH", IssuedAt: offer.OfferedAt})
	fl, _ := ParseFill(fill)
	pemBytes, _ := MarshalPrivateKey(pubKeys.Private)
	handoff, _ := HandoffURL("https://dl.example.com/Snip.zip", click)
	return Vectors{
		Comment: "xpromo attribution test vectors (docs/protocol.md). Seeds are Ed25519 private key seeds; " +
			"every token below is what a conforming signer produces from them, byte for byte.",
		PublisherSeedHex:    hex.EncodeToString(pubKeys.Private.Seed()),
		PublisherPublicKey:  EncodePublicKey(pubKeys.Public),
		PublisherKid:        pubKeys.ID,
		PublisherPrivatePEM: string(pemBytes),
		AdvertiserSeedHex:   hex.EncodeToString(advKeys.Private.Seed()),
		AdvertiserPublicKey: EncodePublicKey(advKeys.Public),
		AdvertiserKid:       advKeys.ID,
		MACKeyID:            macKey.ID,
		MACSecretHex:        hex.EncodeToString(macKey.Secret),
		Offer:               offer,
		CanonicalOffer:      string(CanonicalOffer(offer)),
		ClickTime:           clickTime.Unix(),
		ClickHeader:         string(c.HeaderJSON),
		ClickClaims:         string(c.PayloadJSON),
		ClickToken:          click,
		ClickTokenHash:      c.Hash(),
		DeviceID:            testDevice,
		ClaimTime:           claimTime.Unix(),
		InstallClaims:       string(in.PayloadJSON),
		InstallToken:        install,
		HeartbeatClaims:     string(h.PayloadJSON),
		HeartbeatToken:      hb,
		HandoffURL:          handoff,
		FillTime:            fl.Claims.IssuedAt,
		FillHeader:          string(fl.HeaderJSON),
		FillClaims:          string(fl.PayloadJSON),
		FillToken:           fill,
	}
}

func TestVectors(t *testing.T) {
	path := filepath.Join("testdata", "vectors.json")
	got, err := json.MarshalIndent(makeVectors(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the encoding changed (go test -run TestVectors -update, and update docs/protocol.md)", path)
	}

	// And the published vectors verify, read back from the file alone.
	var v Vectors
	if err := json.Unmarshal(want, &v); err != nil {
		t.Fatal(err)
	}
	seed, _ := hex.DecodeString(v.PublisherSeedHex)
	pub, err := ParsePublicKey(v.PublisherPublicKey)
	if err != nil || !pub.Equal(ed25519.NewKeyFromSeed(seed).Public()) || KeyID(pub) != v.PublisherKid {
		t.Fatal("publisher key")
	}
	adv, _ := ParsePublicKey(v.AdvertiserPublicKey)
	secret, _ := hex.DecodeString(v.MACSecretHex)
	c, err := ParseClick(v.ClickToken)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseInstall(v.InstallToken)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := ParseHeartbeat(v.HeartbeatToken)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := ParseFill(v.FillToken)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(v.ClaimTime, 0)
	for name, err := range map[string]error{
		"click signature":     c.Verify(pub),
		"offer MAC":           MACKeys{v.MACKeyID: secret}.Verify(c.Claims.Offer),
		"click time":          c.CheckTime(now, 0),
		"countersignature":    in.Verify(adv, c),
		"install time":        in.CheckTime(c, now, 0),
		"heartbeat signature": hb.Verify(adv),
		"heartbeat time":      hb.CheckTime(time.Unix(hb.Claims.SentAt, 0), 0),
		"fill signature":      fl.Verify(pub),
		"fill time":           fl.CheckTime(time.Unix(v.FillTime, 0), 0),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c.Claims.Offer != v.Offer || c.Hash() != v.ClickTokenHash || in.Claims.TokenHash != v.ClickTokenHash || hb.Claims.TokenHash != v.ClickTokenHash {
		t.Error("claims disagree with the published offer and hash")
	}
}
