package conformance

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The attribution protocol driven as the two SDKs would (docs/protocol.md):
// the publisher's signed fills and signed clicks, the advertiser's countersigned
// install claims and heartbeats, and the operators' test clock and sweep
// of the conformance profile.

// Now is the server's clock (GET /v1/admin/clock).
func (c *C) Now() time.Time {
	c.Helper()
	st, err := c.Admin().AdminGetClock(c.ctx)
	if err != nil {
		if xpromo.IsCode(err, "not_found") || xpromo.IsCode(err, "method_not_allowed") {
			c.Skipf("needs the test clock of the conformance profile (GET /v1/admin/clock): %v", err)
		}
		c.Fatalf("reading the server's clock: %v", err)
	}
	return st.Now
}

// Advance moves the server's clock forward by d and returns the new time.
func (c *C) Advance(d time.Duration) time.Time {
	c.Helper()
	st, err := c.Admin().AdminAdvanceClock(c.ctx, d)
	if err != nil {
		if xpromo.IsCode(err, "not_found") || xpromo.IsCode(err, "test_mode_only") {
			c.Skipf("needs the test clock of the conformance profile (POST /v1/admin/clock/advance in test mode): %v", err)
		}
		c.Fatalf("advancing the server's clock by %s: %v", d, err)
	}
	return st.Now
}

// Sweep runs the clearing sweep now (POST /v1/admin/attribution/sweep).
func (c *C) Sweep() xpromo.SweepResult {
	c.Helper()
	res, err := c.Admin().AdminSweep(c.ctx)
	if err != nil {
		c.Fatalf("running the clearing sweep: %v", err)
	}
	if res.Failed != 0 {
		c.Errorf("the sweep could not settle %d chains", res.Failed)
	}
	return *res
}

// SDKApp is an app with a registered SDK key, acting as its own SDK.
type SDKApp struct {
	*App
	Key attribution.KeyPair
}

// WithSDKKey generates an SDK key pair for a and registers its public half.
func (c *C) WithSDKKey(a *App) *SDKApp {
	c.Helper()
	kp, err := attribution.GenerateKey(rand.Reader)
	c.NoError(err, "generating an SDK key")
	key, err := a.Client.RegisterSDKKey(c.ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(kp.Public)})
	if xpromo.IsCode(err, "not_found") {
		// The app is the caller's own: the route is missing.
		c.Skipf("needs POST /v1/apps/{app_id}/sdk-keys (attribution): %v", err)
	}
	c.NoError(err, "registering an SDK key")
	if key.KeyID != kp.ID {
		c.Errorf("the registered key's key_id is %q, want %q (KeyID of the public key)", key.KeyID, kp.ID)
	}
	return &SDKApp{App: a, Key: kp}
}

// Market is a publisher and an advertiser set up to trade: both approved,
// the publisher selling a category, the advertiser funded with a campaign
// buying it.
type Market struct {
	Pub, Adv *SDKApp
	Category string
	Campaign *xpromo.Campaign
}

// NewMarket sets up a publisher and a funded advertiser trading in
// category (the rate card's first category when ""). The advertiser's
// campaign is paused when the check ends, so that it does not compete for
// later checks' fills.
func (c *C) NewMarket(category string, fund int64) *Market {
	c.Helper()
	if category == "" {
		category = someCategory(c)
	}
	pub := c.WithSDKKey(c.ApprovedApp(func(r *xpromo.RegisterAppRequest) { r.Category = category }))
	return &Market{Pub: pub, Category: category, Adv: c.NewAdvertiser(category, fund, nil)}
}

// NewAdvertiser is an approved advertiser with an SDK key, funded with
// fund cents, with a campaign buying category (as mod changes it), paused
// when the check ends.
func (c *C) NewAdvertiser(category string, fund int64, mod func(*xpromo.CreateCampaignRequest)) *SDKApp {
	c.Helper()
	adv := c.WithSDKKey(c.ApprovedApp())
	if fund > 0 {
		c.Fund(adv.App, fund)
	}
	camp := createCampaign(c, adv.App, func(r *xpromo.CreateCampaignRequest) {
		r.Categories, r.DailyBudgetCents = []string{category}, 1_000_000
		if mod != nil {
			mod(r)
		}
	})
	c.Cleanup(func() {
		// Best effort, on a fresh context: the check's may be done.
		_, _ = adv.Client.PauseCampaign(c.ctx, camp.CampaignID)
	})
	return adv
}

// FillRequest is a request for a creative in one of the publisher's slots,
// signed with its SDK key at the server's clock, as its SDK sends it.
func (c *C) FillRequest(pub *SDKApp) *xpromo.FillRequest {
	c.Helper()
	r := &xpromo.FillRequest{AppID: pub.ID, Slot: xpromo.SlotOnboardingComplete, Platform: pub.Platform, DeviceID: "dev_" + randomHex(8)}
	c.NoError(r.Sign(pub.Key, c.Now()), "signing a fill request")
	return r
}

// SendFill posts a fill request.
func (c *C) SendFill(r *xpromo.FillRequest) (*xpromo.FillResponse, error) {
	return c.Public().SDKFill(c.ctx, r)
}

// Fill asks for a creative in one of the publisher's slots, with a signed
// request.
func (c *C) Fill(pub *SDKApp) *xpromo.FillResponse {
	c.Helper()
	fill, err := c.SendFill(c.FillRequest(pub))
	if xpromo.IsCode(err, "not_found") {
		c.Skipf("needs POST /v1/sdk/fill (attribution): %v", err)
	}
	c.NoError(err, "POST /v1/sdk/fill")
	return fill
}

// FillFor fills the publisher's slot until the offer is for one of the
// advertisers (another party's campaign may share the stream on a shared
// server), at most 20 times, and fails the check when none is. Like an
// honest SDK it passes over a fill it must not show — an offer that lapsed
// before it arrived, or one advertising another app than its creative: the
// server's canaries (docs/apps.md "Canary check") — and fills again.
func (c *C) FillFor(pub *SDKApp, advs ...*SDKApp) (*xpromo.FillResponse, *SDKApp) {
	c.Helper()
	fill, adv, last := c.TryFillFor(pub, advs...)
	if fill == nil {
		c.Fatalf("no fill of %s's slot went to the expected advertisers (last: filled %v, no-fill reason %v)", pub.ID, last.Filled, last.NoFillReason)
	}
	return fill, adv
}

// TryFillFor is FillFor answering nil on no fill; last is the last answer.
func (c *C) TryFillFor(pub *SDKApp, advs ...*SDKApp) (fill *xpromo.FillResponse, adv *SDKApp, last *xpromo.FillResponse) {
	c.Helper()
	// Read before filling: callers look at the fill as the last exchange
	// (C.Last).
	now := c.Now()
	for range 20 {
		last = c.Fill(pub)
		if !last.Filled {
			return nil, nil, last
		}
		if !showable(last, now) {
			continue
		}
		for _, a := range advs {
			if last.Offer.Advertiser == a.ID {
				return last, a, last
			}
		}
	}
	return nil, nil, last
}

// showable reports whether an honest SDK would show the filled answer at
// now (the server's clock): its offer advertises the creative's app and
// has not lapsed.
func showable(f *xpromo.FillResponse, now time.Time) bool {
	if f.Offer == nil || f.Creative == nil || f.Offer.Advertiser != f.Creative.AdvertiserAppID {
		return false
	}
	return now.Before(time.Unix(f.Offer.OfferedAt, 0).Add(attribution.OfferTTL))
}

// SignClick signs the offer as the publisher's SDK, clicked at at.
func (c *C) SignClick(pub *SDKApp, offer attribution.Offer, at time.Time) string {
	c.Helper()
	tok, err := attribution.SignClick(pub.Key.Private, pub.Key.ID, attribution.NewClickClaims(offer, at))
	c.NoError(err, "signing the click")
	return tok
}

// ReportClick posts the click token.
func (c *C) ReportClick(token string) (*xpromo.ClickResponse, error) {
	return c.Public().SDKClick(c.ctx, &xpromo.ClickRequest{Token: token})
}

// Countersign signs the install as the advertiser's SDK, on device at at.
func (c *C) Countersign(adv *SDKApp, token, device string, at time.Time) string {
	c.Helper()
	cs, err := attribution.Countersign(adv.Key.Private, adv.Key.ID, token, device, at, adv.ID)
	c.NoError(err, "countersigning")
	return cs
}

// ClaimInstall posts the click token and its countersignature.
func (c *C) ClaimInstall(token, countersignature string) (*xpromo.InstallResponse, error) {
	return c.Public().SDKInstall(c.ctx, &xpromo.InstallRequest{Token: token, Countersignature: countersignature})
}

// Heartbeat posts a heartbeat of the chain of token, signed by the
// advertiser's SDK at at.
func (c *C) Heartbeat(adv *SDKApp, token, device string, seq int64, at time.Time) (*xpromo.HeartbeatResponse, error) {
	c.Helper()
	hb, err := attribution.SignHeartbeat(adv.Key.Private, adv.Key.ID, attribution.HeartbeatClaims{
		AppID: adv.ID, DeviceID: device, TokenHash: attribution.TokenHashString(token), Seq: seq, SentAt: at.Unix(),
	})
	c.NoError(err, "signing a heartbeat")
	return c.Public().SDKHeartbeat(c.ctx, &xpromo.HeartbeatRequest{Heartbeat: hb})
}

// Chain reads an event chain with the key of one of its apps.
func (c *C) Chain(a *App, id string) *xpromo.Chain {
	c.Helper()
	ch, err := a.Client.GetChain(c.ctx, id)
	c.NoError(err, "GET /v1/chains/"+id)
	return ch
}

// Install is one attributed install in progress.
type Install struct {
	Offer            attribution.Offer
	Token            string
	Countersignature string
	Device           string
	ChainID          string
	Adv              *SDKApp
}

// Installed runs fill, click (server time now), 30 seconds, and the install
// claim on a fresh device, and checks the chain is installed.
func (c *C) Installed(pub *SDKApp, advs ...*SDKApp) *Install {
	c.Helper()
	fill, adv := c.FillFor(pub, advs...)
	return c.InstallOffer(pub, adv, fill)
}

// InstallOffer clicks the offer of fill (server time now), waits 30
// seconds, claims the install on a fresh device, and checks the chain is
// installed.
func (c *C) InstallOffer(pub, adv *SDKApp, fill *xpromo.FillResponse) *Install {
	c.Helper()
	now := c.Now()
	tok := c.SignClick(pub, *fill.Offer, now)
	clk, err := c.ReportClick(tok)
	c.NoError(err, "reporting the click")
	at := c.Advance(30 * time.Second)
	in := &Install{Offer: *fill.Offer, Token: tok, Device: "dev_" + randomHex(10), ChainID: clk.ChainID, Adv: adv}
	in.Countersignature = c.Countersign(adv, tok, in.Device, at)
	resp, err := c.ClaimInstall(tok, in.Countersignature)
	c.NoError(err, "claiming the install")
	if resp.State != xpromo.ChainInstalled || resp.ChainID != clk.ChainID {
		c.Fatalf("install claim answered chain %s %s, want chain %s installed", resp.ChainID, resp.State, clk.ChainID)
	}
	return in
}

// signJWS signs claims as a compact JWS with the xpromo profile (alg
// Ed25519), independently of sdk/attribution: for messages the SDK's
// signers refuse to make (a countersignature for another app).
func signJWS(priv ed25519.PrivateKey, kid, typ string, claims any) string {
	b64 := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "Ed25519", "kid": kid, "typ": typ})
	cl, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(cl)
	return input + "." + b64(ed25519.Sign(priv, []byte(input)))
}
