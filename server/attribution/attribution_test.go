package attribution_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// execer is what both stores offer tests for raw SQL.
type execer interface {
	Exec(ctx context.Context, query string) error
}

// line is the part of a wallet line the assertions compare.
type line struct {
	Type         ledger.LineType
	Amount       int64
	BalanceAfter int64
	Counterparty string
	ChainID      string
}

func lines(ls []ledger.Line) []line {
	out := make([]line, len(ls))
	for i, l := range ls {
		out[i] = line{l.Type, l.Amount, l.BalanceAfter, l.Counterparty, l.ChainID}
	}
	return out
}

// TestInstallActivatesAndClears walks a chain from fill to cleared, in cash
// and in credits mode, and checks the exact ledger lines on both sides
// (decisions §3: earn P − ⌊P×30/100⌋, or ⌊(P − ⌊P×30/100⌋)×12/10⌋ in credits).
func TestInstallActivatesAndClears(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		cash := w.pair("productivity", 0) // floor 400 on mac
		credits := w.pair("design", 0)    // floor 550 on mac
		require.NoError(t, s.(execer).Exec(w.ctx, `UPDATE apps SET earn_mode = 'credits' WHERE id = '`+credits.pub+`'`))

		type run struct {
			p              pair
			price, earn    int64
			token, device  string
			chain          attribution.Chain
			heartbeatCount int64
		}
		runs := []*run{{p: cash, price: 400, earn: 400 - 400*30/100}, {p: credits, price: 550, earn: (550 - 550*30/100) * 12 / 10}}
		assert.Equal(t, int64(280), runs[0].earn)
		assert.Equal(t, int64(462), runs[1].earn)
		for i, r := range runs {
			r.device = []string{"dev-cash", "dev-credits"}[i]
			var err error
			r.chain, r.token, err = w.clickAndInstall(r.p, r.device, residential)
			require.NoError(t, err)
			assert.Equal(t, attribution.StateInstalled, r.chain.State)
			assert.Equal(t, r.price, r.chain.PriceCents)
		}

		// Heartbeats before 48 hours are recorded and change nothing.
		w.clock.Advance(24 * time.Hour)
		for _, r := range runs {
			c, err := w.heartbeat(r.p.advKey, r.p.adv, r.device, r.token, 1)
			require.NoError(t, err)
			assert.Equal(t, attribution.StateInstalled, c.State)
		}
		res, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{}, res, "nothing is due before 48 hours")

		// The first heartbeat in [48 h, 72 h) activates; the sweep clears.
		w.clock.Advance(24 * time.Hour)
		for _, r := range runs {
			c, err := w.heartbeat(r.p.advKey, r.p.adv, r.device, r.token, 2)
			require.NoError(t, err)
			assert.Equal(t, attribution.StateActivated, c.State)
		}
		res, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{Cleared: 2}, res)

		for _, r := range runs {
			c := w.chain(r.chain.ID)
			assert.Equal(t, attribution.StateCleared, c.State)
			assert.False(t, c.ResolvedAt.IsZero())
			id, pub, adv := c.ID, r.p.pub, r.p.adv
			assert.Equal(t, []line{
				{ledger.TypeTopup, 100_000, 100_000, "", ""},
				{ledger.TypeEscrowHold, -r.price, 100_000 - r.price, pub, id},
				{ledger.TypeEscrowRelease, r.price, 100_000, pub, id},
				{ledger.TypeCharge, -r.price, 100_000 - r.price, pub, id},
			}, lines(w.wallet(adv)), "advertiser %s", adv)
			assert.Equal(t, []line{{ledger.TypeEarn, r.earn, r.earn, adv, id}}, lines(w.wallet(pub)), "publisher %s", pub)
			// Both signatures are on the chain, as presented.
			assert.Equal(t, r.token, c.ClickToken)
			assert.NotEmpty(t, c.Countersignature)
		}
		// The credits line says so.
		pubLines := w.wallet(credits.pub)
		assert.Equal(t, ledger.EarnCredits, pubLines[0].EarnMode)

		// A second sweep finds nothing: each chain settles once.
		res, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{}, res)
		w.verify()
	})
}

// TestActivationWindow: a heartbeat at 72 hours is too late, a chain without
// one is refunded once its window closed, and not a moment before.
func TestActivationWindow(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("utilities", 0) // floor 300 on mac
		late, lateTok, err := w.clickAndInstall(p, "dev-late", residential)
		require.NoError(t, err)
		silent, _, err := w.clickAndInstall(p, "dev-silent", residential)
		require.NoError(t, err)
		onTime, onTimeTok, err := w.clickAndInstall(p, "dev-on-time", residential)
		require.NoError(t, err)
		installedAt := onTime.InstalledAt

		// 47:59:59 after the last install: too early to activate.
		w.clock.Advance(installedAt.Add(48*time.Hour - time.Second).Sub(w.now()))
		c, err := w.heartbeat(p.advKey, p.adv, "dev-on-time", onTimeTok, 1)
		require.NoError(t, err)
		assert.Equal(t, attribution.StateInstalled, c.State)
		// Exactly 48 hours: activated.
		w.clock.Advance(time.Second)
		c, err = w.heartbeat(p.advKey, p.adv, "dev-on-time", onTimeTok, 2)
		require.NoError(t, err)
		assert.Equal(t, attribution.StateActivated, c.State)
		assert.Equal(t, installedAt.Add(48*time.Hour), c.ActivatedAt)

		// At the late chain's 72nd hour its window has closed: its first
		// heartbeat comes too late to activate it.
		w.clock.Advance(late.InstalledAt.Add(72 * time.Hour).Sub(w.now()))
		c, err = w.heartbeat(p.advKey, p.adv, "dev-late", lateTok, 1)
		require.NoError(t, err)
		assert.Equal(t, attribution.StateInstalled, c.State, "a heartbeat at 72 hours is too late")
		res, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{Cleared: 1, Refunded: 1}, res, "the activated chain clears, the late one is refunded")

		// The silent chain is refunded at its 72nd hour, not a second before.
		w.clock.Advance(silent.InstalledAt.Add(72*time.Hour - time.Second).Sub(w.now()))
		res, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{}, res)
		assert.Equal(t, attribution.StateInstalled, w.chain(silent.ID).State)
		w.clock.Advance(time.Second)
		res, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, attribution.SweepResult{Refunded: 1}, res)
		for _, ch := range []attribution.Chain{late, silent} {
			got := w.chain(ch.ID)
			assert.Equal(t, attribution.StateRefunded, got.State)
			assert.Equal(t, attribution.ReasonNotActivated, got.Reason)
		}
		assert.Equal(t, attribution.StateCleared, w.chain(onTime.ID).State)

		// The advertiser: three holds, two released, one charged. The
		// publisher earned once.
		adv := lines(w.wallet(p.adv))
		var held, released, charged int64
		for _, l := range adv {
			switch l.Type {
			case ledger.TypeEscrowHold:
				held += -l.Amount
			case ledger.TypeEscrowRelease:
				released += l.Amount
			case ledger.TypeCharge:
				charged += -l.Amount
			}
		}
		assert.Equal(t, []int64{900, 900, 300}, []int64{held, released, charged})
		assert.Equal(t, int64(100_000-300), adv[len(adv)-1].BalanceAfter)
		assert.Equal(t, []line{{ledger.TypeEarn, 210, 210, p.adv, onTime.ID}}, lines(w.wallet(p.pub)))
		w.verify()
	})
}

// TestTokenExpiry: an install claimed before exp (plus the tolerated skew)
// is accepted; at exp plus skew it is fraud_token_expired. With no skew the
// token lives exactly 15 minutes.
func TestTokenExpiry(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{ClockSkew: -1})
		p := w.pair("games", 0)

		tok := w.click(p, residential)
		_, err := w.claim(p, tok, "dev-1", 15*time.Minute-time.Second, residential)
		require.NoError(t, err, "14:59 after the click")

		tok = w.click(p, residential)
		_, err = w.claim(p, tok, "dev-2", 15*time.Minute, residential)
		assertFraud(t, err, attribution.FraudTokenExpired)
		// The refused claim did not burn the chain, but it expired anyway:
		// nothing can claim it any more.
		_, err = w.claim(p, tok, "dev-3", time.Hour, residential)
		assertFraud(t, err, attribution.FraudTokenExpired)

		// An offer not clicked within 15 minutes lapses.
		o := w.fill(p.pub)
		w.clock.Advance(15*time.Minute + time.Second)
		_, _, err = w.attr.Click(w.ctx, w.sign(p.pubKey, o, w.now()), residential)
		assertFraud(t, err, attribution.FraudTokenExpired)

		// The default skew (2 minutes) is tolerated after exp.
		w.attr.Rules.ClockSkew = 0
		tok = w.click(p, residential)
		_, err = w.claim(p, tok, "dev-4", 17*time.Minute-time.Second, residential)
		require.NoError(t, err)
		w.verify()
	})
}

func assertFraud(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, code, apperr.Code(err), "%v", err)
	assert.Equal(t, 403, apperr.HTTPStatus(err))
}

// TestStats: the advertiser's stats count fills, clicks, installs, clears,
// retention over closed windows and rejections by code.
func TestStats(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("finance", 0) // floor 600 on mac
		from := w.now()
		_, tok1, err := w.clickAndInstall(p, "dev-1", residential)
		require.NoError(t, err)
		_, _, err = w.clickAndInstall(p, "dev-2", residential)
		require.NoError(t, err)
		_, err = w.claim(p, tok1, "dev-9", time.Second, residential) // replay
		assertFraud(t, err, attribution.FraudTokenReused)
		w.fill(p.pub) // shown, never clicked
		require.NoError(t, w.attr.FlushFills(w.ctx))
		w.fill(p.pub) // counted in memory only

		w.clock.Advance(50 * time.Hour)
		_, err = w.heartbeat(p.advKey, p.adv, "dev-1", tok1, 1)
		require.NoError(t, err)
		w.clock.Advance(23 * time.Hour) // both windows closed
		_, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)

		st, err := w.attr.AppStats(w.ctx, p.adv, from, w.now())
		require.NoError(t, err)
		assert.Equal(t, attribution.ChainStats{
			Impressions: 4, Clicks: 2, FraudRejected: map[string]int64{attribution.FraudTokenReused: 1},
		}, st)
		// A period that ends before the click sees neither it nor the fills.
		st, err = w.attr.AppStats(w.ctx, p.adv, from.Add(-48*time.Hour), from.Add(-24*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, attribution.ChainStats{FraudRejected: map[string]int64{}}, st)

		net, err := w.attr.NetworkFigures(w.ctx, from, w.now())
		require.NoError(t, err)
		assert.Equal(t, 1.0/3, net.FraudPct, "one refused claim of three chains")
		assert.Equal(t, map[string]int64{"finance": 600}, net.AvgCPIByCategory)

		figures, err := w.attr.StatsFigures(w.ctx, p.adv, from, w.now())
		require.NoError(t, err)
		assert.Equal(t, xpromo.Stats{Impressions: 4, Clicks: 2, FraudRejected: map[string]int64{attribution.FraudTokenReused: 1}}, figures)

		// Through the market's stats: installs and clearing from the holds.
		stats, err := w.srv.Market.Stats(w.ctx, p.adv, xpromo.PeriodLast7Days)
		require.NoError(t, err)
		assert.Equal(t, xpromo.Stats{Impressions: 4, Clicks: 2, Installs: 2, Cleared: 1, Retention48h: 0.5,
			FraudRejected: map[string]int64{attribution.FraudTokenReused: 1}, FloorCents: 600, AvgClearingPriceCents: 600}, stats)

		// The publisher's own stats (as an advertiser) are empty.
		st, err = w.attr.AppStats(w.ctx, p.pub, from, w.now())
		require.NoError(t, err)
		assert.Equal(t, attribution.ChainStats{FraudRejected: map[string]int64{}}, st)
	})
}

// TestFill: fills need an approved publisher with a category; nothing is
// written by a fill.
func TestFill(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("education", 0)
		f, reason, err := w.fillSlot(p.pub, xpromo.SlotBeforeQuit, xpromo.PlatformMac)
		require.NoError(t, err)
		require.Empty(t, reason)
		assert.Equal(t, p.campaign, f.Offer.CampaignID)
		assert.Equal(t, int64(250), f.Offer.PriceCents)
		assert.Equal(t, xpromo.SponsoredLabel, f.Creative.SponsoredLabel)
		assert.Equal(t, p.adv, f.Creative.AdvertiserAppID)

		// On Windows there is no campaign of the advertiser's (a mac app).
		_, reason, err = w.fillSlot(p.pub, xpromo.SlotBeforeQuit, xpromo.PlatformWin)
		require.NoError(t, err)
		assert.Equal(t, xpromo.NoFillNoCampaign, reason)

		noCat := w.app("NoCategory", xpromo.PlatformMac, "")
		_, reason, err = w.fillSlot(noCat, xpromo.SlotBeforeQuit, xpromo.PlatformMac)
		require.NoError(t, err)
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, reason)

		// An app id no key is registered to: nobody can sign its fills.
		_, _, err = w.serveFill(w.signFill(p.pubKey, attribution.FillParams{PublisherAppID: "app_missing", Slot: xpromo.SlotBeforeQuit, Platform: xpromo.PlatformMac}, w.now()))
		assert.Equal(t, apperr.FraudBadSignature, apperr.Code(err))
		_, _, err = w.fillSlot(p.pub, "splash", xpromo.PlatformMac)
		assert.Equal(t, apperr.InvalidSlot, apperr.Code(err))
		linux := w.fillRequest(p.pub, xpromo.SlotBeforeQuit, xpromo.PlatformMac)
		linux.Platform = "linux"
		_, _, err = w.serveFill(linux)
		assert.Equal(t, apperr.InvalidPlatform, apperr.Code(err))
		// Fill serves only what VerifyFill accepted.
		_, _, err = w.attr.Fill(w.ctx, attribution.VerifiedFill{})
		assert.Error(t, err)
	})
}

// TestFillSignature: only a request signed by a registered, unrevoked SDK
// key of the publisher, over exactly its fields, recently, is served; each
// refusal is a 4xx code, records nothing and is not counted as an
// impression.
func TestFillSignature(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("finance", 0)
		other := w.pair("games", 0)
		base := attribution.FillParams{PublisherAppID: p.pub, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac,
			DeviceID: "dev_Zk3pV0m2Qm8y1c9tXr4s5A", Locale: "de-CH"}
		good := w.signFill(p.pubKey, base, w.now())
		revoked := w.key(p.pub)
		_, err := w.attr.RevokeSDKKey(w.ctx, p.pub, revoked.ID)
		require.NoError(t, err)
		w.keys[p.pub] = p.pubKey
		tampered := good
		tampered.Signature = good.Signature[:len(good.Signature)-4] + "AAAA"
		if tampered.Signature == good.Signature {
			tampered.Signature = good.Signature[:len(good.Signature)-4] + "BBBA"
		}
		otherSlot := good
		otherSlot.Slot = xpromo.SlotBeforeQuit
		otherDevice := good
		otherDevice.DeviceID = "dev_other"
		noLocale := good
		noLocale.Locale = ""
		heartbeat, err := token.SignHeartbeat(p.pubKey.Private, p.pubKey.ID, token.HeartbeatClaims{AppID: p.pub, DeviceID: "dev_1",
			TokenHash: token.TokenHashString("x"), Seq: 1, SentAt: w.now().Unix()})
		require.NoError(t, err)
		asHeartbeat := good
		asHeartbeat.Signature = heartbeat

		skew := token.DefaultClockSkew
		for name, tc := range map[string]struct {
			req  attribution.FillParams
			code string
		}{
			"unsigned":              {func() attribution.FillParams { r := good; r.Signature = ""; return r }(), apperr.FraudBadSignature},
			"garbage":               {func() attribution.FillParams { r := good; r.Signature = "a.b.c"; return r }(), apperr.FraudBadSignature},
			"another message":       {asHeartbeat, apperr.FraudBadSignature},
			"another app's key":     {w.signFill(other.pubKey, base, w.now()), apperr.FraudBadSignature},
			"an unregistered key":   {w.signFill(newKey(t), base, w.now()), apperr.FraudBadSignature},
			"a revoked key":         {w.signFill(revoked, base, w.now()), apperr.FraudBadSignature},
			"a bad signature":       {tampered, apperr.FraudBadSignature},
			"another slot signed":   {otherSlot, apperr.FraudBadSignature},
			"another device signed": {otherDevice, apperr.FraudBadSignature},
			"the locale left out":   {noLocale, apperr.FraudBadSignature},
			"stale":                 {w.signFill(p.pubKey, base, w.now().Add(-skew-time.Second)), apperr.FraudTokenExpired},
			"from the future":       {w.signFill(p.pubKey, base, w.now().Add(skew+time.Second)), apperr.FraudTokenExpired},
			"app id with NUL":       {func() attribution.FillParams { r := good; r.PublisherAppID = "app\x00x"; return r }(), apperr.InvalidAppID},
			"app id too long":       {func() attribution.FillParams { r := good; r.PublisherAppID = strings.Repeat("a", 129); return r }(), apperr.InvalidAppID},
			"device id of 1 MB":     {func() attribution.FillParams { r := good; r.DeviceID = strings.Repeat("d\x00", 1<<19); return r }(), apperr.InvalidDeviceID},
			"device id with space":  {func() attribution.FillParams { r := good; r.DeviceID = "dev 1"; return r }(), apperr.InvalidDeviceID},
			"locale of 1 MB":        {func() attribution.FillParams { r := good; r.Locale = strings.Repeat("de-", 1<<18); return r }(), apperr.InvalidLocale},
			"locale with NUL":       {func() attribution.FillParams { r := good; r.Locale = "de\x00CH"; return r }(), apperr.InvalidLocale},
			"slot of 1 MB":          {func() attribution.FillParams { r := good; r.Slot = xpromo.Slot(strings.Repeat("s", 1<<20)); return r }(), apperr.InvalidSlot},
		} {
			_, _, err := w.serveFill(tc.req)
			assert.Equal(t, tc.code, apperr.Code(err), "%s: %v", name, err)
			if status := apperr.Status(apperr.Code(err)); status < 400 || status > 499 {
				t.Errorf("%s: status %d", name, status)
			}
			if e, ok := err.(*apperr.Error); ok {
				assert.Less(t, len(e.Message), 400, "%s: the message echoes the refused value whole", name)
			}
		}

		// The signed request is served, with both optional fields, and
		// again within the skew (no replay cache: docs/protocol.md).
		for range 2 {
			f, reason, err := w.serveFill(good)
			require.NoError(t, err)
			require.Empty(t, reason)
			assert.Equal(t, p.campaign, f.Offer.CampaignID)
		}
		w.clock.Advance(skew)
		_, _, err = w.serveFill(good)
		require.NoError(t, err, "at the edge of the skew")
		w.clock.Advance(time.Second)
		_, _, err = w.serveFill(good)
		assert.Equal(t, apperr.FraudTokenExpired, apperr.Code(err))

		// Only the three served fills count as impressions; no refusal
		// recorded a chain or an event.
		require.NoError(t, w.attr.FlushFills(w.ctx))
		st, err := w.srv.Market.Stats(w.ctx, p.adv, xpromo.PeriodLast7Days)
		require.NoError(t, err)
		assert.Equal(t, int64(3), st.Impressions)
		assert.Empty(t, kinds(w.outbox(p.pub)))
		assert.Empty(t, kinds(w.outbox(p.adv)))
		as, err := w.attr.AppStats(w.ctx, p.adv, w.now().Add(-time.Hour), w.now())
		require.NoError(t, err)
		assert.Equal(t, attribution.ChainStats{Impressions: 3, FraudRejected: map[string]int64{}}, as)
	})
}

// TestSDKKeys: registration is idempotent per app, a key belongs to one
// app, revocation stops its signatures (clicks, claims, fills), a revoked
// key never returns.
func TestSDKKeys(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("security", 0)
		pub := tokenEncode(p.pubKey)

		k, created, err := w.attr.RegisterSDKKey(w.ctx, p.pub, pub)
		require.NoError(t, err)
		assert.False(t, created, "the same key again")
		assert.Equal(t, p.pubKey.ID, k.ID)
		_, _, err = w.attr.RegisterSDKKey(w.ctx, p.adv, pub)
		assert.Equal(t, apperr.SDKKeyInUse, apperr.Code(err))
		_, _, err = w.attr.RegisterSDKKey(w.ctx, p.pub, "not-a-key")
		assert.Equal(t, apperr.InvalidPublicKey, apperr.Code(err))
		_, _, err = w.attr.RegisterSDKKey(w.ctx, "app_missing", tokenEncode(newKey(t)))
		assert.Equal(t, apperr.NotFound, apperr.Code(err))

		// A click signed with the key works, until it is revoked.
		tok := w.click(p, residential)
		_, err = w.attr.RevokeSDKKey(w.ctx, p.adv, p.pubKey.ID)
		assert.Equal(t, apperr.NotFound, apperr.Code(err), "another app's key")
		k, err = w.attr.RevokeSDKKey(w.ctx, p.pub, p.pubKey.ID)
		require.NoError(t, err)
		assert.False(t, k.RevokedAt.IsZero())
		_, _, err = w.attr.Click(w.ctx, w.sign(p.pubKey, w.offer(p, "security", 250), w.now()), residential)
		assertFraud(t, err, attribution.FraudBadSignature)
		_, _, err = w.fillSlot(p.pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
		assert.Equal(t, apperr.FraudBadSignature, apperr.Code(err), "a fill signed with the revoked key")
		_, err = w.claim(p, tok, "dev-1", time.Minute, residential)
		assertFraud(t, err, attribution.FraudBadSignature)
		_, _, err = w.attr.RegisterSDKKey(w.ctx, p.pub, pub)
		assert.Equal(t, apperr.SDKKeyRevoked, apperr.Code(err))

		// At most 10 keys that are not revoked.
		for range 10 {
			_, _, err = w.attr.RegisterSDKKey(w.ctx, p.pub, tokenEncode(newKey(t)))
			require.NoError(t, err)
		}
		_, _, err = w.attr.RegisterSDKKey(w.ctx, p.pub, tokenEncode(newKey(t)))
		assert.Equal(t, apperr.TooManySDKKeys, apperr.Code(err))
		keys, err := w.attr.SDKKeys(w.ctx, p.pub)
		require.NoError(t, err)
		assert.Len(t, keys, 11)
	})
}

// TestChainAccess: a chain is readable by its two apps only.
func TestChainAccess(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("music-audio", 0)
		ch, _, err := w.clickAndInstall(p, "dev-1", residential)
		require.NoError(t, err)
		for _, app := range []string{p.pub, p.adv} {
			got, err := w.attr.Chain(w.ctx, app, ch.ID)
			require.NoError(t, err)
			assert.Equal(t, ch.ID, got.ID)
			wire := attribution.Wire(got)
			require.NotNil(t, wire.Countersignature)
			assert.Equal(t, got.ClickToken, wire.ClickToken)
		}
		other := w.app("Other", xpromo.PlatformMac, "")
		_, err = w.attr.Chain(w.ctx, other, ch.ID)
		assert.Equal(t, apperr.NotFound, apperr.Code(err))
		_, err = w.attr.Chain(w.ctx, p.pub, "ch_missing")
		assert.Equal(t, apperr.NotFound, apperr.Code(err))
	})
}
