package assembly_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// sdkApp is a registered app as its team and its SDK see it.
type sdkApp struct {
	id, key string
	sdk     token.KeyPair
}

// register registers an app (with a category when given), approves it and
// registers an SDK key for it.
func (a *api) register(name, bundle, category string) sdkApp {
	a.t.Helper()
	reg := registration(name, bundle)
	if category != "" {
		reg["category"] = category
	}
	r := a.expect(201, a.do("POST", "/v1/apps", "", reg)).json(a.t)
	app := sdkApp{id: r["app_id"].(string), key: r["api_key"].(string)}
	a.expect(200, a.do("POST", "/v1/admin/apps/"+app.id+"/approve", adminToken, map[string]any{"reason": "vetted"}))
	kp, err := token.GenerateKey(nil)
	require.NoError(a.t, err)
	app.sdk = kp
	k := a.expect(201, a.do("POST", "/v1/apps/"+app.id+"/sdk-keys", app.key, map[string]any{"public_key": token.EncodePublicKey(kp.Public)})).json(a.t)
	assert.Equal(a.t, kp.ID, k["key_id"])
	return app
}

// fillRequest is app's fill request for slot, signed now (the server's
// clock) with its SDK key, as the publisher's SDK sends it.
func (a *api) fillRequest(app sdkApp, slot xpromo.Slot) xpromo.FillRequest {
	a.t.Helper()
	r := xpromo.FillRequest{AppID: app.id, Slot: slot, Platform: xpromo.PlatformMac}
	require.NoError(a.t, r.Sign(app.sdk, a.serverNow()))
	return r
}

// topUp pays a top-up through the test checkout page.
func (a *api) topUp(app sdkApp, cents int64) {
	a.t.Helper()
	top := a.expect(200, a.do("POST", "/v1/apps/"+app.id+"/top-up", app.key, map[string]any{"amount_cents": cents})).json(a.t)
	checkout := strings.TrimPrefix(top["checkout_url"].(string), a.url)
	a.expect(200, a.do("POST", checkout, "", nil, "Accept", "application/json"))
}

// serverNow reads the server's clock.
func (a *api) serverNow() time.Time {
	a.t.Helper()
	var c xpromo.ClockState
	require.NoError(a.t, json.Unmarshal(a.expect(200, a.do("GET", "/v1/admin/clock", adminToken, nil)).Body, &c))
	return c.Now
}

func (a *api) advance(d time.Duration) {
	a.t.Helper()
	a.expect(200, a.do("POST", "/v1/admin/clock/advance", adminToken, map[string]any{"seconds": int64(d / time.Second)}))
}

func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// wallet reads an app's ledger lines through the API.
func (a *api) wallet(app sdkApp) []xpromo.LedgerLine {
	a.t.Helper()
	return decode[xpromo.LedgerPage](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/ledger", app.key, nil))).Lines
}

type wline struct {
	Type         xpromo.LineType
	Amount       int64
	BalanceAfter int64
	Counterparty string
	Chain        string
}

func wlines(ls []xpromo.LedgerLine) []wline {
	out := make([]wline, len(ls))
	for i, l := range ls {
		out[i] = wline{Type: l.Type, Amount: l.AmountCents, BalanceAfter: l.BalanceAfter}
		if l.CounterpartyAppID != nil {
			out[i].Counterparty = *l.CounterpartyAppID
		}
		if l.EventChainID != nil {
			out[i].Chain = *l.EventChainID
		}
	}
	return out
}

// TestAttributionEndToEnd is the whole story through the HTTP API, on both
// stores, as a black-box client (the demo, the conformance suite) plays it:
// two apps register and are approved, the advertiser tops up through the
// test checkout and runs a campaign, both register SDK keys; the publisher's
// SDK fills a slot and reports the click, the advertiser's SDK claims the
// install and sends a heartbeat after 48 hours (the test clock), the sweep
// clears, and both ledgers hold exactly decisions §3's lines, in cash and in
// credits mode, and the ledger verifies.
func TestAttributionEndToEnd(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		for _, mode := range []string{"cash", "credits"} {
			t.Run(mode, func(t *testing.T) {
				a.t = t
				category := map[string]string{"cash": "productivity", "credits": "developer-tools"}[mode]
				price := map[string]int64{"cash": 400, "credits": 500}[mode] // the categories' mac floors
				pub := a.register("Pub-"+mode, "com.example.pub."+mode, category)
				adv := a.register("Adv-"+mode, "com.example.adv."+mode, "")
				if mode == "credits" {
					require.NoError(t, s.(interface {
						Exec(context.Context, string) error
					}).Exec(context.Background(), `UPDATE apps SET earn_mode = 'credits' WHERE id = '`+pub.id+`'`))
				}
				a.topUp(adv, 20_000)
				a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{category}, "daily_budget_cents": 5000}))

				// Fill: the publisher's SDK gets the creative and the sealed offer.
				fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
				require.True(t, fill.Filled, "%+v", fill)
				assert.Equal(t, adv.id, fill.Creative.AdvertiserAppID)
				assert.Equal(t, price, fill.Offer.PriceCents)

				// Click: signed by the publisher's SDK key.
				clickAt := a.serverNow()
				tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*fill.Offer, clickAt))
				require.NoError(t, err)
				click := decode[xpromo.ClickResponse](t, a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok})))
				assert.Equal(t, clickAt.Truncate(time.Second).Add(15*time.Minute), click.ExpiresAt.UTC())

				// Install, a minute later: countersigned by the advertiser's SDK.
				a.advance(time.Minute)
				cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, "device-"+mode, a.serverNow(), adv.id)
				require.NoError(t, err)
				inst := decode[xpromo.InstallResponse](t, a.expect(200, a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs})))
				assert.Equal(t, click.ChainID, inst.ChainID)
				assert.Equal(t, xpromo.ChainInstalled, inst.State)
				// The balance: the price is held in escrow until the chain clears.
				held := decode[xpromo.Balance](t, a.expect(200, a.do("GET", "/v1/apps/"+adv.id+"/balance", adv.key, nil)))
				assert.Equal(t, price, held.EscrowHeldCents)
				assert.Equal(t, 20_000-price, held.WalletCents)
				assert.Equal(t, 20_000-price, held.CreditsCents, "top-ups are not withdrawable")

				// 48 hours later, a heartbeat activates it; the sweep clears it.
				a.advance(48 * time.Hour)
				hb, err := token.SignHeartbeat(adv.sdk.Private, adv.sdk.ID, token.HeartbeatClaims{AppID: adv.id, DeviceID: "device-" + mode, TokenHash: token.TokenHashString(tok), Seq: 1, SentAt: a.serverNow().Unix()})
				require.NoError(t, err)
				beat := decode[xpromo.HeartbeatResponse](t, a.expect(200, a.do("POST", "/v1/sdk/heartbeat", "", xpromo.HeartbeatRequest{Heartbeat: hb})))
				assert.Equal(t, xpromo.ChainActivated48h, beat.State)
				sweep := decode[xpromo.SweepResult](t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil)))
				assert.Equal(t, xpromo.SweepResult{Cleared: 1}, sweep)

				// Both ledgers, exactly.
				id := click.ChainID
				take := price * 30 / 100
				earn := price - take
				if mode == "credits" {
					earn = (price - take) * 12 / 10
				}
				assert.Equal(t, []wline{
					{xpromo.LineTopup, 20_000, 20_000, "", ""},
					{xpromo.LineEscrowHold, -price, 20_000 - price, pub.id, id},
					{xpromo.LineEscrowRelease, price, 20_000, pub.id, id},
					{xpromo.LineCharge, -price, 20_000 - price, pub.id, id},
				}, wlines(a.wallet(adv)))
				pubLines := a.wallet(pub)
				assert.Equal(t, []wline{{xpromo.LineEarn, earn, earn, adv.id, id}}, wlines(pubLines))
				// The balances are the ledgers' sums: cash earnings are
				// withdrawable, credits-mode earnings spendable only.
				pb := decode[xpromo.Balance](t, a.expect(200, a.do("GET", "/v1/apps/"+pub.id+"/balance", pub.key, nil)))
				withdrawable := map[string]int64{"cash": earn, "credits": 0}[mode]
				assert.Equal(t, xpromo.Balance{AppID: pub.id, Currency: "EUR", WalletCents: earn, WithdrawableCents: withdrawable,
					CreditsCents: earn - withdrawable, MinPayoutCents: xpromo.MinPayoutCents, AsOf: pb.AsOf}, pb)
				ab := decode[xpromo.Balance](t, a.expect(200, a.do("GET", "/v1/apps/"+adv.id+"/balance", adv.key, nil)))
				assert.Zero(t, ab.EscrowHeldCents)
				assert.Equal(t, 20_000-price, ab.WalletCents)

				// event_chain_id resolves, for both apps, to the chain with both
				// signatures, which verify with the registered keys.
				for _, app := range []sdkApp{pub, adv} {
					ch := decode[xpromo.Chain](t, a.expect(200, a.do("GET", "/v1/chains/"+*pubLines[0].EventChainID, app.key, nil)))
					assert.Equal(t, xpromo.ChainCleared, ch.State)
					require.NotNil(t, ch.Countersignature)
					c, err := token.ParseClick(ch.ClickToken)
					require.NoError(t, err)
					require.NoError(t, c.Verify(pub.sdk.Public))
					in, err := token.ParseInstall(*ch.Countersignature)
					require.NoError(t, err)
					require.NoError(t, in.Verify(adv.sdk.Public, c))
				}

				// Stats: the advertiser bought one cleared install at the floor.
				st := decode[xpromo.Stats](t, a.expect(200, a.do("GET", "/v1/apps/"+adv.id+"/stats", adv.key, nil)))
				assert.Equal(t, int64(1), st.Impressions)
				assert.Equal(t, int64(1), st.Clicks)
				assert.Equal(t, int64(1), st.Installs)
				assert.Equal(t, int64(1), st.Cleared)
				assert.Equal(t, price, st.AvgClearingPriceCents)
				assert.Equal(t, price, st.FloorCents)
			})
		}
		a.t = t
		rep, err := ledger.Verify(context.Background(), s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}

// contractAttribution exercises attribution's operations for TestContract:
// SDK keys, the SDK endpoints, chains, the test clock and the sweep, with
// their main refusals. strangerKey is the API key of an app outside the
// chain.
func contractAttribution(t *testing.T, a *api, strangerKey string) {
	pub := a.register("SDKPub", "com.example.sdkpub", "utilities")
	adv := a.register("SDKAdv", "com.example.sdkadv", "")
	a.topUp(adv, 10_000)
	a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"utilities"}, "daily_budget_cents": 1000}))

	// SDK keys.
	keys := decode[xpromo.SDKKeyList](t, a.expect(200, a.do("GET", "/v1/apps/"+pub.id+"/sdk-keys", pub.key, nil)))
	require.Len(t, keys.Keys, 1)
	assert.Equal(t, pub.sdk.ID, keys.Keys[0].KeyID)
	a.expect(200, a.do("POST", "/v1/apps/"+pub.id+"/sdk-keys", pub.key, map[string]any{"public_key": token.EncodePublicKey(pub.sdk.Public)}))
	assert.Equal(t, "sdk_key_in_use", a.expect(409, a.do("POST", "/v1/apps/"+adv.id+"/sdk-keys", adv.key, map[string]any{"public_key": token.EncodePublicKey(pub.sdk.Public)})).code(t))
	assert.Equal(t, "invalid_public_key", a.expect(422, a.do("POST", "/v1/apps/"+pub.id+"/sdk-keys", pub.key, map[string]any{"public_key": "AAAA"})).code(t))
	a.expect(404, a.do("POST", "/v1/apps/"+pub.id+"/sdk-keys", adv.key, map[string]any{"public_key": token.EncodePublicKey(pub.sdk.Public)}))

	// Fill, signed by the publisher's SDK key.
	fill := func(app sdkApp, slot xpromo.Slot) reply {
		return a.do("POST", "/v1/sdk/fill", "", a.fillRequest(app, slot))
	}
	bare := a.register("SDKBare", "com.example.sdkbare", "") // approved, no category
	none := decode[xpromo.FillResponse](t, a.expect(200, fill(bare, xpromo.SlotAboutWindow)))
	assert.False(t, none.Filled)
	assert.Equal(t, xpromo.NoFillPublisherNotEligible, *none.NoFillReason)
	assert.Equal(t, "invalid_slot", a.expect(422, fill(pub, "splash")).code(t))
	unsigned := xpromo.FillRequest{AppID: pub.id, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac}
	assert.Equal(t, "missing_field", a.expect(422, a.do("POST", "/v1/sdk/fill", "", unsigned)).code(t))
	forged := a.fillRequest(adv, xpromo.SlotAboutWindow) // the advertiser's key, signing for pub
	forged.AppID = pub.id
	assert.Equal(t, "fraud_bad_signature", a.expect(403, a.do("POST", "/v1/sdk/fill", "", forged)).code(t))
	missing := a.fillRequest(sdkApp{id: "app_missing", sdk: pub.sdk}, xpromo.SlotAboutWindow)
	assert.Equal(t, "fraud_bad_signature", a.expect(403, a.do("POST", "/v1/sdk/fill", "", missing)).code(t))
	f := decode[xpromo.FillResponse](t, a.expect(200, fill(pub, xpromo.SlotSettingsIdle)))
	require.True(t, f.Filled)

	// Click, then the install a minute later.
	tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*f.Offer, a.serverNow()))
	require.NoError(t, err)
	assert.Equal(t, "fraud_bad_signature", a.expect(403, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: "a.b.c"})).code(t))
	click := decode[xpromo.ClickResponse](t, a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok})))
	again := decode[xpromo.ClickResponse](t, a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok})))
	assert.Equal(t, click.ChainID, again.ChainID, "reporting a click again answers its chain")
	a.advance(time.Minute)
	claim := func(device string) reply {
		cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, device, a.serverNow(), adv.id)
		require.NoError(t, err)
		return a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs})
	}
	inst := decode[xpromo.InstallResponse](t, a.expect(200, claim("device-1")))
	assert.Equal(t, xpromo.ChainInstalled, inst.State)
	assert.Equal(t, "fraud_token_reused", a.expect(403, claim("device-2")).code(t))

	// The test clock, a heartbeat after 48 hours, the sweep.
	assert.Equal(t, "invalid_duration", a.expect(422, a.do("POST", "/v1/admin/clock/advance", adminToken, map[string]any{"seconds": 0})).code(t))
	before := a.serverNow()
	a.advance(48 * time.Hour)
	assert.Equal(t, before.Add(48*time.Hour), a.serverNow())
	beat := func(seq int64) reply {
		hb, err := token.SignHeartbeat(adv.sdk.Private, adv.sdk.ID, token.HeartbeatClaims{AppID: adv.id, DeviceID: "device-1", TokenHash: token.TokenHashString(tok), Seq: seq, SentAt: a.serverNow().Unix()})
		require.NoError(t, err)
		return a.do("POST", "/v1/sdk/heartbeat", "", xpromo.HeartbeatRequest{Heartbeat: hb})
	}
	assert.Equal(t, xpromo.ChainActivated48h, decode[xpromo.HeartbeatResponse](t, a.expect(200, beat(1))).State)
	assert.Equal(t, "fraud_token_reused", a.expect(403, beat(1)).code(t))
	assert.Equal(t, xpromo.SweepResult{Cleared: 1}, decode[xpromo.SweepResult](t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil))))

	// The chain, to its apps only.
	ch := decode[xpromo.Chain](t, a.expect(200, a.do("GET", "/v1/chains/"+click.ChainID, pub.key, nil)))
	assert.Equal(t, xpromo.ChainCleared, ch.State)
	a.expect(404, a.do("GET", "/v1/chains/"+click.ChainID, strangerKey, nil))
	// The chains lists: the chain on each app's side, none for a stranger;
	// a campaign filter reads its owner's (the advertiser's) side only, so
	// the campaign of another app matches nothing, even where the caller
	// published its chain.
	require.NotEmpty(t, ch.CampaignID)
	for _, c := range []struct {
		key, role, campaign string
		want                int
	}{
		{pub.key, "", "", 1}, {pub.key, "publisher", "", 1}, {pub.key, "advertiser", "", 0}, {adv.key, "advertiser", "", 1}, {strangerKey, "", "", 0},
		{adv.key, "", ch.CampaignID, 1}, {adv.key, "advertiser", ch.CampaignID, 1}, {adv.key, "publisher", ch.CampaignID, 0},
		{pub.key, "", ch.CampaignID, 0}, {pub.key, "publisher", ch.CampaignID, 0}, {strangerKey, "", ch.CampaignID, 0},
	} {
		q := "/v1/chains?state=cleared"
		if c.role != "" {
			q += "&role=" + c.role
		}
		if c.campaign != "" {
			q += "&campaign_id=" + c.campaign
		}
		page := decode[xpromo.ChainPage](t, a.expect(200, a.do("GET", q, c.key, nil)))
		require.Len(t, page.Chains, c.want, q)
		if c.want == 1 {
			assert.Equal(t, ch, page.Chains[0], "a listed chain is the chain as read by id")
		}
	}
	assert.Equal(t, "invalid_role", a.expect(422, a.do("GET", "/v1/chains?role=both", pub.key, nil)).code(t))
	assert.Equal(t, "invalid_chain_state", a.expect(422, a.do("GET", "/v1/chains?state=paid", pub.key, nil)).code(t))

	// Revocation.
	k := decode[xpromo.SDKKey](t, a.expect(200, a.do("POST", "/v1/apps/"+pub.id+"/sdk-keys/"+pub.sdk.ID+"/revoke", pub.key, nil)))
	assert.NotNil(t, k.RevokedAt)
	a.expect(404, a.do("POST", "/v1/apps/"+pub.id+"/sdk-keys/sk_missing/revoke", pub.key, nil))
}

// TestTrustedProxy: behind a configured trusted proxy, the fraud rules see
// the client's address from X-Forwarded-For (here a datacenter's).
func TestTrustedProxy(t *testing.T) {
	s := storagetest.SQLite(t)
	a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000,
		IPToASNFile: "../attribution/testdata/ip2asn-test.tsv", DatacentersFile: "../attribution/testdata/datacenters-test.txt",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	pub := a.register("Pub", "com.example.pub", "games")
	adv := a.register("Adv", "com.example.adv", "")
	a.topUp(adv, 10_000)
	a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"games"}, "daily_budget_cents": 5000}))
	install := func(client string) reply {
		fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotAboutWindow))))
		require.True(t, fill.Filled)
		tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*fill.Offer, a.serverNow()))
		require.NoError(t, err)
		a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok}, "X-Forwarded-For", "198.51.100.7"))
		a.advance(time.Minute)
		cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, "device-"+client, a.serverNow(), adv.id)
		require.NoError(t, err)
		return a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs}, "X-Forwarded-For", "192.0.2.1, "+client)
	}
	assert.Equal(t, "fraud_datacenter_asn", a.expect(403, install("203.0.113.9")).code(t))
	a.expect(200, install("198.51.100.8"))
}

// TestOfferSecretRotation: offers sealed with the previous secret still
// verify where it is configured as previous, and nowhere else.
func TestOfferSecretRotation(t *testing.T) {
	s := storagetest.SQLite(t)
	ctx := context.Background()
	s1, s2 := strings.Repeat("1", 32), strings.Repeat("2", 32)
	build := func(secret string, previous ...string) *assembly.Server {
		b, err := assembly.Build(assembly.Config{OfferSecret: secret, PreviousOfferSecrets: previous}, s)
		require.NoError(t, err)
		return b
	}
	old, rotated, fresh := build(s1), build(s2, s1), build(s2)
	_, err := assembly.Build(assembly.Config{OfferSecret: "short"}, s)
	assert.ErrorContains(t, err, "at least 32")

	app := func(name, category string) (string, token.KeyPair) {
		a, _, _, err := old.Apps.Register(ctx, apps.RegisterParams{Name: name, Platform: "mac", BundleID: "com.example." + name,
			Domain: "example.com", DownloadURL: "https://example.com/" + name + ".zip", ContactEmail: "team@example.com", Category: category})
		require.NoError(t, err)
		_, err = old.Apps.Act(ctx, a.ID, apps.Approve, "ok")
		require.NoError(t, err)
		kp, err := token.GenerateKey(nil)
		require.NoError(t, err)
		_, _, err = old.Attribution.RegisterSDKKey(ctx, a.ID, token.EncodePublicKey(kp.Public))
		require.NoError(t, err)
		return a.ID, kp
	}
	pub, pubKey := app("pub", "games")
	adv, _ := app("adv", "")
	op, err := ledger.TopUp("topup:rotation", adv, 10_000, "")
	require.NoError(t, err)
	_, err = (&ledger.Ledger{Store: s, Now: time.Now}).Post(ctx, op)
	require.NoError(t, err)
	_, err = old.Market.CreateCampaign(ctx, adv, market.CreateCampaignRequest{AppID: adv, Categories: []string{"games"}, DailyBudgetCents: 5000})
	require.NoError(t, err)

	req := attribution.FillParams{PublisherAppID: pub, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac}
	req.Signature, err = token.SignFill(pubKey.Private, pubKey.ID, token.FillClaims{AppID: pub, Slot: string(req.Slot), Platform: string(req.Platform), IssuedAt: time.Now().Unix()})
	require.NoError(t, err)
	v, err := old.Attribution.VerifyFill(ctx, req)
	require.NoError(t, err)
	f, reason, err := old.Attribution.Fill(ctx, v)
	require.NoError(t, err)
	require.Empty(t, reason)
	tok, err := token.SignClick(pubKey.Private, pubKey.ID, token.NewClickClaims(f.Offer, time.Now()))
	require.NoError(t, err)
	_, _, err = fresh.Attribution.Click(ctx, tok, netip.MustParseAddr("198.51.100.7"))
	assert.Equal(t, "fraud_bad_signature", apperr.Code(err), "a server without the old secret refuses the offer")
	_, _, err = rotated.Attribution.Click(ctx, tok, netip.MustParseAddr("198.51.100.7"))
	assert.NoError(t, err, "the previous secret still verifies")
}
