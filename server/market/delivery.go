package market

import (
	"context"
	crand "crypto/rand"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/market/auction"
	"github.com/xpromo/xpromo/server/txunit"
)

// Delivery: the in-memory state behind the slot fill (docs/marketplace.md,
// "Delivery").
//
// The store is the truth for money. Delivery keeps, per (category, platform)
// stream, the campaigns that may be shown there with what they bid, and per
// campaign and advertiser the headroom left today: budget minus today's
// spend, the wallet balance, and for apps not yet live the throttled cap.
// It is rebuilt from the store when first used, after every change made
// through this Service (campaign created, paused, resumed; floor cut), when
// Invalidate is called, at each new UTC day, and at least every
// DeliveryRefreshEvery (top-ups, payouts, other instances' claims and app
// status changes arrive that way). Between rebuilds, Spent keeps the
// counters current with the claims and refunds committed on this instance.
//
// A fill only offers: it spends nothing. The install claim that may follow
// re-checks the budget in its own transaction with CheckBudget and the
// wallet with the escrow hold itself, so a stale counter can only make
// delivery offer too little or an offer that the claim then refuses, never
// spend beyond a budget or a wallet.

// Delivery defaults.
const (
	// DefaultDeliveryRefreshEvery bounds how long a top-up, a payout, an app
	// status change or another instance's claim takes to reach delivery.
	DefaultDeliveryRefreshEvery = 10 * time.Second
	// DefaultThrottledDailyCapCents is how much the campaigns of an app that
	// is not live yet (approved or throttled) may spend together per UTC
	// day: EUR 50, some 8 to 30 installs at the catalogue's floors.
	DefaultThrottledDailyCapCents = 5000
)

// DeliveryCampaign is a campaign as delivery reads it: with its app's
// platform and status, and the balance of the app's wallet.
type DeliveryCampaign struct {
	Campaign
	Platform  xpromo.Platform
	AppStatus xpromo.AppStatus
	Balance   int64
}

// FillRequest asks for one fill of a publisher's slot. Category and
// Platform are the publisher app's (its registered category, its platform);
// the caller has authenticated the publisher and checked that it may show
// ads.
type FillRequest struct {
	PublisherAppID, Category string
	Platform                 xpromo.Platform
}

// Award is the outcome of a fill: the campaign shown, and the price its
// advertiser pays if the install clears. FloorCents is the stream's floor
// (the publisher category's floor on the platform); Reserved says the fill
// was one of the stream's reserved fills (then PriceCents == FloorCents).
type Award struct {
	CampaignID, AdvertiserAppID, Category string
	Platform                              xpromo.Platform
	PriceCents, FloorCents                int64
	Reserved                              bool
}

// CheckBudget is the authoritative budget rule, used inside the install
// claim transaction: a campaign that has committed spentTodayCents today
// (UTC; its escrow holds opened today that were not released, charged or
// not) can take a claim at priceCents only when spentToday + price ≤
// dailyBudget. Otherwise it fails with budget_exhausted. Fill applies the
// same rule to the in-memory counters.
func CheckBudget(dailyBudgetCents, spentTodayCents, priceCents int64) error {
	if priceCents > dailyBudgetCents-spentTodayCents {
		return apperr.New(apperr.BudgetExhausted, "the campaign's daily budget of %d cents has %d cents left today (UTC), less than the price of %d cents",
			dailyBudgetCents, max(0, dailyBudgetCents-spentTodayCents), priceCents)
	}
	return nil
}

// UTCDay returns the start (00:00 UTC) of the UTC day of t: the day whose
// spend a daily budget limits.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Advertises reports whether an app in status may have its campaigns
// delivered: approved, throttled and live apps may; pending ones (not vetted
// yet), suspended and rejected ones may not.
func Advertises(status xpromo.AppStatus) bool {
	switch status {
	case xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive:
		return true
	}
	return false
}

// delivery is one immutable index of what can be delivered, built from the
// store; only its counters move between rebuilds.
type delivery struct {
	day         time.Time // the UTC day the spend counters are for
	builtAt     time.Time
	streams     map[streamKey]*stream
	campaigns   map[string]*campaignState
	advertisers map[string]*advertiserState
}

type streamKey struct {
	category string
	platform xpromo.Platform
}

type stream struct {
	floor     int64
	campaigns []*campaignState // by campaign id
	state     *streamState
}

// streamState is what outlives rebuilds: the stream's reservation schedule
// and random source, guarded by mu.
type streamState struct {
	mu    sync.Mutex
	sched auction.Stream
	rng   auction.Rand
}

// bidderPool holds the scratch slices fills build their bidders in.
var bidderPool = sync.Pool{New: func() any { return new([]auction.Bidder) }}

type campaignState struct {
	id     string
	adv    *advertiserState
	bid    int64 // max_bid_cents, or the campaign's floor for a floor buyer
	budget int64
	spent  atomic.Int64 // committed today
}

type advertiserState struct {
	appID   string
	capped  bool         // not live: the throttled cap applies
	balance atomic.Int64 // wallet
	spent   atomic.Int64 // committed today, all campaigns
}

// spendDelta is a Spent call recorded while a rebuild reads the store.
type spendDelta struct {
	campaignID, appID string
	delta             int64
	at                time.Time
}

func (s *Service) deliveryEvery() time.Duration {
	if s.DeliveryRefreshEvery > 0 {
		return s.DeliveryRefreshEvery
	}
	return DefaultDeliveryRefreshEvery
}

func (s *Service) throttledCap() int64 {
	if s.ThrottledDailyCapCents > 0 {
		return s.ThrottledDailyCapCents
	}
	return DefaultThrottledDailyCapCents
}

// Fill runs the auction for one fill of the publisher's slot; ok=false when
// no campaign is eligible. A campaign is eligible when it is not paused, its
// app may advertise (Advertises) on the request's platform and is not the
// publisher, it buys the request's category, and the price leaves it within
// today's budget, within its app's throttled cap when the app is not live,
// and within its wallet. A request without a category (a publisher that
// registered none) or for a category without a floor gets no fill.
//
// Fill is safe for concurrent use; fills of one stream are decided one at a
// time, fills of different streams in parallel. It must not be called
// inside a store transaction: it may rebuild delivery, which reads the store
// (and records campaign statuses).
func (s *Service) Fill(ctx context.Context, r FillRequest) (a Award, ok bool, err error) {
	if r.Category == "" || !r.Platform.Valid() {
		return Award{}, false, nil
	}
	d, err := s.deliveryIndex(ctx)
	if err != nil {
		return Award{}, false, err
	}
	st := d.streams[streamKey{r.Category, r.Platform}]
	if st == nil || len(st.campaigns) == 0 {
		return Award{}, false, nil
	}
	capCents := s.throttledCap()
	scratch := bidderPool.Get().(*[]auction.Bidder)
	defer bidderPool.Put(scratch)
	bs := (*scratch)[:0]
	// Headroom is read outside the stream's lock: fills of one stream
	// compute it in parallel and only take turns for the decision.
	for i, c := range st.campaigns {
		if c.adv.appID == r.PublisherAppID {
			continue // promoting oneself is never eligible
		}
		h := min(c.budget-c.spent.Load(), c.adv.balance.Load())
		if c.adv.capped {
			h = min(h, capCents-c.adv.spent.Load())
		}
		if h < st.floor {
			continue
		}
		bs = append(bs, auction.Bidder{ID: c.id, Ref: i, Bid: c.bid, Headroom: h})
	}
	*scratch = bs
	ss := st.state
	ss.mu.Lock()
	res, ok := ss.sched.Decide(st.floor, bs, ss.rng)
	ss.mu.Unlock()
	if !ok {
		return Award{}, false, nil
	}
	c := st.campaigns[res.Winner.Ref]
	return Award{
		CampaignID:      c.id,
		AdvertiserAppID: c.adv.appID,
		Category:        r.Category,
		Platform:        r.Platform,
		PriceCents:      res.Price,
		FloorCents:      st.floor,
		Reserved:        res.Reserved,
	}, true, nil
}

// Spent tells delivery about committed money after the claim/refund
// transaction commits: +price when a hold is opened for the campaign, -price
// when a hold is released (refund); charges change nothing. at is when the
// hold was opened: its UTC day is the day whose budget the amount counts
// against (a refund of an earlier day's hold gives back wallet balance, not
// today's budget). The wallet balance moves by -delta whatever the day.
func (s *Service) Spent(campaignID, advertiserAppID string, deltaCents int64, at time.Time) {
	d := spendDelta{campaignID: campaignID, appID: advertiserAppID, delta: deltaCents, at: at}
	s.spentMu.Lock()
	defer s.spentMu.Unlock()
	if cur := s.current.Load(); cur != nil {
		cur.apply(d, false)
	}
	if s.recording {
		s.pending = append(s.pending, d)
	}
}

// apply moves the counters by d. With conservativeOnly, only a delta that
// lowers headroom (a hold) is applied: the rebuild that replays it cannot
// tell whether its store read already saw it, and counting a hold twice
// errs on the safe side until the next rebuild, while counting a refund
// twice would not.
func (d *delivery) apply(x spendDelta, conservativeOnly bool) {
	if conservativeOnly && x.delta < 0 {
		return
	}
	adv := d.advertisers[x.appID]
	if adv != nil {
		adv.balance.Add(-x.delta)
	}
	if !UTCDay(x.at).Equal(d.day) {
		return
	}
	if c := d.campaigns[x.campaignID]; c != nil {
		c.spent.Add(x.delta)
	}
	if adv != nil {
		adv.spent.Add(x.delta)
	}
}

// Invalidate makes the next Fill rebuild delivery from the store: call it
// after committing a change delivery must see at once (an app's status, a
// top-up) rather than within DeliveryRefreshEvery.
func (s *Service) Invalidate() { s.dirty.Store(true) }

// Rebuild rebuilds delivery from the store now, and records the campaign
// statuses that changed (throttled ↔ active, Status). Fill does it on first
// use; calling it at start moves that cost out of the first fill.
func (s *Service) Rebuild(ctx context.Context) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	return s.rebuild(ctx)
}

// afterChange rebuilds delivery once a change made through this Service has
// committed (with the request's unit of work, if it runs in one: see
// txunit), if delivery is in use. A failed rebuild leaves it to the next
// Fill.
func (s *Service) afterChange(ctx context.Context) {
	txunit.AfterCommit(ctx, func() {
		if s.current.Load() == nil {
			return
		}
		s.dirty.Store(true)
		_ = s.Rebuild(ctx)
	})
}

// deliveryIndex returns the current index, rebuilding it first when it is
// missing, invalidated, older than DeliveryRefreshEvery or of an earlier UTC
// day. While one caller rebuilds, the others keep using the previous index
// (with yesterday's spend still counted at midnight: it errs on the side of
// less delivery).
func (s *Service) deliveryIndex(ctx context.Context) (*delivery, error) {
	d := s.current.Load()
	now := s.Now()
	if d != nil && !s.dirty.Load() && !stale(now, d.builtAt, s.deliveryEvery(), DefaultDeliveryRefreshEvery) && UTCDay(now).Equal(d.day) {
		return d, nil
	}
	if d != nil && !s.rebuildMu.TryLock() {
		return d, nil
	}
	if d == nil {
		s.rebuildMu.Lock()
	}
	defer s.rebuildMu.Unlock()
	if cur := s.current.Load(); cur != d {
		return cur, nil // rebuilt while we waited
	}
	if err := s.rebuild(ctx); err != nil {
		if cur := s.current.Load(); cur != nil {
			return cur, nil // a published index beats no fill
		}
		return nil, err
	}
	return s.current.Load(), nil
}

// rebuild reads the store and publishes a new index; the caller holds
// rebuildMu. Spent calls made while it reads are replayed onto the new
// index (the headroom-lowering ones, see apply). Campaigns whose recorded
// status no longer matches Status are updated afterwards.
//
// The index serves every request, so it is built from committed state and
// its status updates commit on their own, outside the unit of work of the
// request that happens to trigger it (txunit.Detached).
func (s *Service) rebuild(ctx context.Context) error {
	ctx = txunit.Detached(ctx)
	now := s.Now()
	day := UTCDay(now)
	s.dirty.Store(false)
	s.spentMu.Lock()
	s.recording, s.pending = true, nil
	s.spentMu.Unlock()
	published := false
	defer func() {
		if !published {
			s.spentMu.Lock()
			s.recording, s.pending = false, nil
			s.spentMu.Unlock()
			s.dirty.Store(true)
		}
	}()

	var floors map[string]map[xpromo.Platform]Floor
	var rows []DeliveryCampaign
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if floors, err = floorIndex(ctx, tx); err != nil {
			return err
		}
		rows, err = tx.DeliveryCampaigns(ctx)
		return err
	})
	if err != nil {
		return err
	}
	var spend map[string]int64
	if s.SpendToday != nil {
		if spend, err = s.SpendToday(ctx, day); err != nil {
			return err
		}
	}
	d, changed := s.buildDelivery(day, now, floors, rows, spend)

	s.spentMu.Lock()
	for _, x := range s.pending {
		d.apply(x, true)
	}
	s.recording, s.pending = false, nil
	s.current.Store(d)
	published = true
	s.spentMu.Unlock()

	if len(changed) == 0 {
		return nil
	}
	return s.syncStatuses(ctx, changed)
}

// buildDelivery builds an index from what the store holds. It also returns
// the campaigns whose recorded status differs from the one Status gives.
func (s *Service) buildDelivery(day, now time.Time, floors map[string]map[xpromo.Platform]Floor, rows []DeliveryCampaign, spend map[string]int64) (*delivery, []string) {
	d := &delivery{
		day:         day,
		builtAt:     now,
		streams:     map[streamKey]*stream{},
		campaigns:   map[string]*campaignState{},
		advertisers: map[string]*advertiserState{},
	}
	if s.streams == nil {
		s.streams = map[streamKey]*streamState{}
	}
	for category, byPlatform := range floors {
		for platform, f := range byPlatform {
			k := streamKey{category, platform}
			ss := s.streams[k]
			if ss == nil {
				ss = &streamState{rng: s.newRand()}
				s.streams[k] = ss
			}
			d.streams[k] = &stream{floor: f.FloorCents, state: ss}
		}
	}
	var changed []string
	for _, row := range rows {
		if row.Paused {
			continue
		}
		floor := highestFloor(floors, row.Categories, row.Platform)
		// The rule of Status, on the rows already read.
		status := xpromo.CampaignStatusThrottled
		if row.AppStatus == xpromo.AppStatusLive && row.Balance >= floor {
			status = xpromo.CampaignStatusActive
		}
		if status != row.Status {
			changed = append(changed, row.ID)
		}
		if !Advertises(row.AppStatus) || floor == 0 {
			continue // suspended, rejected or pending; or no floor anywhere
		}
		adv := d.advertisers[row.AppID]
		if adv == nil {
			adv = &advertiserState{appID: row.AppID, capped: row.AppStatus != xpromo.AppStatusLive}
			adv.balance.Store(row.Balance)
			d.advertisers[row.AppID] = adv
		}
		c := &campaignState{id: row.ID, adv: adv, bid: floor, budget: row.DailyBudgetCents}
		if row.MaxBidCents != nil {
			c.bid = *row.MaxBidCents
		}
		c.spent.Store(spend[row.ID])
		adv.spent.Add(spend[row.ID])
		d.campaigns[row.ID] = c
		for _, k := range row.Categories {
			if st := d.streams[streamKey{k, row.Platform}]; st != nil {
				st.campaigns = append(st.campaigns, c)
			}
		}
	}
	return d, changed
}

// syncStatuses records the status Status gives each campaign, re-reading
// it in the transaction (an advertiser may have paused it meanwhile).
func (s *Service) syncStatuses(ctx context.Context, ids []string) error {
	now := s.Now().UTC()
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		for _, id := range ids {
			c, found, err := tx.CampaignByID(ctx, id)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if _, err := syncStatus(ctx, tx, c, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// syncStatus records Status(c) when it differs from c.Status, and reports
// whether it did.
func syncStatus(ctx context.Context, tx Tx, c Campaign, now time.Time) (bool, error) {
	status, err := Status(ctx, tx, c)
	if err != nil || status == c.Status {
		return false, err
	}
	return true, tx.SetCampaignStatus(ctx, c.ID, c.Paused, status, now)
}

func (s *Service) newRand() auction.Rand {
	if s.NewRand != nil {
		return s.NewRand()
	}
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand panics instead)
	return rand.New(rand.NewChaCha8(seed))
}
