// Package market holds the rate card (categories and their floors), campaigns
// and the statistics built on the escrow holds of the ledger.
//
// Floors come from the operator's catalogue and only go down: the store keeps
// an append-only history per (category, platform), and the current floor is
// its latest row. The rate card is served from an in-memory snapshot of the
// current floors, refreshed when a floor changes here and at least every
// RefreshEvery (another instance may have cut one).
package market

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/market/auction"
	"github.com/xpromo/xpromo/server/txunit"
)

// Tx is what the market domain needs from a transaction.
type Tx interface {
	// CurrentFloors returns the latest floor of every (category, platform)
	// in the floor history, ordered by category then platform.
	CurrentFloors(ctx context.Context) ([]Floor, error)
	// AppendFloor appends a row to the floor history. Its Version must be
	// the previous version of that (category, platform) + 1 (1 for the
	// first); a concurrent writer of the same version makes it fail with an
	// error wrapping ledger.ErrConflict, so the transaction is retried.
	AppendFloor(ctx context.Context, f Floor) error
	// InsertAdminAudit appends to the operators' audit log (the apps
	// domain's table): floor cuts are operator actions.
	InsertAdminAudit(ctx context.Context, e apps.AuditEntry) error
	// FloorHistory returns every floor row of a category, oldest first
	// (by platform, then version).
	FloorHistory(ctx context.Context, category string) ([]Floor, error)

	// InsertCampaign stores a new campaign.
	InsertCampaign(ctx context.Context, c Campaign) error
	// CampaignByID returns a campaign, and false when there is none.
	CampaignByID(ctx context.Context, id string) (Campaign, bool, error)
	// SetCampaignStatus records a campaign's paused flag and status.
	SetCampaignStatus(ctx context.Context, id string, paused bool, status xpromo.CampaignStatus, at time.Time) error
	// AppCampaigns returns an app's campaigns, oldest first.
	AppCampaigns(ctx context.Context, appID string) ([]Campaign, error)
	// CampaignPage returns at most q.Limit of q.AppID's campaigns, newest
	// first (created_at, then id, both descending), in q.Status when set,
	// strictly after q.After when set, each with its SpentTodayCents of
	// q.Day.
	CampaignPage(ctx context.Context, q CampaignQuery) ([]Campaign, error)
	// LockCampaign reads a campaign for a change of its settings, locking
	// its row until the transaction ends (install claims lock it too, so a
	// claim checks the budget before or after a change, never during).
	LockCampaign(ctx context.Context, id string) (Campaign, bool, error)
	// SetCampaignSettings records a campaign's categories, daily budget,
	// maximum bid (nil: a floor buyer) and status, at c.UpdatedAt.
	SetCampaignSettings(ctx context.Context, c Campaign) error
	// CampaignSpend is the campaign's committed spend of the UTC day
	// starting at day (attribution.Tx's: install claims check budgets
	// against it).
	CampaignSpend(ctx context.Context, campaignID string, day time.Time) (int64, error)

	// AppPlatformAndStatus reads an app's platform and status from the apps
	// table; found is false when the app does not exist.
	AppPlatformAndStatus(ctx context.Context, appID string) (platform xpromo.Platform, status xpromo.AppStatus, found bool, err error)
	// AdvertiserBalance returns the balance of the app's wallet account
	// (ledger.Wallet(appID)), 0 when it has none.
	AdvertiserBalance(ctx context.Context, appID string) (int64, error)

	HoldReader

	// DeliveryCampaigns returns every campaign that is not paused, ordered
	// by id, each with its app's platform and status and the balance of the
	// app's wallet (0 without one): what delivery is rebuilt from.
	DeliveryCampaigns(ctx context.Context) ([]DeliveryCampaign, error)
}

// Floor is a row of the floor history of one (category, platform).
type Floor struct {
	Category   string
	Platform   xpromo.Platform
	FloorCents int64
	Version    int64 // 1, 2, 3… per (category, platform)
	Reason     string
	At         time.Time
}

// HoldReader reads the aggregates of escrow holds: what the go-live rule
// and the stats are computed from (the lifecycle's thresholds read it too).
type HoldReader interface {
	// AdvertiserHoldStats aggregates the escrow holds opened for an
	// advertiser at times in [from, to], both included.
	AdvertiserHoldStats(ctx context.Context, appID string, from, to time.Time) (HoldStats, error)
	// NetworkHoldStats aggregates every escrow hold opened in [from, to].
	NetworkHoldStats(ctx context.Context, from, to time.Time) (HoldStats, error)
	// AdvertiserHoldStatsDays and NetworkHoldStatsDays are the same over
	// the holds opened in the UTC days from through to (midnights, both
	// included), read from the daily rollups (rollups.go).
	AdvertiserHoldStatsDays(ctx context.Context, appID string, from, to time.Time) (HoldStats, error)
	NetworkHoldStatsDays(ctx context.Context, from, to time.Time) (HoldStats, error)
}

// HoldStats are aggregates over a set of escrow holds: the holds opened, how
// many of them are resolved (charged or released), how many were charged,
// and the sum of the charged amounts.
type HoldStats struct {
	Opened        int64
	Resolved      int64
	Charged       int64
	ChargedAmount int64
	// The floors that applied to the charged holds: for each charged hold
	// of a chain, the floor of the chain's (category, platform) in force
	// when the offer was made. FlooredCharged counts the charged holds with
	// a known floor (holds posted outside attribution have none).
	FlooredCharged int64
	ChargedFloors  int64
	// PublisherSuspended counts the released holds (among Resolved) of
	// chains refunded because their publisher was suspended for fraud when
	// the sweep came (chain reason publisher_suspended): installs that
	// activated, refunded to the advertiser rather than charged.
	PublisherSuspended int64
}

// Retention is the advertiser's 48-hour retention over the holds: charged /
// resolved, 0 while none is resolved. Holds released because the publisher
// was suspended for fraud count neither way: the fraudulent publisher's
// installs say nothing about the advertiser's app (their activation is as
// suspect as the rest of the publisher's traffic), and refunding them must
// not lower the retention of the advertiser they defrauded — nor keep it
// from going live.
func (h HoldStats) Retention() float64 {
	return ratio(h.Charged, h.Resolved-h.PublisherSuspended)
}

// Txer runs fn in a transaction (storage.Updater / storage.Viewer).
type Txer func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

// Default refresh intervals of the in-memory snapshots.
const (
	DefaultRefreshEvery      = 30 * time.Second
	DefaultNetworkStatsEvery = time.Minute
)

// Service is the market domain's entry point; its fields are its
// dependencies. Call Reconcile once before serving.
type Service struct {
	Update Txer
	View   Txer
	Now    func() time.Time // the injected clock
	// Catalogue is the operator's categories, ordered by key (LoadCatalogue).
	Catalogue []Category
	// RefreshEvery bounds how stale the rate card snapshot may be when a
	// floor was cut by another instance; 0 means DefaultRefreshEvery.
	RefreshEvery time.Duration
	// NetworkStatsEvery is how long network statistics are reused before
	// being recomputed; 0 means DefaultNetworkStatsEvery.
	NetworkStatsEvery time.Duration
	// ChainStats, when set (attribution, wired in package assembly), gives
	// Stats the figures only the event chains know: impressions, clicks
	// and fraud_rejected. NetworkChainStats gives NetworkStats fraud_pct
	// and avg_cpi_by_category. nil: they stay 0 and {}.
	ChainStats        func(ctx context.Context, appID string, from, to time.Time) (xpromo.Stats, error)
	NetworkChainStats func(ctx context.Context, from, to time.Time) (xpromo.NetworkStats, error)

	// Delivery (delivery.go).

	// SpendToday returns each campaign's committed spend of the UTC day
	// starting at dayStart (its escrow holds opened that day and not
	// released, charged or not), by campaign id; a campaign missing from the
	// map spent nothing. Attribution, which records which campaign each hold
	// is for, provides it. nil means zero spend.
	SpendToday func(ctx context.Context, dayStart time.Time) (map[string]int64, error)
	// DeliveryRefreshEvery bounds how stale delivery may be; 0 means
	// DefaultDeliveryRefreshEvery.
	DeliveryRefreshEvery time.Duration
	// ThrottledDailyCapCents is the daily cap of the campaigns of an app
	// that is not live, together; 0 means DefaultThrottledDailyCapCents.
	ThrottledDailyCapCents int64
	// NewRand returns the random source of a new stream (which reserved
	// positions each block gets, who wins a reserved fill or a tie); nil
	// means ChaCha8 seeded from crypto/rand, so neither is predictable.
	NewRand func() auction.Rand

	// Trading (trading.go): the app status rules, applied through the apps
	// domain's Transition.
	Apps *apps.Service
	// LiveMinCleared and LiveMinRetention are the go-live rule's thresholds;
	// 0 means DefaultLiveMinCleared and DefaultLiveMinRetention.
	LiveMinCleared   int64
	LiveMinRetention float64

	card       atomic.Pointer[cardSnapshot]
	refreshing sync.Mutex
	network    atomic.Pointer[networkSnapshot]
	netMu      sync.Mutex

	current   atomic.Pointer[delivery]
	dirty     atomic.Bool
	rebuildMu sync.Mutex                 // one rebuild at a time
	streams   map[streamKey]*streamState // under rebuildMu; streams keep their schedule across rebuilds
	spentMu   sync.Mutex                 // Spent against publishing an index
	recording bool                       // under spentMu: a rebuild is reading the store
	pending   []spendDelta               // under spentMu: Spent calls since it started
}

type cardSnapshot struct {
	card xpromo.RateCard
	at   time.Time
}

func (s *Service) category(key string) (Category, bool) {
	for _, c := range s.Catalogue {
		if c.Key == key {
			return c, true
		}
	}
	return Category{}, false
}

// Reconcile brings the stored floor history in line with the catalogue, in
// one transaction: a (category, platform) not stored yet gets its first row;
// a configured floor below the current one is recorded as a cut; one above it
// fails with floor_cannot_rise and nothing is written (the server must then
// refuse to start). It then loads the rate card snapshot.
//
// Categories stored but no longer configured keep their history (existing
// campaigns keep their floors) but leave the rate card.
func (s *Service) Reconcile(ctx context.Context) error {
	now := s.Now().UTC()
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		current, err := floorIndex(ctx, tx)
		if err != nil {
			return err
		}
		for _, c := range s.Catalogue {
			for _, p := range Platforms {
				want := c.Floors[p]
				cur, ok := current[c.Key][p]
				switch {
				case !ok:
					err = tx.AppendFloor(ctx, Floor{Category: c.Key, Platform: p, FloorCents: want, Version: 1, Reason: "initial floor from the catalogue", At: now})
				case want < cur.FloorCents:
					err = tx.AppendFloor(ctx, Floor{Category: c.Key, Platform: p, FloorCents: want, Version: cur.Version + 1, Reason: "lowered in the catalogue", At: now})
				case want > cur.FloorCents:
					err = apperr.New(apperr.FloorCannotRise, "the catalogue sets the %s floor of %q to %d cents, above the current %d cents; floors never rise (lower the file's value to %d or less)",
						p, c.Key, want, cur.FloorCents, cur.FloorCents)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.refresh(ctx)
}

// floorIndex reads the current floors by category and platform.
func floorIndex(ctx context.Context, tx Tx) (map[string]map[xpromo.Platform]Floor, error) {
	fs, err := tx.CurrentFloors(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]map[xpromo.Platform]Floor{}
	for _, f := range fs {
		if out[f.Category] == nil {
			out[f.Category] = map[xpromo.Platform]Floor{}
		}
		out[f.Category][f.Platform] = f
	}
	return out, nil
}

// CategoryFloors is a category with its current floor per platform.
type CategoryFloors struct {
	Key    string
	Label  string
	Floors map[xpromo.Platform]int64
}

// CutFloor lowers the current floor of a configured category on a platform
// (an operator's action, recorded in the history with its reason). A floor
// above the current one fails with floor_cannot_rise; an equal one changes
// nothing. A cut is recorded in the floor history and in the operators'
// audit log, in one transaction. It returns the category's current floors.
func (s *Service) CutFloor(ctx context.Context, category string, platform xpromo.Platform, floorCents int64, reason string) (CategoryFloors, error) {
	c, ok := s.category(category)
	if !ok {
		return CategoryFloors{}, apperr.New(apperr.NotFound, "no category %q in the rate card", category)
	}
	if !platform.Valid() {
		e := apperr.New(apperr.InvalidPlatform, "platform must be mac or win, not %q", platform)
		e.Field = "platform"
		return CategoryFloors{}, e
	}
	if floorCents < 1 || floorCents > MaxFloorCents {
		e := apperr.New(apperr.InvalidAmount, "floor_cents must be an integer from 1 to %d", MaxFloorCents)
		e.Field = "floor_cents"
		return CategoryFloors{}, e
	}
	if reason == "" {
		e := apperr.New(apperr.MissingField, "reason is required: it is kept in the floor history")
		e.Field = "reason"
		return CategoryFloors{}, e
	}
	out := CategoryFloors{Key: c.Key, Label: c.Label, Floors: map[xpromo.Platform]int64{}}
	now := s.Now().UTC()
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		current, err := floorIndex(ctx, tx)
		if err != nil {
			return err
		}
		cur, ok := current[c.Key][platform]
		switch {
		case !ok:
			// Reconcile stores every configured category before serving.
			return apperr.New(apperr.NotFound, "no %s floor stored for %q", platform, c.Key)
		case floorCents > cur.FloorCents:
			return apperr.New(apperr.FloorCannotRise, "the %s floor of %q is %d cents; %d would raise it, and floors never rise", platform, c.Key, cur.FloorCents, floorCents)
		case floorCents < cur.FloorCents:
			f := Floor{Category: c.Key, Platform: platform, FloorCents: floorCents, Version: cur.Version + 1, Reason: reason, At: now}
			if err := tx.AppendFloor(ctx, f); err != nil {
				return err
			}
			detail, err := json.Marshal(map[string]any{"platform": platform, "from": cur.FloorCents, "to": floorCents, "reason": reason})
			if err != nil {
				return err
			}
			if err := tx.InsertAdminAudit(ctx, apps.AuditEntry{
				ID: ids.New("aud"), Actor: apps.ActorAdmin, Action: "market.floor_cut", Subject: "category:" + c.Key, Detail: detail, At: now,
			}); err != nil {
				return err
			}
			current[c.Key][platform] = f
		}
		for p, f := range current[c.Key] {
			out.Floors[p] = f.FloorCents
		}
		return nil
	})
	if err != nil {
		return CategoryFloors{}, err
	}
	// Once the cut is committed (with the request's unit of work, if any):
	// a failed reload leaves the old snapshot, which is reloaded once it is
	// RefreshEvery old.
	txunit.AfterCommit(ctx, func() { _ = s.refresh(ctx) })
	s.afterChange(ctx)
	return out, nil
}

// FloorHistory returns a category's floor history (every floor it has had
// on each platform, with the reason and time of each change), ordered by
// platform then version.
func (s *Service) FloorHistory(ctx context.Context, category string) ([]Floor, error) {
	var out []Floor
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		out, err = tx.FloorHistory(ctx, category)
		return err
	})
	return out, err
}

// RateCard returns the published rate card: the configured categories
// ordered by key, each spanning its platforms' current floors. It is served
// from memory and reloaded when older than RefreshEvery; while one caller
// reloads, the others keep getting the previous snapshot.
func (s *Service) RateCard(ctx context.Context) (xpromo.RateCard, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return xpromo.RateCard{}, err
	}
	return snap.card, nil
}

func (s *Service) snapshot(ctx context.Context) (*cardSnapshot, error) {
	snap := s.card.Load()
	if snap != nil && !stale(s.Now(), snap.at, s.RefreshEvery, DefaultRefreshEvery) {
		return snap, nil
	}
	if snap != nil && !s.refreshing.TryLock() {
		return snap, nil // someone else is reloading it
	}
	if snap == nil {
		s.refreshing.Lock()
	}
	defer s.refreshing.Unlock()
	if cur := s.card.Load(); cur != snap {
		return cur, nil // reloaded while we waited
	}
	if err := s.load(ctx); err != nil {
		if snap != nil {
			return snap, nil // a stale rate card beats an error on a public read
		}
		return nil, err
	}
	return s.card.Load(), nil
}

func stale(now, at time.Time, every, def time.Duration) bool {
	if every <= 0 {
		every = def
	}
	return now.Before(at) || now.Sub(at) >= every
}

// refresh reloads the snapshot now (after a floor changed here).
func (s *Service) refresh(ctx context.Context) error {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	return s.load(ctx)
}

// load reads the current floors and publishes a new snapshot. The caller
// holds s.refreshing. The snapshot serves every request: it is read from
// committed state, outside any request's unit of work.
func (s *Service) load(ctx context.Context) error {
	ctx = txunit.Detached(ctx)
	at := s.Now()
	var current map[string]map[xpromo.Platform]Floor
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		current, err = floorIndex(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	snap := &cardSnapshot{at: at, card: xpromo.RateCard{
		Currency:           xpromo.Currency,
		TakeRate:           xpromo.TakeRate,
		CreditBonus:        xpromo.CreditBonus,
		ReservedFloorShare: xpromo.ReservedFloorShare,
		PricingModel:       xpromo.PricingModel,
		Categories:         make([]xpromo.RateCardCategory, 0, len(s.Catalogue)),
	}}
	for _, c := range s.Catalogue {
		fl := current[c.Key]
		if len(fl) != len(Platforms) {
			continue // not reconciled (cannot happen after Reconcile)
		}
		rc := xpromo.RateCardCategory{Key: c.Key, Label: c.Label}
		for i, p := range Platforms {
			v := fl[p].FloorCents
			if i == 0 || v < rc.FloorCentsMin {
				rc.FloorCentsMin = v
			}
			if i == 0 || v > rc.FloorCentsMax {
				rc.FloorCentsMax = v
			}
		}
		snap.card.Categories = append(snap.card.Categories, rc)
	}
	s.card.Store(snap)
	return nil
}
