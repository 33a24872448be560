package market_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// world is a market on a real store: apps registered and moved through
// their statuses by the apps domain, wallets funded through the ledger,
// campaigns created through the market service.
type world struct {
	t    *testing.T
	ctx  context.Context
	s    storage.Store
	clk  *clocktest.Clock
	mkt  *market.Service
	apps *apps.Service
	led  *ledger.Ledger

	mu       sync.Mutex
	spend    map[string]int64 // what SpendToday answers
	spendDay time.Time        // the day it was last asked for
	n        int
}

func newWorld(t *testing.T, s storage.Store) *world {
	w := &world{t: t, ctx: context.Background(), s: s, clk: clocktest.New(start), spend: map[string]int64{}}
	w.apps = &apps.Service{Update: storage.Updater[apps.Tx](s), View: storage.Viewer[apps.Tx](s), Now: w.clk.Now}
	w.mkt = service(s, w.clk.Now, cat("alpha", 300, 200), cat("beta", 500, 400))
	w.mkt.Apps = w.apps
	w.mkt.SpendToday = func(ctx context.Context, day time.Time) (map[string]int64, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.spendDay = day
		out := map[string]int64{}
		for k, v := range w.spend {
			out[k] = v
		}
		return out, nil
	}
	w.led = &ledger.Ledger{Store: s, Now: w.clk.Now}
	require.NoError(t, w.mkt.Reconcile(w.ctx))
	return w
}

func (w *world) setSpend(campaignID string, cents int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spend[campaignID] = cents
}

func (w *world) transition(appID string, to xpromo.AppStatus) {
	w.t.Helper()
	require.NoError(w.t, w.s.Update(w.ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := w.apps.Transition(ctx, tx, appID, to, "test", apps.ActorAdmin)
		return err
	}))
}

// app registers an app and brings it to status; balance funds its wallet.
func (w *world) app(platform xpromo.Platform, category string, status xpromo.AppStatus, balance int64) string {
	w.t.Helper()
	w.n++
	a, _, _, err := w.apps.Register(w.ctx, apps.RegisterParams{
		Name: fmt.Sprint("App ", w.n), Platform: string(platform), BundleID: fmt.Sprintf("com.example.app%d", w.n),
		Domain: fmt.Sprintf("app%d.example.com", w.n), DownloadURL: fmt.Sprintf("https://app%d.example.com/app.zip", w.n),
		ContactEmail: "dev@example.com", Category: category,
	})
	require.NoError(w.t, err)
	path := map[xpromo.AppStatus][]xpromo.AppStatus{
		xpromo.AppStatusPending:   nil,
		xpromo.AppStatusApproved:  {"approved"},
		xpromo.AppStatusThrottled: {"approved", "throttled"},
		xpromo.AppStatusLive:      {"approved", "throttled", "live"},
		xpromo.AppStatusSuspended: {"approved", "throttled", "live", "suspended"},
		xpromo.AppStatusRejected:  {"rejected"},
	}[status]
	for _, to := range path {
		w.transition(a.ID, to)
	}
	if balance > 0 {
		w.topUp(a.ID, balance)
	}
	return a.ID
}

func (w *world) topUp(appID string, cents int64) {
	w.t.Helper()
	w.n++
	op, err := ledger.TopUp(fmt.Sprint("topup-", w.n), appID, cents, "test")
	require.NoError(w.t, err)
	_, err = w.led.Post(w.ctx, op)
	require.NoError(w.t, err)
}

func (w *world) campaign(appID string, budget int64, maxBid int64, categories ...string) string {
	w.t.Helper()
	req := market.CreateCampaignRequest{AppID: appID, Categories: categories, DailyBudgetCents: budget}
	if maxBid > 0 {
		req.MaxBidCents = &maxBid
	}
	c, err := w.mkt.CreateCampaign(w.ctx, appID, req)
	require.NoError(w.t, err)
	return c.ID
}

func (w *world) fill(pub, category string, platform xpromo.Platform) (market.Award, bool) {
	w.t.Helper()
	a, ok, err := w.mkt.Fill(w.ctx, market.FillRequest{PublisherAppID: pub, Category: category, Platform: platform})
	require.NoError(w.t, err)
	return a, ok
}

// stored reads a campaign from the store.
func (w *world) stored(campaignID string) market.Campaign {
	w.t.Helper()
	var c market.Campaign
	require.NoError(w.t, w.s.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		c, _, err = tx.CampaignByID(ctx, campaignID)
		return err
	}))
	return c
}

func (w *world) status(campaignID string) xpromo.CampaignStatus {
	w.t.Helper()
	return w.stored(campaignID).Status
}

func (w *world) appStatus(appID string) xpromo.AppStatus {
	w.t.Helper()
	var a apps.App
	require.NoError(w.t, w.s.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		a, _, err = tx.GetApp(ctx, appID, false)
		return err
	}))
	return a.Status
}

// Who may win a stream, and at what price, on a real store: only campaigns
// of approved, throttled or live apps of the stream's platform, buying its
// category, not paused, not the publisher's own, whose wallet covers the
// price. Exactly 3 fills in 10 are reserved (at floor, any eligible
// campaign); the others go to the highest bid at one cent above the next.
func TestDeliveryEligibility(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		const rich = 1_000_000
		pub := w.app("mac", "alpha", "live", rich)
		own := w.campaign(pub, 100_000, 0, "alpha")
		eligible := map[string]string{
			w.campaign(w.app("mac", "", "live", rich), 100_000, 450, "alpha"):       "live bidder",
			w.campaign(w.app("mac", "", "throttled", rich), 100_000, 0, "alpha"):    "throttled app",
			w.campaign(w.app("mac", "", "approved", rich), 100_000, 0, "alpha"):     "approved app",
			w.campaign(w.app("mac", "", "live", rich), 100_000, 0, "alpha", "beta"): "multi-category floor buyer",
			w.campaign(w.app("mac", "", "live", 250), 100_000, 0, "alpha"):          "", // wallet under the floor
			w.campaign(w.app("mac", "", "live", rich), 100_000, 0, "beta"):          "", // other category
			w.campaign(w.app("win", "", "live", rich), 100_000, 0, "alpha"):         "", // other platform
			w.campaign(w.app("mac", "", "pending", rich), 100_000, 0, "alpha"):      "",
			w.campaign(w.app("mac", "", "approved", rich), 100_000, 0, "alpha"):     "approved app 2",
			w.campaign(w.app("mac", "", "live", rich), 100_000, 0, "alpha"):         "live floor buyer",
		}
		maps.DeleteFunc(eligible, func(_, name string) bool { return name == "" })
		// Suspended, rejected and paused campaigns.
		susp := w.app("mac", "", "live", rich)
		suspC := w.campaign(susp, 100_000, 900, "alpha")
		w.transition(susp, "suspended")
		w.campaign(w.app("mac", "", "rejected", rich), 100_000, 900, "alpha")
		paused := w.campaign(w.app("mac", "", "live", rich), 100_000, 900, "alpha")
		_, err := w.mkt.PauseCampaign(w.ctx, w.stored(paused).AppID, paused)
		require.NoError(t, err)

		wins := map[string]int{}
		var reserved int
		const fills = 400
		for i := range fills {
			a, ok := w.fill(pub, "alpha", "mac")
			require.True(t, ok)
			require.Contains(t, eligible, a.CampaignID, "fill %d went to an ineligible campaign", i)
			assert.NotEqual(t, own, a.CampaignID)
			assert.Equal(t, int64(300), a.FloorCents)
			if a.Reserved {
				reserved++
				assert.Equal(t, int64(300), a.PriceCents)
			} else {
				// The multi-category floor buyer bids its campaign floor
				// (beta's 500) and beats the 450 bidder by one cent.
				assert.Equal(t, "multi-category floor buyer", eligible[a.CampaignID])
				assert.Equal(t, int64(451), a.PriceCents)
			}
			wins[eligible[a.CampaignID]]++
		}
		assert.Equal(t, fills*3/10, reserved, "exactly 3 in 10 reserved")
		for _, name := range eligible {
			assert.Positive(t, wins[name], "%s never won a reserved fill in %d", name, reserved)
		}

		// A publisher without a category, an unknown category, an invalid
		// platform: no fill.
		_, ok := w.fill(w.app("mac", "", "live", 0), "", "mac")
		assert.False(t, ok)
		_, ok = w.fill(pub, "nope", "mac")
		assert.False(t, ok)
		_, ok = w.fill(pub, "alpha", "linux")
		assert.False(t, ok)
		// The Windows stream has one campaign: uncontested, at its floor.
		a, ok := w.fill(pub, "alpha", "win")
		require.True(t, ok)
		assert.Equal(t, int64(200), a.PriceCents)
		assert.Equal(t, xpromo.Platform("win"), a.Platform)

		// Delivery recorded the statuses: active when the app is live and
		// the wallet covers the floor, throttled otherwise.
		for id, name := range eligible {
			want := xpromo.CampaignStatusThrottled
			if name == "live bidder" || name == "multi-category floor buyer" || name == "live floor buyer" {
				want = xpromo.CampaignStatusActive
			}
			assert.Equal(t, want, w.status(id), name)
		}
		assert.Equal(t, xpromo.CampaignStatusActive, w.status(own))
		assert.Equal(t, xpromo.CampaignStatusThrottled, w.status(suspC), "a suspended app's campaign")
		assert.Equal(t, xpromo.CampaignStatusPaused, w.status(paused))
	})
}

// Budgets, spend reported by Spent and SpendToday, the UTC day, wallets and
// the throttled cap.
func TestDeliveryBudgetAndSpend(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		pub := w.app("mac", "alpha", "approved", 0)
		adv := w.app("mac", "", "live", 100_000)
		c := w.campaign(adv, 1000, 600, "alpha")
		w.setSpend(c, 500)
		a, ok := w.fill(pub, "alpha", "mac")
		require.True(t, ok, "500 spent of 1000: room for 300")
		assert.Equal(t, c, a.CampaignID)
		assert.Equal(t, market.UTCDay(w.clk.Now()), w.spendDay)
		require.NoError(t, market.CheckBudget(1000, 500, a.PriceCents))

		// A claim at 300 commits: 800 spent, no room for the floor.
		w.mkt.Spent(c, adv, 300, w.clk.Now())
		_, ok = w.fill(pub, "alpha", "mac")
		assert.False(t, ok)
		assert.Error(t, market.CheckBudget(1000, 800, 300))
		// Its refund gives the room back; a refund of yesterday's hold
		// gives back wallet, not today's budget.
		w.mkt.Spent(c, adv, -300, w.clk.Now())
		_, ok = w.fill(pub, "alpha", "mac")
		assert.True(t, ok)
		w.mkt.Spent(c, adv, 300, w.clk.Now())
		w.mkt.Spent(c, adv, -300, w.clk.Now().AddDate(0, 0, -1))
		_, ok = w.fill(pub, "alpha", "mac")
		assert.False(t, ok)

		// A new UTC day: spend is read again for it.
		w.setSpend(c, 0)
		now := w.clk.Now()
		w.clk.Advance(time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 1, 0, time.UTC).Sub(now))
		_, ok = w.fill(pub, "alpha", "mac")
		assert.True(t, ok)
		assert.Equal(t, market.UTCDay(w.clk.Now()), w.spendDay)

		// A wallet under the floor gets nothing; a top-up reaches delivery
		// when invalidated, or within DeliveryRefreshEvery.
		poor := w.app("win", "", "live", 150)
		pc := w.campaign(poor, 5000, 0, "alpha")
		_, ok = w.fill(pub, "alpha", "win")
		assert.False(t, ok)
		w.topUp(poor, 100)
		_, ok = w.fill(pub, "alpha", "win")
		assert.False(t, ok, "not seen yet")
		w.mkt.Invalidate()
		a, ok = w.fill(pub, "alpha", "win")
		require.True(t, ok)
		assert.Equal(t, pc, a.CampaignID)
		w.mkt.Spent(pc, poor, 200, w.clk.Now()) // the wallet now holds 50
		_, ok = w.fill(pub, "alpha", "win")
		assert.False(t, ok)
		w.topUp(poor, 1000)
		w.clk.Advance(market.DefaultDeliveryRefreshEvery)
		_, ok = w.fill(pub, "alpha", "win")
		assert.True(t, ok, "refreshed")

		// The throttled cap: an app that is not live spends at most
		// ThrottledDailyCapCents a day over all its campaigns.
		w.mkt.ThrottledDailyCapCents = 1000
		capped := w.app("mac", "", "approved", 100_000)
		c1 := w.campaign(capped, 50_000, 0, "beta")
		c2 := w.campaign(capped, 50_000, 0, "beta")
		w.setSpend(c1, 400)
		w.setSpend(c2, 100)
		w.mkt.Invalidate()
		a, ok = w.fill(pub, "beta", "mac")
		require.True(t, ok, "500 of the cap left: room for the 500 floor")
		w.mkt.Spent(a.CampaignID, capped, 500, w.clk.Now())
		_, ok = w.fill(pub, "beta", "mac")
		assert.False(t, ok, "the cap is reached")
		w.transition(capped, "throttled")
		w.transition(capped, "live")
		w.mkt.Invalidate()
		_, ok = w.fill(pub, "beta", "mac")
		assert.True(t, ok, "live apps are not capped")
	})
}

// Changes made through the service reach delivery at once.
func TestDeliveryFollowsChanges(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		pub := w.app("mac", "alpha", "approved", 0)
		_, ok := w.fill(pub, "alpha", "mac")
		assert.False(t, ok, "no campaign yet")

		adv := w.app("mac", "", "live", 100_000)
		c := w.campaign(adv, 5000, 0, "alpha")
		a, ok := w.fill(pub, "alpha", "mac")
		require.True(t, ok, "a new campaign is delivered at once")
		assert.Equal(t, c, a.CampaignID)
		assert.Equal(t, xpromo.CampaignStatusActive, w.status(c), "live and funded")

		_, err := w.mkt.PauseCampaign(w.ctx, adv, c)
		require.NoError(t, err)
		_, ok = w.fill(pub, "alpha", "mac")
		assert.False(t, ok, "paused")
		got, err := w.mkt.ResumeCampaign(w.ctx, adv, c)
		require.NoError(t, err)
		assert.Equal(t, xpromo.CampaignStatusActive, got.Status)
		_, ok = w.fill(pub, "alpha", "mac")
		assert.True(t, ok, "resumed")

		_, err = w.mkt.CutFloor(w.ctx, "alpha", "mac", 250, "test cut")
		require.NoError(t, err)
		a, ok = w.fill(pub, "alpha", "mac")
		require.True(t, ok)
		assert.Equal(t, int64(250), a.FloorCents)
		assert.Equal(t, int64(250), a.PriceCents)

		// The wallet drained below the floor: throttled at the next rebuild.
		_, err = w.led.Post(w.ctx, must(ledger.Adjustment("drain", adv, -99_900, "test")))
		require.NoError(t, err)
		w.mkt.Invalidate()
		_, ok = w.fill(pub, "alpha", "mac")
		assert.False(t, ok)
		assert.Equal(t, xpromo.CampaignStatusThrottled, w.status(c))
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The app status rules: approved → throttled on the first trade (either
// side), throttled → live once the installs it bought clear with good
// retention, its campaigns then active.
func TestTradingRules(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		adv := w.app("mac", "", "approved", 100_000)
		pub := w.app("mac", "alpha", "approved", 0)
		c := w.campaign(adv, 50_000, 0, "alpha")
		trade := func() bool {
			var changed bool
			require.NoError(t, s.Update(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				changed, err = w.mkt.RecordTrade(ctx, tx, adv, pub)
				return err
			}))
			return changed
		}
		clearing := func() bool {
			var changed bool
			require.NoError(t, s.Update(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				changed, err = w.mkt.RecordClearing(ctx, tx, adv)
				return err
			}))
			return changed
		}
		assert.True(t, trade())
		assert.Equal(t, xpromo.AppStatusThrottled, w.appStatus(adv))
		assert.Equal(t, xpromo.AppStatusThrottled, w.appStatus(pub))
		assert.False(t, trade(), "only the first trade moves them")
		view, err := w.apps.AppView(w.ctx, adv)
		require.NoError(t, err)
		last := view.History[len(view.History)-1]
		assert.Equal(t, apps.StatusChange{AppID: adv, From: "approved", To: "throttled", Reason: market.ReasonFirstTrade, Actor: apps.ActorMarket, At: last.At}, last)

		// Installs: 9 cleared, 6 refunded. Not enough cleared yet.
		holds := 0
		install := func(resolution string) {
			holds++
			h := ledger.Hold{ID: fmt.Sprint("hold", holds), Advertiser: adv, Publisher: pub, Amount: 300, ChainID: fmt.Sprint("chain", holds)}
			_, err := w.led.Post(w.ctx, must(ledger.EscrowHold(fmt.Sprint("hold-", holds), h)))
			require.NoError(t, err)
			if resolution == "charge" {
				_, err = w.led.Post(w.ctx, must(ledger.Clear(fmt.Sprint("clear-", holds), h, ledger.EarnCash)))
			} else {
				_, err = w.led.Post(w.ctx, must(ledger.EscrowRelease(fmt.Sprint("release-", holds), h)))
			}
			require.NoError(t, err)
		}
		for range 9 {
			install("charge")
		}
		for range 6 {
			install("release")
		}
		assert.False(t, clearing(), "9 cleared: not yet")
		assert.Equal(t, xpromo.AppStatusThrottled, w.appStatus(adv))
		// The 10th clears, but retention is 10/16 and 10 more releases make
		// it 10/26 < 0.4.
		for range 10 {
			install("release")
		}
		install("charge")
		assert.False(t, clearing(), "retention 10/26")
		for range 6 {
			install("charge")
		}
		assert.Equal(t, xpromo.CampaignStatusThrottled, w.status(c))
		assert.True(t, clearing(), "retention 16/32")
		assert.Equal(t, xpromo.AppStatusLive, w.appStatus(adv))
		// Going live is announced with score.updated, in the clearing's
		// transaction (as the first trade's throttled was).
		var statuses []xpromo.AppStatus
		require.NoError(t, s.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
			evs, err := tx.AppOutbox(ctx, adv)
			for _, e := range evs {
				var d xpromo.ScoreEventData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				statuses = append(statuses, d.Score.Status)
			}
			return err
		}))
		require.NotEmpty(t, statuses)
		assert.Equal(t, xpromo.AppStatusLive, statuses[len(statuses)-1])
		assert.Contains(t, statuses, xpromo.AppStatusThrottled)
		assert.Equal(t, xpromo.CampaignStatusActive, w.status(c), "its campaigns follow at once")
		assert.False(t, clearing(), "live stays live")

		// A suspended app does not move.
		w.transition(pub, "suspended")
		assert.False(t, trade())
		assert.Equal(t, xpromo.AppStatusSuspended, w.appStatus(pub))

		// Installs older than the window no longer count.
		other := w.app("mac", "", "throttled", 100_000)
		adv = other
		for range 12 {
			install("charge")
		}
		w.clk.Advance(31 * 24 * time.Hour)
		assert.False(t, clearing(), "the clearings are older than 30 days")
		install("charge")
		assert.False(t, clearing(), "1 cleared in the window")
	})
}

// Fills, claims, refunds and rebuilds all at once on a real store (run with
// -race). The claims' spend is the truth SpendToday reads, as attribution's
// tables are. Whatever the interleaving: no budget is exceeded, delivery
// never counts less spend than the truth (a rebuild may count a hold twice,
// never miss one), and a rebuild at rest makes it exact.
func TestDeliveryConcurrentRebuilds(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		pub := w.app("mac", "alpha", "approved", 0)
		type cmp struct{ id, app string }
		var cmps []cmp
		budgets := map[string]int64{}
		for i := range 6 {
			app := w.app("mac", "", "live", 1_000_000)
			id := w.campaign(app, 1000+int64(i)*700, 300+int64(i)*50, "alpha")
			cmps = append(cmps, cmp{id, app})
			budgets[id] = 1000 + int64(i)*700
		}
		appOf := map[string]string{}
		for _, c := range cmps {
			appOf[c.id] = c.app
		}
		ctx := w.ctx
		require.NoError(t, w.mkt.Rebuild(ctx))

		type hold struct {
			campaign string
			price    int64
		}
		var done sync.WaitGroup
		stop := make(chan struct{})
		var rebuilds atomic.Int64
		var rebuilder sync.WaitGroup
		rebuilder.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.mkt.Invalidate()
				if err := w.mkt.Rebuild(ctx); err != nil {
					t.Error(err)
					return
				}
				rebuilds.Add(1)
			}
		})
		for g := range 6 {
			done.Go(func() {
				var mine []hold
				// Until the rebuilder has rebuilt 20 times, so that
				// rebuilds overlap fills, claims and refunds.
				for i := 0; i < 60 || rebuilds.Load() < 20; i++ {
					a, ok, err := w.mkt.Fill(ctx, market.FillRequest{PublisherAppID: pub, Category: "alpha", Platform: "mac"})
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						w.mu.Lock() // the claim transaction
						err := market.CheckBudget(budgets[a.CampaignID], w.spend[a.CampaignID], a.PriceCents)
						if err == nil {
							w.spend[a.CampaignID] += a.PriceCents
						}
						w.mu.Unlock()
						if err == nil {
							w.mkt.Spent(a.CampaignID, a.AdvertiserAppID, a.PriceCents, w.clk.Now())
							mine = append(mine, hold{a.CampaignID, a.PriceCents})
						}
					}
					if (g+i)%4 == 0 && len(mine) > 0 { // a refund
						h := mine[len(mine)-1]
						mine = mine[:len(mine)-1]
						w.mu.Lock()
						w.spend[h.campaign] -= h.price
						w.mu.Unlock()
						w.mkt.Spent(h.campaign, appOf[h.campaign], -h.price, w.clk.Now())
					}
				}
			})
		}
		done.Wait()
		close(stop)
		rebuilder.Wait()
		t.Logf("%d rebuilds during the run", rebuilds.Load())

		appTruth := map[string]int64{}
		for _, c := range cmps {
			truth := w.spend[c.id]
			appTruth[c.app] += truth
			assert.LessOrEqual(t, truth, budgets[c.id], "%s beyond its budget", c.id)
			mem, ok := market.MemorySpent(w.mkt, c.id)
			require.True(t, ok)
			assert.GreaterOrEqual(t, mem, truth, "%s: delivery counts less spend than committed", c.id)
		}
		require.NoError(t, w.mkt.Rebuild(ctx))
		for _, c := range cmps {
			mem, _ := market.MemorySpent(w.mkt, c.id)
			assert.Equal(t, w.spend[c.id], mem, "%s after a rebuild at rest", c.id)
			memApp, _ := market.MemoryAppSpent(w.mkt, c.app)
			assert.Equal(t, appTruth[c.app], memApp)
		}
	})
}
