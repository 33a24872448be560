package attribution_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// fakeClock is the base clock of the world; tests move it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// world is a server assembled exactly as it ships (assembly.Build) on a real
// store, driven through the domain services.
type world struct {
	t      testing.TB
	ctx    context.Context
	store  storage.Store
	clock  *fakeClock
	srv    *assembly.Server
	attr   *attribution.Service
	ledger *ledger.Ledger
	seq    atomic.Int64

	keysMu sync.Mutex
	keys   map[string]token.KeyPair // the SDK key key() registered last, by app
}

// residential is an address no datacenter rule matches (EXAMPLE-RESIDENTIAL
// in testdata/ip2asn-test.tsv).
var residential = netip.MustParseAddr("198.51.100.7")

func newWorld(t testing.TB, store storage.Store, rules attribution.Rules) *world {
	t.Helper()
	// 2026-11-21 09:00 UTC: far from a day boundary for a few hours.
	clock := &fakeClock{now: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
	srv, err := assembly.Build(assembly.Config{
		Now:             clock.Now,
		IPToASNFile:     "testdata/ip2asn-test.tsv",
		DatacentersFile: "testdata/datacenters-test.txt",
		FraudRules:      rules,
		ReadLimit:       1_000_000, WriteLimit: 1_000_000,
	}, store)
	require.NoError(t, err)
	return &world{t: t, ctx: context.Background(), store: store, clock: clock, srv: srv, attr: srv.Attribution,
		ledger: &ledger.Ledger{Store: store, Now: srv.Clock.Now}}
}

// app registers an approved app; category "" registers none.
func (w *world) app(name string, platform xpromo.Platform, category string) string {
	w.t.Helper()
	return w.appWithBundle(name, platform, category, fmt.Sprintf("com.example.app%d", w.seq.Add(1)))
}

func (w *world) appWithBundle(name string, platform xpromo.Platform, category, bundle string) string {
	w.t.Helper()
	n := w.seq.Add(1)
	a, _, _, err := w.srv.Apps.Register(w.ctx, apps.RegisterParams{
		Name: name, Platform: string(platform), BundleID: bundle,
		Domain: "example.com", DownloadURL: fmt.Sprintf("https://example.com/%s-%d.zip", name, n),
		ContactEmail: "team@example.com", Category: category,
	})
	require.NoError(w.t, err)
	_, err = w.srv.Apps.Act(w.ctx, a.ID, apps.Approve, "test")
	require.NoError(w.t, err)
	return a.ID
}

func (w *world) topUp(appID string, cents int64) {
	w.t.Helper()
	op, err := ledger.TopUp(fmt.Sprintf("topup:test-%d", w.seq.Add(1)), appID, cents, "test top-up")
	require.NoError(w.t, err)
	_, err = w.ledger.Post(w.ctx, op)
	require.NoError(w.t, err)
	w.srv.Market.Invalidate()
}

// campaign creates a campaign of appID in category (floor buyer when bid is 0).
func (w *world) campaign(appID, category string, daily, bid int64) string {
	w.t.Helper()
	req := market.CreateCampaignRequest{AppID: appID, Categories: []string{category}, DailyBudgetCents: daily}
	if bid > 0 {
		req.MaxBidCents = &bid
	}
	c, err := w.srv.Market.CreateCampaign(w.ctx, appID, req)
	require.NoError(w.t, err)
	return c.ID
}

// key makes and registers an SDK key for appID.
func (w *world) key(appID string) token.KeyPair {
	w.t.Helper()
	kp, err := token.GenerateKey(nil)
	require.NoError(w.t, err)
	_, created, err := w.attr.RegisterSDKKey(w.ctx, appID, token.EncodePublicKey(kp.Public))
	require.NoError(w.t, err)
	require.True(w.t, created)
	w.keysMu.Lock()
	if w.keys == nil {
		w.keys = map[string]token.KeyPair{}
	}
	w.keys[appID] = kp
	w.keysMu.Unlock()
	return kp
}

// sdkKey is the SDK key appID signs with: the last key() registered, or a
// new one.
func (w *world) sdkKey(appID string) token.KeyPair {
	w.t.Helper()
	w.keysMu.Lock()
	kp, ok := w.keys[appID]
	w.keysMu.Unlock()
	if ok {
		return kp
	}
	return w.key(appID)
}

// fillRequest is pub's fill request for slot on platform, signed now with
// pub's SDK key, as the publisher's SDK sends it.
func (w *world) fillRequest(pub string, slot xpromo.Slot, platform xpromo.Platform) attribution.FillParams {
	w.t.Helper()
	return w.signFill(w.sdkKey(pub), attribution.FillParams{PublisherAppID: pub, Slot: slot, Platform: platform}, w.now())
}

// signFill signs p's fields with kp at `at`.
func (w *world) signFill(kp token.KeyPair, p attribution.FillParams, at time.Time) attribution.FillParams {
	w.t.Helper()
	sig, err := token.SignFill(kp.Private, kp.ID, token.FillClaims{AppID: p.PublisherAppID, Slot: string(p.Slot),
		Platform: string(p.Platform), DeviceID: p.DeviceID, Locale: p.Locale, IssuedAt: at.Unix()})
	require.NoError(w.t, err)
	p.Signature = sig
	return p
}

// serveFill verifies a fill request and serves it, as POST /v1/sdk/fill
// does.
func (w *world) serveFill(p attribution.FillParams) (attribution.Fill, xpromo.NoFillReason, error) {
	v, err := w.attr.VerifyFill(w.ctx, p)
	if err != nil {
		return attribution.Fill{}, "", err
	}
	return w.attr.Fill(w.ctx, v)
}

// fillSlot is pub's signed fill of slot on platform, served.
func (w *world) fillSlot(pub string, slot xpromo.Slot, platform xpromo.Platform) (attribution.Fill, xpromo.NoFillReason, error) {
	w.t.Helper()
	return w.serveFill(w.fillRequest(pub, slot, platform))
}

func (w *world) now() time.Time { return w.srv.Clock.Now() }

// fill asks for a creative in pub's slot and requires one.
func (w *world) fill(pub string) token.Offer {
	w.t.Helper()
	f, reason, err := w.fillSlot(pub, xpromo.SlotAboutWindow, xpromo.PlatformMac)
	require.NoError(w.t, err)
	require.Empty(w.t, reason, "want a fill")
	return f.Offer
}

// sign makes the click token of offer clicked at `at`.
func (w *world) sign(kp token.KeyPair, o token.Offer, at time.Time) string {
	w.t.Helper()
	tok, err := token.SignClick(kp.Private, kp.ID, token.NewClickClaims(o, at))
	require.NoError(w.t, err)
	return tok
}

func (w *world) countersign(kp token.KeyPair, tok, device string, at time.Time, appID string) string {
	w.t.Helper()
	cs, err := token.Countersign(kp.Private, kp.ID, tok, device, at, appID)
	require.NoError(w.t, err)
	return cs
}

// pair is a publisher and an advertiser with registered keys, the
// advertiser's wallet funded and a campaign of its in category. Give each
// pair its own category, so that the publisher's fills award its campaign.
type pair struct {
	pub, adv       string
	pubKey, advKey token.KeyPair
	campaign       string
}

func (w *world) pair(category string, bid int64) pair {
	w.t.Helper()
	p := pair{pub: w.app("Publisher", xpromo.PlatformMac, category), adv: w.app("Advertiser", xpromo.PlatformMac, "")}
	p.pubKey, p.advKey = w.key(p.pub), w.key(p.adv)
	w.topUp(p.adv, 100_000)
	p.campaign = w.campaign(p.adv, category, 100_000, bid)
	return p
}

// click fills p's slot and reports a click on it now; it returns the token.
func (w *world) click(p pair, ip netip.Addr) string {
	w.t.Helper()
	o := w.fill(p.pub)
	require.Equal(w.t, p.adv, o.Advertiser, "the fill awards the pair's campaign")
	tok := w.sign(p.pubKey, o, w.now())
	_, _, err := w.attr.Click(w.ctx, tok, ip)
	require.NoError(w.t, err)
	return tok
}

// offer seals an offer for p's campaign as a fill would, without the
// auction: tests of the claim rules use it where several campaigns share a
// category.
func (w *world) offer(p pair, category string, price int64) token.Offer {
	w.t.Helper()
	nonce, err := token.NewNonce(nil)
	require.NoError(w.t, err)
	o, err := token.SealOffer(w.attr.MACKey, token.Offer{Nonce: nonce, Publisher: p.pub, Advertiser: p.adv, CampaignID: p.campaign,
		Category: category, Platform: "mac", PriceCents: price, OfferedAt: w.now().Unix()})
	require.NoError(w.t, err)
	return o
}

// clickOffer reports a click on o now and returns the token.
func (w *world) clickOffer(p pair, o token.Offer, ip netip.Addr) string {
	w.t.Helper()
	tok := w.sign(p.pubKey, o, w.now())
	_, _, err := w.attr.Click(w.ctx, tok, ip)
	require.NoError(w.t, err)
	return tok
}

// claim waits ctit, then claims the install of tok on device from ip.
func (w *world) claim(p pair, tok, device string, ctit time.Duration, ip netip.Addr) (attribution.Chain, error) {
	w.t.Helper()
	w.clock.Advance(ctit)
	cs := w.countersign(p.advKey, tok, device, w.now(), p.adv)
	ch, _, err := w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: ip})
	return ch, err
}

// clickAndInstall is click then claim 30 seconds later.
func (w *world) clickAndInstall(p pair, device string, ip netip.Addr) (attribution.Chain, string, error) {
	w.t.Helper()
	tok := w.click(p, ip)
	ch, err := w.claim(p, tok, device, 30*time.Second, ip)
	return ch, tok, err
}

// heartbeat signs and sends a heartbeat for the chain.
func (w *world) heartbeat(kp token.KeyPair, app, device, tok string, seq int64) (attribution.Chain, error) {
	w.t.Helper()
	hb, err := token.SignHeartbeat(kp.Private, kp.ID, token.HeartbeatClaims{AppID: app, DeviceID: device, TokenHash: token.TokenHashString(tok), Seq: seq, SentAt: w.now().Unix()})
	require.NoError(w.t, err)
	return w.attr.Heartbeat(w.ctx, hb)
}

// wallet returns the lines of an app's wallet.
func (w *world) wallet(appID string) []ledger.Line {
	w.t.Helper()
	lines, err := w.store.Lines(w.ctx, ledger.Wallet(appID), ledger.LineQuery{})
	require.NoError(w.t, err)
	return lines
}

func (w *world) chain(id string) attribution.Chain {
	w.t.Helper()
	var c attribution.Chain
	var found bool
	require.NoError(w.t, w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		c, found, err = tx.ChainByID(ctx, id)
		return err
	}))
	require.True(w.t, found, "chain %s", id)
	return c
}

func (w *world) verify() {
	w.t.Helper()
	rep, err := ledger.Verify(w.ctx, w.store)
	require.NoError(w.t, err)
	require.True(w.t, rep.OK(), "%v", rep.Violations)
}

func tokenEncode(kp token.KeyPair) string { return token.EncodePublicKey(kp.Public) }

func newKey(t testing.TB) token.KeyPair {
	t.Helper()
	kp, err := token.GenerateKey(nil)
	require.NoError(t, err)
	return kp
}

// activated writes n chains already activated (48 hours after their
// install, an hour ago) with their escrow holds, spread over pairs, 500 per
// transaction: the sweep's input without n claims and heartbeats.
func (w *world) activated(pairs []pair, n int) {
	w.t.Helper()
	w.due(pairs, n, attribution.StateActivated)
}

// lapsed writes n chains installed 73 hours ago that never activated, with
// their escrow holds, spread over pairs: the sweep refunds them
// (not_activated).
func (w *world) lapsed(pairs []pair, n int) {
	w.t.Helper()
	w.due(pairs, n, attribution.StateInstalled)
}

// due writes n chains the sweep settles now, in state (activated or
// installed), with their escrow holds, 500 per transaction.
func (w *world) due(pairs []pair, n int, state attribution.State) {
	w.t.Helper()
	now := w.now()
	installed, activated, updated := now.Add(-50*time.Hour), now.Add(-time.Hour), now.Add(-time.Hour)
	if state == attribution.StateInstalled {
		installed, activated = now.Add(-attribution.ActivationWindowEnd-time.Hour), time.Time{}
		updated = installed
	}
	for start := 0; start < n; start += 500 {
		m := min(500, n-start)
		err := w.store.Update(w.ctx, func(ctx context.Context, tx storage.Tx) error {
			ops := make([]ledger.Operation, m)
			for i := range m {
				p := pairs[(start+i)%len(pairs)]
				c := attribution.Chain{ID: ids.New("ch"), Nonce: ids.New("n"), State: state,
					CampaignID: p.campaign, PublisherAppID: p.pub, AdvertiserAppID: p.adv, Category: "productivity",
					Platform: xpromo.PlatformMac, PriceCents: 400, ClickedAt: installed, ExpiresAt: installed.Add(15 * time.Minute),
					InstalledAt: installed, ActivatedAt: activated, CreatedAt: installed, UpdatedAt: updated}
				if _, err := tx.InsertChain(ctx, c); err != nil {
					return err
				}
				var err error
				if ops[i], err = ledger.EscrowHold("hold:"+c.ID, ledger.Hold{ID: c.ID, Advertiser: p.adv, Publisher: p.pub, Amount: 400, ChainID: c.ID}); err != nil {
					return err
				}
			}
			_, errs, err := ledger.Apply(ctx, tx, installed, ops)
			if err == nil {
				for _, e := range errs {
					if e != nil {
						return e
					}
				}
			}
			return err
		})
		require.NoError(w.t, err)
	}
}

// eachWorld runs f on a fresh world with the given rules once per store
// (storagetest.Each).
func eachWorld(t *testing.T, rules attribution.Rules, f func(t *testing.T, w *world)) {
	t.Helper()
	storagetest.Each(t, func(t *testing.T, s storage.Store) { f(t, newWorld(t, s, rules)) })
}

// outbox is the app's webhook outbox as the store holds it.
func (w *world) outbox(app string) []outbox.Event {
	w.t.Helper()
	var out []outbox.Event
	require.NoError(w.t, w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		out, err = tx.AppOutbox(ctx, app)
		return err
	}))
	return out
}
