package market

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/market/auction"
)

// These tests drive delivery in memory: the index is built by the same code
// a rebuild runs (buildDelivery) from rows made here instead of read from a
// store, and the store's side of a claim (the authoritative budget and
// wallet checks, under the transaction's lock) is played by a mutex-guarded
// ledger. delivery_test.go runs delivery against both real stores.

var memNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func memFloors(fs ...Floor) map[string]map[xpromo.Platform]Floor {
	out := map[string]map[xpromo.Platform]Floor{}
	for _, f := range fs {
		if out[f.Category] == nil {
			out[f.Category] = map[xpromo.Platform]Floor{}
		}
		out[f.Category][f.Platform] = f
	}
	return out
}

// memService is a Service whose delivery was built from rows; its clock
// stands still, so it never rebuilds (it has no store to rebuild from).
func memService(seed uint64, floors map[string]map[xpromo.Platform]Floor, rows []DeliveryCampaign, spend map[string]int64) *Service {
	var n uint64
	s := &Service{
		Now:                  func() time.Time { return memNow },
		DeliveryRefreshEvery: time.Hour,
		NewRand: func() auction.Rand {
			n++
			return rand.New(rand.NewPCG(seed, n))
		},
	}
	s.rebuildMu.Lock()
	d, _ := s.buildDelivery(UTCDay(memNow), memNow, floors, rows, spend)
	s.rebuildMu.Unlock()
	s.current.Store(d)
	return s
}

// simLedger is the store's side: committed spend per campaign and app, and
// wallets, changed only under mu as the claim transaction would.
type simLedger struct {
	mu       sync.Mutex
	spent    map[string]int64 // campaign
	appSpent map[string]int64
	wallet   map[string]int64
	holds    []simHold
	refused  int

	initialAppSpent map[string]int64 // before the run
}

type simHold struct {
	campaign, app string
	price         int64
}

// claim is the install claim: CheckBudget and the wallet's cover, then the
// hold. It returns whether the claim was accepted.
func (l *simLedger) claim(c DeliveryCampaign, a Award) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := CheckBudget(c.DailyBudgetCents, l.spent[c.ID], a.PriceCents); err != nil {
		if !apperr.Is(err, apperr.BudgetExhausted) {
			panic(err)
		}
		l.refused++
		return false
	}
	if l.wallet[c.AppID] < a.PriceCents {
		l.refused++
		return false
	}
	l.spent[c.ID] += a.PriceCents
	l.appSpent[c.AppID] += a.PriceCents
	l.wallet[c.AppID] -= a.PriceCents
	l.holds = append(l.holds, simHold{c.ID, c.AppID, a.PriceCents})
	return true
}

// refund releases a random open hold.
func (l *simLedger) refund(r *rand.Rand) (simHold, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.holds) == 0 {
		return simHold{}, false
	}
	i := r.IntN(len(l.holds))
	h := l.holds[i]
	l.holds[i] = l.holds[len(l.holds)-1]
	l.holds = l.holds[:len(l.holds)-1]
	l.spent[h.campaign] -= h.price
	l.appSpent[h.app] -= h.price
	l.wallet[h.app] += h.price
	return h, true
}

// randomMarket builds a market of two categories on both platforms with
// tight budgets and wallets: campaigns of live, throttled, approved,
// pending and suspended apps, floor buyers and bidders, paused ones.
func randomMarket(r *rand.Rand, nApps, nCampaigns int) (map[string]map[xpromo.Platform]Floor, []DeliveryCampaign, map[string]int64) {
	floors := memFloors(
		Floor{Category: "prod", Platform: "mac", FloorCents: 300},
		Floor{Category: "prod", Platform: "win", FloorCents: 200},
		Floor{Category: "fin", Platform: "mac", FloorCents: 500},
		Floor{Category: "fin", Platform: "win", FloorCents: 400},
	)
	statuses := []xpromo.AppStatus{"live", "live", "live", "throttled", "approved", "pending", "suspended"}
	type app struct {
		platform xpromo.Platform
		status   xpromo.AppStatus
		balance  int64
	}
	appsByID := map[string]app{}
	for i := range nApps {
		appsByID[fmt.Sprint("app", i)] = app{
			platform: []xpromo.Platform{"mac", "win"}[r.IntN(2)],
			status:   statuses[r.IntN(len(statuses))],
			balance:  r.Int64N(15_000),
		}
	}
	spend := map[string]int64{}
	var rows []DeliveryCampaign
	for i := range nCampaigns {
		appID := fmt.Sprint("app", r.IntN(nApps))
		a := appsByID[appID]
		cats := [][]string{{"prod"}, {"fin"}, {"prod", "fin"}}[r.IntN(3)]
		var floor int64
		for _, k := range cats {
			floor = max(floor, floors[k][a.platform].FloorCents)
		}
		c := DeliveryCampaign{
			Campaign: Campaign{
				ID: fmt.Sprintf("cmp%03d", i), AppID: appID, Categories: cats,
				DailyBudgetCents: 1000 + r.Int64N(4000), Paused: r.IntN(10) == 0, Status: xpromo.CampaignStatusThrottled,
			},
			Platform: a.platform, AppStatus: a.status, Balance: a.balance,
		}
		if r.IntN(3) > 0 {
			bid := floor + r.Int64N(500)
			c.MaxBidCents = &bid
		}
		if r.IntN(4) == 0 {
			spend[c.ID] = r.Int64N(c.DailyBudgetCents)
		}
		rows = append(rows, c)
	}
	return floors, rows, spend
}

// checkAward asserts what every award must satisfy, whatever the timing:
// the campaign may be delivered on that stream to that publisher, at a
// price between the stream's floor and its bid.
func checkAward(t *testing.T, floors map[string]map[xpromo.Platform]Floor, byID map[string]DeliveryCampaign, req FillRequest, a Award) {
	t.Helper()
	c, ok := byID[a.CampaignID]
	require.True(t, ok, "awarded an unknown campaign %s", a.CampaignID)
	assert.False(t, c.Paused, "%s is paused", c.ID)
	assert.True(t, Advertises(c.AppStatus), "%s: app is %s", c.ID, c.AppStatus)
	assert.NotEqual(t, req.PublisherAppID, c.AppID, "self-promotion")
	assert.Equal(t, c.AppID, a.AdvertiserAppID)
	assert.Equal(t, req.Platform, c.Platform, "platform")
	assert.Contains(t, c.Categories, req.Category)
	assert.Equal(t, req.Category, a.Category)
	floor := floors[req.Category][req.Platform].FloorCents
	assert.Equal(t, floor, a.FloorCents)
	assert.GreaterOrEqual(t, a.PriceCents, floor)
	bid := int64(0)
	for _, k := range c.Categories {
		bid = max(bid, floors[k][c.Platform].FloorCents)
	}
	if c.MaxBidCents != nil {
		bid = *c.MaxBidCents
	}
	assert.LessOrEqual(t, a.PriceCents, bid, "price above the campaign's bid")
	if a.Reserved {
		assert.Equal(t, floor, a.PriceCents)
	}
}

// runMarket plays workers goroutines of fills, each followed by a claim
// (most of the time) and now and then a refund, reporting committed money
// to delivery with Spent as the real claim and refund do after their
// commit. It returns the simulated ledger.
func runMarket(t *testing.T, seed uint64, workers, opsPerWorker int) (*simLedger, *Service, map[string]DeliveryCampaign) {
	r := rand.New(rand.NewPCG(seed, 1))
	floors, rows, spend := randomMarket(r, 14, 60)
	s := memService(seed, floors, rows, spend)
	byID := map[string]DeliveryCampaign{}
	l := &simLedger{spent: map[string]int64{}, appSpent: map[string]int64{}, wallet: map[string]int64{}}
	for _, c := range rows {
		byID[c.ID] = c
		l.wallet[c.AppID] = c.Balance
		if !c.Paused && Advertises(c.AppStatus) {
			l.spent[c.ID] = spend[c.ID]
			l.appSpent[c.AppID] += spend[c.ID]
		}
	}
	l.initialAppSpent = maps.Clone(l.appSpent)
	var wg sync.WaitGroup
	for w := range workers {
		wr := rand.New(rand.NewPCG(seed, uint64(100+w)))
		wg.Go(func() {
			for range opsPerWorker {
				req := FillRequest{
					PublisherAppID: fmt.Sprint("app", wr.IntN(20)), // some publish, some also advertise
					Category:       []string{"prod", "fin"}[wr.IntN(2)],
					Platform:       []xpromo.Platform{"mac", "win"}[wr.IntN(2)],
				}
				a, ok, err := s.Fill(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					checkAward(t, floors, byID, req, a)
					if wr.IntN(10) < 8 && l.claim(byID[a.CampaignID], a) {
						s.Spent(a.CampaignID, a.AdvertiserAppID, a.PriceCents, memNow)
					}
				}
				if wr.IntN(10) == 0 {
					if h, ok := l.refund(wr); ok {
						s.Spent(h.campaign, h.app, -h.price, memNow)
					}
				}
			}
		})
	}
	wg.Wait()
	return l, s, byID
}

// checkLedger asserts the money invariants and that delivery's counters
// agree with the ledger once everyone has reported.
func checkLedger(t *testing.T, l *simLedger, s *Service, byID map[string]DeliveryCampaign) {
	t.Helper()
	d := s.current.Load()
	for id, c := range byID {
		assert.LessOrEqual(t, l.spent[id], c.DailyBudgetCents, "%s spent beyond its budget", id)
		if cs := d.campaigns[id]; cs != nil {
			assert.Equal(t, l.spent[id], cs.spent.Load(), "%s: delivery's spend", id)
		}
	}
	for app, bal := range l.wallet {
		assert.GreaterOrEqual(t, bal, int64(0), "%s overdrawn", app)
		if adv := d.advertisers[app]; adv != nil {
			assert.Equal(t, bal, adv.balance.Load(), "%s: delivery's balance", app)
			assert.Equal(t, l.appSpent[app], adv.spent.Load(), "%s: delivery's app spend", app)
		}
	}
}

// One filler that claims at once: delivery's view is exact, so no award is
// ever refused by the claim's checks, and the throttled cap holds exactly.
func TestFillSequentialIsExact(t *testing.T) {
	for seed := range uint64(40) {
		l, s, byID := runMarket(t, seed, 1, 400)
		checkLedger(t, l, s, byID)
		assert.Zero(t, l.refused, "seed %d: a sequential claim was refused: delivery offered what it should not", seed)
		for app, adv := range s.current.Load().advertisers {
			if adv.capped {
				// Spend from before delivery started may be over the cap
				// already; then the app gets nothing more.
				assert.LessOrEqual(t, l.appSpent[app], max(DefaultThrottledDailyCapCents, l.initialAppSpent[app]), "seed %d: %s beyond the throttled cap", seed, app)
			}
		}
	}
}

// Many fillers, claimers and refunders at once (run with -race): budgets
// and wallets are never exceeded, every award is eligible, and once all
// have reported, delivery's counters equal the ledger's.
func TestConcurrentFillClaimRefund(t *testing.T) {
	for seed := range uint64(8) {
		l, s, byID := runMarket(t, 1000+seed, 16, 250)
		checkLedger(t, l, s, byID)
		t.Logf("seed %d: %d holds open, %d claims refused by the authoritative checks", seed, len(l.holds), l.refused)
	}
}

// A rebuild that reads the store while claims commit replays the holds
// reported meanwhile (possibly counting one twice: less delivery, never
// more) and not the refunds.
func TestRebuildReplaysHoldsOnly(t *testing.T) {
	floors := memFloors(Floor{Category: "prod", Platform: "mac", FloorCents: 300})
	rows := []DeliveryCampaign{{
		Campaign: Campaign{ID: "cmp1", AppID: "app1", Categories: []string{"prod"}, DailyBudgetCents: 2000, Status: "active"},
		Platform: "mac", AppStatus: "live", Balance: 10_000,
	}}
	s := memService(1, floors, rows, nil)
	s.spentMu.Lock()
	s.recording = true
	s.spentMu.Unlock()
	s.Spent("cmp1", "app1", 300, memNow)
	s.Spent("cmp1", "app1", -300, memNow)
	s.Spent("cmp1", "app1", 400, memNow.AddDate(0, 0, -1)) // yesterday's hold: wallet only
	s.rebuildMu.Lock()
	d, _ := s.buildDelivery(UTCDay(memNow), memNow, floors, rows, map[string]int64{"cmp1": 300})
	s.rebuildMu.Unlock()
	s.spentMu.Lock()
	for _, x := range s.pending {
		d.apply(x, true)
	}
	s.recording, s.pending = false, nil
	s.spentMu.Unlock()
	assert.Equal(t, int64(600), d.campaigns["cmp1"].spent.Load(), "the store's 300, and the hold replayed")
	assert.Equal(t, int64(10_000-300-400), d.advertisers["app1"].balance.Load())
}

// Budget arithmetic at the edges.
func TestCheckBudget(t *testing.T) {
	assert.NoError(t, CheckBudget(1000, 0, 1000))
	assert.NoError(t, CheckBudget(1000, 700, 300))
	err := CheckBudget(1000, 701, 300)
	require.Error(t, err)
	assert.True(t, apperr.Is(err, apperr.BudgetExhausted))
	assert.Equal(t, 409, apperr.HTTPStatus(err))
	assert.Contains(t, err.Error(), "299 cents left")
	assert.True(t, apperr.Is(CheckBudget(1000, 1500, 1), apperr.BudgetExhausted))
	assert.Contains(t, CheckBudget(1000, 1500, 1).Error(), " 0 cents left", "never a negative amount left")
}

// BenchmarkFill is Service.Fill end to end in memory (index lookup, headroom
// of every campaign, the engine) on one stream of n funded campaigns, on
// one goroutine, then on all of them.
func BenchmarkFill(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		floors := memFloors(Floor{Category: "prod", Platform: "mac", FloorCents: 400})
		r := rand.New(rand.NewPCG(9, 9))
		var rows []DeliveryCampaign
		for i := range n {
			c := DeliveryCampaign{
				Campaign: Campaign{ID: fmt.Sprintf("cmp%04d", i), AppID: fmt.Sprintf("app%04d", i), Categories: []string{"prod"},
					DailyBudgetCents: 1_000_000_000, Status: "active"},
				Platform: "mac", AppStatus: "live", Balance: 1_000_000_000,
			}
			if i%3 != 0 {
				bid := 400 + r.Int64N(600)
				c.MaxBidCents = &bid
			}
			rows = append(rows, c)
		}
		s := memService(1, floors, rows, nil)
		req := FillRequest{PublisherAppID: "publisher", Category: "prod", Platform: "mac"}
		ctx := context.Background()
		b.Run(fmt.Sprintf("campaigns=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := s.Fill(ctx, req); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
		b.Run(fmt.Sprintf("campaigns=%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, ok, err := s.Fill(ctx, req); !ok || err != nil {
						b.Error(ok, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
