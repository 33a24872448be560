package conformance

import (
	"crypto/rand"
	"net/http"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Attribution: the protocol of docs/protocol.md between two SDKs and the
// server, its money (decisions §3, §5) and its fraud codes.
func attributionChecks() []Check {
	return []Check{
		{"SDK keys are registered, listed and revoked", checkSDKKeys},
		{"a fill offers a campaign of the publisher's stream, sealed and priced", checkFill},
		{"only a fill signed by the publisher's SDK key is served or counted", checkFillSigned},
		{"a signed click and a countersigned install hold escrow on a chain with two signatures", checkInstallHoldsEscrow},
		{"a heartbeat in [48 h, 72 h) activates; the sweep charges and pays 70% to the publisher", checkActivationClears},
		{"without a heartbeat in [48 h, 72 h) the install is refunded", checkRefund},
		{"refused messages answer their fraud code and change nothing", checkRefusals},
		{"a click token works once", checkTokenSingleUse},
		{"fraud rules reject authentic claims with their reason", checkFraudRules},
	}
}

func checkSDKKeys(c *C) {
	a := c.WithSDKKey(c.NewApp())
	ctx := c.Ctx()
	list, err := a.Client.ListSDKKeys(ctx, a.ID)
	c.NoError(err, "listing SDK keys")
	if len(list.Keys) != 1 || list.Keys[0].KeyID != a.Key.ID || list.Keys[0].PublicKey != attribution.EncodePublicKey(a.Key.Public) || list.Keys[0].RevokedAt != nil {
		c.Errorf("the app's SDK keys are %+v, want its one key %s, not revoked", list.Keys, a.Key.ID)
	}
	// A malformed public key is refused.
	_, err = a.Client.RegisterSDKKey(ctx, a.ID, &xpromo.RegisterSDKKeyRequest{PublicKey: "not-a-key"})
	if e := c.APIError(err, "registering a malformed public key"); e.Status != 422 {
		c.Errorf("a malformed public key: %d %s, want 422", e.Status, e.Code)
	}
	// (Another app's view of them is the auth area's.)
	// Revoked, it is listed as such.
	revoked, err := a.Client.RevokeSDKKey(ctx, a.ID, a.Key.ID)
	c.NoError(err, "revoking the key")
	if revoked.RevokedAt == nil {
		c.Errorf("the revoked key has no revoked_at: %+v", revoked)
	}
}

func checkFill(c *C) {
	m := c.NewMarket("", 20000)
	now := c.Now()
	fill, _ := c.FillFor(m.Pub, m.Adv)
	body := c.Last().JSON(c)
	requireKeys(c, "FillResponse", body, "filled", "no_fill_reason", "creative", "offer", "expires_at")
	if fill.NoFillReason != nil || fill.Creative == nil || fill.ExpiresAt == nil {
		c.Fatalf("a filled answer: %+v", fill)
	}
	cr, o := fill.Creative, fill.Offer
	if cr.SponsoredLabel != "Sponsored" || cr.AdvertiserAppID != m.Adv.ID || cr.DownloadURL == "" || cr.Title == "" {
		c.Errorf("creative %+v: want the advertiser's, labelled Sponsored, with a download_url", cr)
	}
	if len([]rune(cr.Title)) > 90 || len([]rune(cr.Description)) > 140 || len([]rune(cr.CTA)) > 15 {
		c.Errorf("creative texts over their limits (90, 140, 15): %+v", cr)
	}
	if o.Publisher != m.Pub.ID || o.Advertiser != m.Adv.ID || o.Category != m.Category || o.Platform != string(m.Pub.Platform) {
		c.Errorf("offer %+v: want iss %s, aud %s, category %s, platform %s", o, m.Pub.ID, m.Adv.ID, m.Category, m.Pub.Platform)
	}
	cat := category(c, m.Category)
	if o.PriceCents < cat.FloorCentsMin {
		c.Errorf("offer price %d is under the category's floor (%d..%d)", o.PriceCents, cat.FloorCentsMin, cat.FloorCentsMax)
	}
	if d := time.Unix(o.OfferedAt, 0).Sub(now); d < -time.Minute || d > time.Minute {
		c.Errorf("offer time %s is not the server's clock (%s)", time.Unix(o.OfferedAt, 0).UTC(), now)
	}
	if !fill.ExpiresAt.Equal(time.Unix(o.OfferedAt, 0).Add(15 * time.Minute)) {
		c.Errorf("expires_at %s, want oat + 15 minutes", fill.ExpiresAt)
	}
	if _, err := attribution.ParseClick(c.SignClick(m.Pub, *o, now)); err != nil {
		c.Errorf("the offer cannot be signed into a well-formed click token: %v", err)
	}
	// A publisher that is not trading (pending) gets no fill.
	pending := c.WithSDKKey(c.NewApp(func(r *xpromo.RegisterAppRequest) { r.Category = m.Category }))
	nf := c.Fill(pending)
	if nf.Filled || nf.NoFillReason == nil || *nf.NoFillReason != xpromo.NoFillPublisherNotEligible {
		c.Errorf("a pending publisher's fill: %+v, want no fill, publisher_not_eligible", nf)
	}
	if raw := c.Last().JSON(c); raw["offer"] != nil || raw["creative"] != nil {
		c.Errorf("a no-fill answer carries an offer or creative: %v", raw)
	}
}

func checkFillSigned(c *C) {
	m := c.NewMarket("", 20000)
	c.FillFor(m.Pub, m.Adv) // the stream is live
	impressions := func() int64 {
		s, err := m.Adv.Client.GetStats(c.Ctx(), m.Adv.ID, nil)
		c.NoError(err, "advertiser's stats")
		return s.Impressions
	}
	before := impressions()

	// Unsigned: the old request body, without signature.
	unsigned := c.FillRequest(m.Pub)
	unsigned.Signature = ""
	_, err := c.SendFill(unsigned)
	c.ExpectError(err, 422, "missing_field", "an unsigned fill")
	// Signed by a key that is not the publisher's: a stranger's, another
	// app's.
	stranger, err := attribution.GenerateKey(rand.Reader)
	c.NoError(err, "a key")
	other := c.WithSDKKey(c.NewApp())
	for name, key := range map[string]attribution.KeyPair{"an unregistered key": stranger, "another app's key": other.Key} {
		r := c.FillRequest(m.Pub)
		c.NoError(r.Sign(key, c.Now()), "signing")
		_, err = c.SendFill(r)
		c.ExpectError(err, 403, "fraud_bad_signature", "a fill signed by "+name)
	}
	// A signature over another request: the slot and the device changed
	// after signing.
	moved := c.FillRequest(m.Pub)
	moved.Slot = xpromo.SlotBeforeQuit
	_, err = c.SendFill(moved)
	c.ExpectError(err, 403, "fraud_bad_signature", "a fill whose slot is not the one signed")
	moved = c.FillRequest(m.Pub)
	moved.DeviceID = "dev_" + randomHex(8)
	_, err = c.SendFill(moved)
	c.ExpectError(err, 403, "fraud_bad_signature", "a fill whose device is not the one signed")
	// Signed 20 minutes ago: stale whatever skew within the protocol's 2
	// minutes the server tolerates.
	stale := c.FillRequest(m.Pub)
	c.NoError(stale.Sign(m.Pub.Key, c.Now().Add(-20*time.Minute)), "signing")
	_, err = c.SendFill(stale)
	c.ExpectError(err, 403, "fraud_token_expired", "a fill signed 20 minutes ago")
	// Bounded fields: a NUL in app_id, a device id of 1 MB.
	bad := c.FillRequest(m.Pub)
	bad.AppID = "app\x00" + m.Pub.ID
	_, err = c.SendFill(bad)
	if e := c.APIError(err, "a fill with a NUL in app_id"); e.Status != 422 && e.Status != 400 {
		c.Errorf("a fill with a NUL in app_id: %d %s, want 400 (invalid_encoding) or 422", e.Status, e.Code)
	}
	bad = c.FillRequest(m.Pub)
	bad.DeviceID = strings.Repeat("d", 1_000_000)
	_, err = c.SendFill(bad)
	if e := c.APIError(err, "a fill with a device_id of 1 MB"); e.Status != 422 && e.Status != 413 {
		c.Errorf("a fill with a device_id of 1 MB: %d %s, want 422 (or 413)", e.Status, e.Code)
	}
	if after := impressions(); after != before {
		c.Errorf("refused fills were counted: the advertiser's impressions went from %d to %d", before, after)
	}

	// Signed by the publisher's key, it is served and counted.
	fill, err := c.SendFill(c.FillRequest(m.Pub))
	c.NoError(err, "a signed fill")
	if !fill.Filled {
		c.Errorf("a signed fill of a trading publisher got nothing: %+v", fill)
	}
	if after := impressions(); fill.Filled && fill.Offer.Advertiser == m.Adv.ID && after != before+1 {
		c.Errorf("a served fill: the advertiser's impressions went from %d to %d, want +1", before, after)
	}
	// Its key revoked, the publisher's SDK can no longer ask.
	_, err = m.Pub.Client.RevokeSDKKey(c.Ctx(), m.Pub.ID, m.Pub.Key.ID)
	c.NoError(err, "revoking the publisher's key")
	_, err = c.SendFill(c.FillRequest(m.Pub))
	c.ExpectError(err, 403, "fraud_bad_signature", "a fill signed by a revoked key")
}

func checkInstallHoldsEscrow(c *C) {
	c.Advance(2 * time.Hour) // fresh velocity windows
	m := c.NewMarket("", 20000)
	in := c.Installed(m.Pub, m.Adv)
	price := in.Offer.PriceCents

	ch := c.Chain(m.Adv.App, in.ChainID)
	if ch.State != xpromo.ChainInstalled || ch.PublisherAppID != m.Pub.ID || ch.AdvertiserAppID != m.Adv.ID || ch.PriceCents != price || ch.InstalledAt == nil {
		c.Errorf("chain %+v: want installed, between %s and %s, price %d", ch, m.Pub.ID, m.Adv.ID, price)
	}
	// The chain holds two independent signatures, each verifiable with the
	// registered key of its app.
	click, err := attribution.ParseClick(ch.ClickToken)
	if err != nil || click.Verify(m.Pub.Key.Public) != nil {
		c.Errorf("the chain's click token does not verify with the publisher's SDK key: %v", err)
	}
	if ch.Countersignature == nil {
		c.Fatalf("the chain has no countersignature")
	}
	inst, err := attribution.ParseInstall(*ch.Countersignature)
	if err == nil && click != nil {
		err = inst.Verify(m.Adv.Key.Public, click)
	}
	if err != nil || inst.Claims.TokenHash != attribution.TokenHashString(ch.ClickToken) {
		c.Errorf("the chain's countersignature does not verify with the advertiser's SDK key over the click token: %v", err)
	}
	// The publisher reads it too (a third app's view is the auth area's).
	c.Chain(m.Pub.App, in.ChainID)

	// Escrow: the advertiser's wallet holds the price on the chain.
	lines := c.Lines(m.Adv.App, nil)
	last := lines[len(lines)-1]
	if last.Type != xpromo.LineEscrowHold || last.AmountCents != -price || last.EventChainID == nil || *last.EventChainID != in.ChainID {
		c.Errorf("the advertiser's last line is %+v, want escrow_hold of -%d on chain %s", last, price, in.ChainID)
	}
	if last.CounterpartyAppID != nil && *last.CounterpartyAppID != m.Pub.ID {
		c.Errorf("the hold's counterparty is %s, want the publisher %s", *last.CounterpartyAppID, m.Pub.ID)
	}
	if last.BalanceAfter != 20000-price {
		c.Errorf("balance_after %d, want %d", last.BalanceAfter, 20000-price)
	}
	if pl := c.Lines(m.Pub.App, nil); len(pl) != 0 {
		c.Errorf("the publisher earned before clearing: %+v", pl)
	}
	s, err := m.Adv.Client.GetStats(c.Ctx(), m.Adv.ID, nil)
	c.NoError(err, "advertiser's stats")
	if s.Installs != 1 || s.Cleared != 0 {
		c.Errorf("the advertiser's stats: %d installs, %d cleared; want 1, 0", s.Installs, s.Cleared)
	}
}

// earnOf is the publisher's cash earning from a cleared install priced p
// (decisions §3: the platform keeps p×30/100, integer math).
func earnOf(p int64) int64 { return p - p*30/100 }

func checkActivationClears(c *C) {
	c.Advance(2 * time.Hour)
	m := c.NewMarket("", 20000)
	in := c.Installed(m.Pub, m.Adv)
	price := in.Offer.PriceCents
	// Before 48 hours a heartbeat changes nothing.
	at := c.Advance(time.Hour)
	hb, err := c.Heartbeat(m.Adv, in.Token, in.Device, 1, at)
	c.NoError(err, "a heartbeat after 1 hour")
	if hb.State != xpromo.ChainInstalled {
		c.Errorf("a heartbeat 1 hour after the install moved the chain to %s", hb.State)
	}
	at = c.Advance(47 * time.Hour)
	hb, err = c.Heartbeat(m.Adv, in.Token, in.Device, 2, at)
	c.NoError(err, "a heartbeat 48 hours after the install")
	if hb.State != xpromo.ChainActivated48h && hb.State != xpromo.ChainCleared {
		c.Fatalf("a heartbeat 48 hours after the install: state %s, want activated_48h", hb.State)
	}
	c.Sweep()
	ch := c.Chain(m.Adv.App, in.ChainID)
	if ch.State != xpromo.ChainCleared || ch.ActivatedAt == nil || ch.SettledAt == nil {
		c.Fatalf("after the sweep the chain is %+v, want cleared", ch)
	}
	adv := c.Lines(m.Adv.App, nil)
	var hold, release, charge int
	for _, l := range adv {
		onChain := l.EventChainID != nil && *l.EventChainID == in.ChainID
		switch {
		case l.Type == xpromo.LineEscrowHold && onChain && l.AmountCents == -price:
			hold++
		case l.Type == xpromo.LineEscrowRelease && onChain && l.AmountCents == price:
			release++
		case l.Type == xpromo.LineCharge && onChain && l.AmountCents == -price:
			charge++
		}
	}
	if hold != 1 || release != 1 || charge != 1 {
		c.Errorf("the advertiser's ledger: %d holds, %d releases, %d charges of %d on the chain, want one each: %+v", hold, release, charge, price, adv)
	}
	if bal := adv[len(adv)-1].BalanceAfter; bal != 20000-price {
		c.Errorf("the advertiser's balance is %d, want %d", bal, 20000-price)
	}
	pub := c.Lines(m.Pub.App, nil)
	if len(pub) != 1 || pub[0].Type != xpromo.LineEarn || pub[0].AmountCents != earnOf(price) || pub[0].EventChainID == nil || *pub[0].EventChainID != in.ChainID {
		c.Errorf("the publisher's ledger is %+v, want one earn of %d (price %d less 30%%) on chain %s", pub, earnOf(price), price, in.ChainID)
	}
	// Sweeping again settles nothing twice.
	c.Sweep()
	if again := c.Lines(m.Pub.App, nil); len(again) != len(pub) {
		c.Errorf("a second sweep paid the publisher again: %+v", again)
	}
	// Once the install's 72-hour window has closed, every reading of
	// retention_48h agrees: the one install was retained.
	c.Advance(25 * time.Hour)
	s, err := m.Adv.Client.GetStats(c.Ctx(), m.Adv.ID, nil)
	c.NoError(err, "advertiser's stats")
	if s.Installs != 1 || s.Cleared != 1 || s.Retention48h != 1 || s.AvgClearingPriceCents != price {
		c.Errorf("the advertiser's stats %+v: want 1 install, 1 cleared, retention 1, average price %d", s, price)
	}
}

func checkRefund(c *C) {
	c.Advance(2 * time.Hour)
	m := c.NewMarket("", 20000)
	in := c.Installed(m.Pub, m.Adv)
	price := in.Offer.PriceCents
	at := c.Advance(72*time.Hour + time.Minute)
	// A heartbeat after the window does not activate the chain.
	if hb, err := c.Heartbeat(m.Adv, in.Token, in.Device, 1, at); err == nil && (hb.State == xpromo.ChainActivated48h || hb.State == xpromo.ChainCleared) {
		c.Errorf("a heartbeat 72 hours after the install activated the chain")
	}
	c.Sweep()
	ch := c.Chain(m.Adv.App, in.ChainID)
	if ch.State != xpromo.ChainRefunded || ch.Reason == nil || *ch.Reason != xpromo.NotActivated {
		c.Errorf("the chain is %s (reason %v), want refunded, not_activated", ch.State, ch.Reason)
	}
	adv := c.Lines(m.Adv.App, nil)
	last := adv[len(adv)-1]
	if last.Type != xpromo.LineEscrowRelease || last.AmountCents != price || last.BalanceAfter != 20000 {
		c.Errorf("the advertiser's last line is %+v, want escrow_release of %d back to 20000", last, price)
	}
	for _, l := range adv {
		if l.Type == xpromo.LineCharge {
			c.Errorf("a refunded install was charged: %+v", l)
		}
	}
	if pl := c.Lines(m.Pub.App, nil); len(pl) != 0 {
		c.Errorf("the publisher earned from a refunded install: %+v", pl)
	}
}

// fraudStatus is the status of a fraud refusal, as the error catalogue
// (docs/errors.md) lists every fraud code.
const fraudStatus = http.StatusForbidden

// expectRefused checks a refused message: the catalogue's status with the
// fraud code.
func expectRefused(c *C, err error, code, what string) {
	c.Helper()
	c.ExpectError(err, fraudStatus, code, what)
}

func checkRefusals(c *C) {
	c.Advance(2 * time.Hour)
	m := c.NewMarket("", 20000)
	third := c.WithSDKKey(c.ApprovedApp())
	fill, _ := c.FillFor(m.Pub, m.Adv)
	now := c.Now()
	tok := c.SignClick(m.Pub, *fill.Offer, now)

	// Click tokens: signed by a key not registered to the publisher; an
	// offer whose price was changed (its MAC no longer verifies); garbage.
	stranger, err := attribution.GenerateKey(rand.Reader)
	c.NoError(err, "a key")
	forged, err := attribution.SignClick(stranger.Private, stranger.ID, attribution.NewClickClaims(*fill.Offer, now))
	c.NoError(err, "signing")
	_, err = c.ReportClick(forged)
	expectRefused(c, err, "fraud_bad_signature", "a click signed by an unregistered key")
	tampered := *fill.Offer
	tampered.PriceCents++
	_, err = c.ReportClick(c.SignClick(m.Pub, tampered, now))
	expectRefused(c, err, "fraud_bad_signature", "a click on an offer whose price was changed")
	_, err = c.ReportClick("not.a.token")
	expectRefused(c, err, "fraud_bad_signature", "a malformed click token")

	clk, err := c.ReportClick(tok)
	c.NoError(err, "the genuine click")
	at := c.Advance(30 * time.Second)
	device := "dev_" + randomHex(10)

	// Install claims: a countersignature by an unregistered key; over
	// another token; by an app that is not the offer's advertiser.
	bad := signJWS(stranger.Private, stranger.ID, attribution.TypInstall, attribution.InstallClaims{
		TokenHash: attribution.TokenHashString(tok), DeviceID: device, ClaimedAt: at.Unix(), AppID: m.Adv.ID,
	})
	_, err = c.ClaimInstall(tok, bad)
	expectRefused(c, err, "fraud_bad_countersignature", "a countersignature by an unregistered key")
	otherTok := c.SignClick(m.Pub, *fill.Offer, now.Add(time.Second))
	_, err = c.ClaimInstall(tok, c.Countersign(m.Adv, otherTok, device, at))
	expectRefused(c, err, "fraud_bad_countersignature", "a countersignature over another click token")
	mismatch := signJWS(third.Key.Private, third.Key.ID, attribution.TypInstall, attribution.InstallClaims{
		TokenHash: attribution.TokenHashString(tok), DeviceID: device, ClaimedAt: at.Unix(), AppID: third.ID,
	})
	_, err = c.ClaimInstall(tok, mismatch)
	expectRefused(c, err, "fraud_app_mismatch", "an install claimed by an app that is not the offer's advertiser")

	// None of it changed anything: the chain is still clicked, no money moved.
	if ch := c.Chain(m.Adv.App, clk.ChainID); ch.State != xpromo.ChainClicked {
		c.Errorf("after refused claims the chain is %s, want clicked", ch.State)
	}
	for _, l := range c.Lines(m.Adv.App, nil) {
		if l.Type != xpromo.LineTopup {
			c.Errorf("a refused claim moved money: %+v", l)
		}
	}
	// 20 minutes after the click, the token has expired, whatever clock
	// skew within the protocol's 2 minutes the server tolerates.
	late := c.Advance(20 * time.Minute)
	_, err = c.ClaimInstall(tok, c.Countersign(m.Adv, tok, device, late))
	expectRefused(c, err, "fraud_token_expired", "an install claimed 20 minutes after the click")
	if ch := c.Chain(m.Adv.App, clk.ChainID); ch.State == xpromo.ChainInstalled {
		c.Errorf("an expired token installed the chain")
	}
}

func checkTokenSingleUse(c *C) {
	c.Advance(2 * time.Hour)
	m := c.NewMarket("", 20000)
	in := c.Installed(m.Pub, m.Adv)
	// The same claim again is a retry: the same chain, nothing more held.
	before := c.Lines(m.Adv.App, nil)
	again, err := c.ClaimInstall(in.Token, in.Countersignature)
	c.NoError(err, "the same install claim again (a retry)")
	if again.ChainID != in.ChainID || again.State != xpromo.ChainInstalled {
		c.Errorf("a retried claim answered chain %s %s, want %s installed", again.ChainID, again.State, in.ChainID)
	}
	// Another claim with the token (another device) is refused.
	at := c.Now()
	_, err = c.ClaimInstall(in.Token, c.Countersign(m.Adv, in.Token, "dev_"+randomHex(10), at))
	expectRefused(c, err, "fraud_token_reused", "a second install claim with the same click token (another device)")
	if after := c.Lines(m.Adv.App, nil); len(after) != len(before) {
		c.Errorf("a reused token moved money: %+v", after[len(before):])
	}
	// Reporting the same click again answers its chain; another token for
	// the same offer is refused.
	clk, err := c.ReportClick(in.Token)
	c.NoError(err, "reporting the same click again")
	if clk.ChainID != in.ChainID {
		c.Errorf("the same click reported again answered chain %s, want %s", clk.ChainID, in.ChainID)
	}
	_, err = c.ReportClick(c.SignClick(m.Pub, in.Offer, at.Add(-time.Second)))
	expectRefused(c, err, "fraud_token_reused", "another click token for an offer already clicked")
}

func checkFraudRules(c *C) {
	c.Advance(2 * time.Hour)
	m := c.NewMarket("", 50000)
	ctx := c.Ctx()
	// Click to install under 10 seconds (on the device's clock).
	fill, _ := c.FillFor(m.Pub, m.Adv)
	now := c.Now()
	tok := c.SignClick(m.Pub, *fill.Offer, now)
	_, err := c.ReportClick(tok)
	c.NoError(err, "click")
	expectRejected(c, m, tok, c.Countersign(m.Adv, tok, "dev_"+randomHex(10), now.Add(2*time.Second)), "fraud_ctit_too_short")

	// The same device installing the same app twice.
	first := c.Installed(m.Pub, m.Adv)
	fill, _ = c.FillFor(m.Pub, m.Adv)
	now = c.Now()
	tok = c.SignClick(m.Pub, *fill.Offer, now)
	_, err = c.ReportClick(tok)
	c.NoError(err, "click")
	at := c.Advance(30 * time.Second)
	expectRejected(c, m, tok, c.Countersign(m.Adv, tok, first.Device, at), "fraud_device_reused")

	// A rejected chain costs the advertiser nothing.
	holds := 0
	for _, l := range c.Lines(m.Adv.App, nil) {
		if l.Type == xpromo.LineEscrowHold {
			holds++
		}
	}
	if holds != 1 {
		c.Errorf("the advertiser has %d escrow holds, want 1 (the accepted install only)", holds)
	}
	s, err := m.Adv.Client.GetStats(ctx, m.Adv.ID, nil)
	c.NoError(err, "stats")
	for _, code := range []string{"fraud_ctit_too_short", "fraud_device_reused"} {
		if s.FraudRejected[code] < 1 {
			c.Errorf("the advertiser's fraud_rejected %v does not count %s", s.FraudRejected, code)
		}
	}
}

// expectRejected claims an install a fraud rule must reject: the answer is
// the fraud code (as a refusal), or 200 with the chain rejected for that
// reason (docs/protocol.md allows both readings today).
func expectRejected(c *C, m *Market, tok, cs, code string) {
	c.Helper()
	resp, err := c.ClaimInstall(tok, cs)
	if err != nil {
		expectRefused(c, err, code, "an install the rule "+code+" rejects")
		return
	}
	if resp.State != xpromo.ChainRejected {
		c.Errorf("an install the rule %s rejects: state %s", code, resp.State)
		return
	}
	ch := c.Chain(m.Adv.App, resp.ChainID)
	if ch.Reason == nil || string(*ch.Reason) != code {
		c.Errorf("the rejected chain's reason is %v, want %s", ch.Reason, code)
	}
}
