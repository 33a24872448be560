package market

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
)

// Campaign is a stored campaign.
type Campaign struct {
	ID               string
	AppID            string
	Categories       []string
	DailyBudgetCents int64
	MaxBidCents      *int64 // nil: a floor buyer
	// Paused is the advertiser's switch; Status is the state last computed
	// for the campaign (Status() says how).
	Paused bool
	Status xpromo.CampaignStatus
	// StatusReason says why a campaign that is not paused is not active
	// (one of the Reason… codes below); "" when active or paused. It is
	// computed with Status when a campaign is answered, not stored.
	StatusReason string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// FloorCents is the campaign's floor: the highest current floor of its
	// categories on its app's platform. It is computed when the campaign is
	// read, not stored, so it follows floor cuts (and so never rises).
	FloorCents int64
	// SpentTodayCents is the campaign's committed spend of the current UTC
	// day (CampaignSpend), read when the campaign is answered.
	SpentTodayCents int64
}

// Wire returns the API's representation of the campaign.
func (c Campaign) Wire() xpromo.Campaign {
	return xpromo.Campaign{
		CampaignID:       c.ID,
		DailyBudgetCents: c.DailyBudgetCents,
		Status:           c.Status,
		StatusReason:     optional(c.StatusReason),
		FloorCents:       c.FloorCents,
		MaxBidCents:      c.MaxBidCents,
		AppID:            c.AppID,
		Categories:       append([]string(nil), c.Categories...),
		SpentTodayCents:  c.SpentTodayCents,
		CreatedAt:        c.CreatedAt.UTC(),
		UpdatedAt:        c.UpdatedAt.UTC(),
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Why a campaign that is not paused is not active: Campaign.status_reason.
const (
	// The app waits for the vetting gate: the campaign delivers nothing
	// until the app is approved.
	ReasonAppPending = "app_pending"
	// The app was rejected or is suspended: the campaign delivers nothing.
	ReasonAppRejected  = "app_rejected"
	ReasonAppSuspended = "app_suspended"
	// The app is approved or throttled, not yet live: the campaign
	// delivers within the app's daily throttled cap.
	ReasonAppNotLive = "app_not_live"
	// The app is live but its wallet cannot pay one install at the
	// campaign's floor: nothing is delivered until it is topped up.
	ReasonWalletBelowFloor = "wallet_below_floor"
	// A new campaign of a live, funded app: delivery makes it active at
	// its next refresh (DefaultRefreshEvery at most).
	ReasonActivating = "activating"
)

// MaxAmountCents bounds daily budgets and bids (EUR 100 million): larger
// values are refused as invalid_amount rather than risking overflow in the
// budget arithmetic of delivery.
const MaxAmountCents = 10_000_000_000

// CreateCampaignRequest is a validated-by-CreateCampaign request.
type CreateCampaignRequest struct {
	AppID            string
	Categories       []string
	DailyBudgetCents int64
	MaxBidCents      *int64
}

func fieldErr(code, field, format string, args ...any) *apperr.Error {
	e := apperr.New(code, format, args...)
	e.Field = field
	return e
}

// checkCategories applies the rules of a campaign's categories (creation
// and change alike): at least one, at most MaxCategories, each a key of the
// rate card, each once.
func (s *Service) checkCategories(categories []string) error {
	if len(categories) == 0 {
		return fieldErr(apperr.InvalidCategory, "categories", "categories must list at least one category key of the rate card")
	}
	if len(categories) > MaxCategories {
		return fieldErr(apperr.InvalidCategory, "categories", "categories lists %d keys; a rate card has at most %d", len(categories), MaxCategories)
	}
	seen := map[string]bool{}
	for _, k := range categories {
		if !keyPattern.MatchString(k) {
			return fieldErr(apperr.InvalidCategory, "categories", "%q is not a category key (1 to 64 of a-z, 0-9 and -); GET /v1/rate-card lists the keys", k)
		}
		if seen[k] {
			return fieldErr(apperr.InvalidCategory, "categories", "category %q is listed twice", k)
		}
		seen[k] = true
		if _, ok := s.category(k); !ok {
			return fieldErr(apperr.UnknownCategory, "categories", "category %q is not in the rate card (GET /v1/rate-card lists the keys)", k)
		}
	}
	return nil
}

// checkAmounts applies the rules of a daily budget and a maximum bid given
// (nil: not given) that do not depend on the campaign's floor.
func checkAmounts(dailyBudgetCents, maxBidCents *int64) error {
	if b := dailyBudgetCents; b != nil {
		if *b < xpromo.MinDailyBudgetCents {
			return fieldErr(apperr.BelowMinimum, "daily_budget_cents", "daily_budget_cents must be at least %d, got %d", xpromo.MinDailyBudgetCents, *b)
		}
		if *b > MaxAmountCents {
			return fieldErr(apperr.InvalidAmount, "daily_budget_cents", "daily_budget_cents must be at most %d", int64(MaxAmountCents))
		}
	}
	if maxBidCents != nil && *maxBidCents > MaxAmountCents {
		return fieldErr(apperr.InvalidAmount, "max_bid_cents", "max_bid_cents must be at most %d", int64(MaxAmountCents))
	}
	return nil
}

// CreateCampaign creates a campaign for caller's own app, in status
// throttled. Another app's id answers not_found, exactly as a missing one.
func (s *Service) CreateCampaign(ctx context.Context, caller string, req CreateCampaignRequest) (Campaign, error) {
	if req.AppID == "" {
		return Campaign{}, fieldErr(apperr.MissingField, "app_id", "app_id is required")
	}
	if req.AppID != caller {
		return Campaign{}, apperr.New(apperr.NotFound, "app not found")
	}
	if err := s.checkCategories(req.Categories); err != nil {
		return Campaign{}, err
	}
	if err := checkAmounts(&req.DailyBudgetCents, req.MaxBidCents); err != nil {
		return Campaign{}, err
	}
	now := s.recordTime()
	var out Campaign
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		platform, _, found, err := tx.AppPlatformAndStatus(ctx, req.AppID)
		if err != nil {
			return err
		}
		if !found {
			return apperr.New(apperr.NotFound, "app not found")
		}
		floor, err := campaignFloor(ctx, tx, req.Categories, platform)
		if err != nil {
			return err
		}
		if req.MaxBidCents != nil && *req.MaxBidCents < floor {
			return fieldErr(apperr.BidBelowFloor, "max_bid_cents", "max_bid_cents %d is below the campaign's floor of %d cents (the highest %s floor of its categories)", *req.MaxBidCents, floor, platform)
		}
		out = Campaign{
			ID:               ids.New("cmp"),
			AppID:            req.AppID,
			Categories:       append([]string(nil), req.Categories...),
			DailyBudgetCents: req.DailyBudgetCents,
			MaxBidCents:      req.MaxBidCents,
			CreatedAt:        now,
			UpdatedAt:        now,
			FloorCents:       floor,
		}
		// A new campaign is throttled (the API document); the reason says
		// what will happen to it.
		var status xpromo.CampaignStatus
		status, out.StatusReason, err = Explain(ctx, tx, out)
		if err != nil {
			return err
		}
		out.Status = xpromo.CampaignStatusThrottled
		if status == xpromo.CampaignStatusActive {
			out.StatusReason = ReasonActivating
		}
		return tx.InsertCampaign(ctx, out)
	})
	if err != nil {
		return Campaign{}, err
	}
	s.afterChange(ctx)
	return out, nil
}

// PauseCampaign pauses caller's campaign; pausing a paused campaign changes
// nothing.
func (s *Service) PauseCampaign(ctx context.Context, caller, id string) (Campaign, error) {
	return s.setPaused(ctx, caller, id, true)
}

// ResumeCampaign unpauses caller's campaign; its status becomes whichever of
// active and throttled applies now (Status).
func (s *Service) ResumeCampaign(ctx context.Context, caller, id string) (Campaign, error) {
	return s.setPaused(ctx, caller, id, false)
}

func (s *Service) setPaused(ctx context.Context, caller, id string, paused bool) (Campaign, error) {
	now := s.recordTime()
	var out Campaign
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		c, err := ownCampaign(ctx, tx, caller, id, false)
		if err != nil {
			return err
		}
		wasPaused := c.Paused
		c.Paused = paused
		status, reason, err := Explain(ctx, tx, c)
		if err != nil {
			return err
		}
		c.StatusReason = reason
		if c.Status != status || wasPaused != paused {
			if err := tx.SetCampaignStatus(ctx, c.ID, paused, status, now); err != nil {
				return err
			}
			c.Status, c.UpdatedAt = status, now
		}
		out, err = withFloor(ctx, tx, c)
		if err != nil {
			return err
		}
		out.SpentTodayCents, err = tx.CampaignSpend(ctx, c.ID, UTCDay(now))
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	s.afterChange(ctx)
	return out, nil
}

// Status is the status campaign c is in given the present state of its app
// and wallet (decisions §6): `paused` while the advertiser has paused it;
// otherwise `active` when its app is `live` and its wallet covers the
// campaign's floor (at least one install at the lowest price it can be
// charged), and `throttled` in every other case. Creation, resume, and the
// delivery that later moves campaigns between throttled and active all use
// this one rule.
func Status(ctx context.Context, tx Tx, c Campaign) (xpromo.CampaignStatus, error) {
	status, _, err := Explain(ctx, tx, c)
	return status, err
}

// Explain is Status with the reason a campaign that is not paused is not
// active (Reason… codes; "" when active or paused).
func Explain(ctx context.Context, tx Tx, c Campaign) (xpromo.CampaignStatus, string, error) {
	if c.Paused {
		return xpromo.CampaignStatusPaused, "", nil
	}
	f, err := readFacts(ctx, tx, c.AppID)
	if err != nil {
		return xpromo.CampaignStatusThrottled, ReasonAppPending, err
	}
	status, reason := f.explain(c)
	return status, reason, nil
}

// facts are what the status rule and the floor of an app's campaigns are
// computed from: the app's platform and status, its wallet balance and the
// current floors. A list of campaigns reads them once.
type facts struct {
	found     bool
	platform  xpromo.Platform
	appStatus xpromo.AppStatus
	balance   int64
	floors    map[string]map[xpromo.Platform]Floor
}

func readFacts(ctx context.Context, tx Tx, appID string) (facts, error) {
	var f facts
	var err error
	f.platform, f.appStatus, f.found, err = tx.AppPlatformAndStatus(ctx, appID)
	if err != nil || !f.found {
		return f, err
	}
	if f.floors, err = floorIndex(ctx, tx); err != nil {
		return f, err
	}
	f.balance, err = tx.AdvertiserBalance(ctx, appID)
	return f, err
}

// floor is the highest current floor among categories on the app's
// platform.
func (f facts) floor(categories []string) int64 {
	return highestFloor(f.floors, categories, f.platform)
}

// explain is the rule of Status and Explain on facts already read.
func (f facts) explain(c Campaign) (xpromo.CampaignStatus, string) {
	if c.Paused {
		return xpromo.CampaignStatusPaused, ""
	}
	if !f.found {
		return xpromo.CampaignStatusThrottled, ReasonAppPending
	}
	switch f.appStatus {
	case xpromo.AppStatusLive:
	case xpromo.AppStatusPending:
		return xpromo.CampaignStatusThrottled, ReasonAppPending
	case xpromo.AppStatusRejected:
		return xpromo.CampaignStatusThrottled, ReasonAppRejected
	case xpromo.AppStatusSuspended:
		return xpromo.CampaignStatusThrottled, ReasonAppSuspended
	default: // approved, throttled
		return xpromo.CampaignStatusThrottled, ReasonAppNotLive
	}
	if f.balance >= f.floor(c.Categories) {
		return xpromo.CampaignStatusActive, ""
	}
	return xpromo.CampaignStatusThrottled, ReasonWalletBelowFloor
}

// withFloor fills c.FloorCents from the current floors.
func withFloor(ctx context.Context, tx Tx, c Campaign) (Campaign, error) {
	platform, _, _, err := tx.AppPlatformAndStatus(ctx, c.AppID)
	if err != nil {
		return c, err
	}
	c.FloorCents, err = campaignFloor(ctx, tx, c.Categories, platform)
	return c, err
}

// campaignFloor is the highest current floor among categories on platform.
func campaignFloor(ctx context.Context, tx Tx, categories []string, platform xpromo.Platform) (int64, error) {
	current, err := floorIndex(ctx, tx)
	if err != nil {
		return 0, err
	}
	return highestFloor(current, categories, platform), nil
}

// highestFloor is a campaign's floor: the highest of the current floors of
// its categories on its app's platform (0 when none has a floor).
func highestFloor(current map[string]map[xpromo.Platform]Floor, categories []string, platform xpromo.Platform) int64 {
	var floor int64
	for _, k := range categories {
		floor = max(floor, current[k][platform].FloorCents)
	}
	return floor
}

// recordTime is now as the stores keep it (microseconds), so the times a
// write answers are the ones a later read answers.
func (s *Service) recordTime() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }
