package market

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
)

// Reading and changing campaigns (docs/marketplace.md, "Reading and changing
// a campaign"): GET /v1/campaigns, GET and PATCH /v1/campaigns/{campaign_id}.

// CampaignQuery selects a page of an app's campaigns, newest first.
type CampaignQuery struct {
	AppID  string
	Status xpromo.CampaignStatus // "": every status
	After  *CampaignPosition     // nil: from the newest
	Limit  int
	// Day is the start of the UTC day whose spend each campaign is read
	// with (SpentTodayCents, as CampaignSpend).
	Day time.Time
}

// CampaignPosition is where a page of campaigns ended: the last campaign's
// creation time and id (the order of the list).
type CampaignPosition = cursor.Position

// ParseCampaignQuery reads the query of GET /v1/campaigns for appID:
// `status` (throttled, active or paused), `limit` (1 to
// xpromo.MaxCampaignLimit, xpromo.DefaultCampaignLimit when omitted) and
// `cursor` (a previous page's next_cursor).
func ParseCampaignQuery(appID string, v url.Values) (CampaignQuery, error) {
	q := CampaignQuery{AppID: appID, Limit: xpromo.DefaultCampaignLimit}
	if v.Has("status") {
		q.Status = xpromo.CampaignStatus(v.Get("status"))
		if !q.Status.Valid() {
			return q, fieldErr(apperr.InvalidCampaignStatus, "status", "status must be throttled, active or paused, got %q", v.Get("status"))
		}
	}
	if v.Has("limit") {
		s := v.Get("limit")
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > xpromo.MaxCampaignLimit || strings.TrimSpace(s) != s || strings.HasPrefix(s, "+") {
			return q, fieldErr(apperr.InvalidLimit, "limit", "limit must be an integer from 1 to %d, got %q", xpromo.MaxCampaignLimit, s)
		}
		q.Limit = n
	}
	if v.Has("cursor") {
		p, err := cursor.Decode(v.Get("cursor"))
		if err != nil {
			return q, err
		}
		q.After = &p
	}
	return q, nil
}

// CampaignPage is a page of campaigns; Next is the cursor of the following
// page, "" on the last one.
type CampaignPage struct {
	Campaigns []Campaign
	Next      string
}

// GetCampaign returns caller's campaign id. Another app's campaign answers
// not_found, exactly like a missing one (as pause and resume do).
func (s *Service) GetCampaign(ctx context.Context, caller, id string) (Campaign, error) {
	day := UTCDay(s.Now())
	var out Campaign
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		c, err := ownCampaign(ctx, tx, caller, id, false)
		if err != nil {
			return err
		}
		f, err := readFacts(ctx, tx, c.AppID)
		if err != nil {
			return err
		}
		out = f.describe(c)
		out.SpentTodayCents, err = tx.CampaignSpend(ctx, c.ID, day)
		return err
	})
	return out, err
}

// ListCampaigns returns a page of q.AppID's campaigns, newest first.
func (s *Service) ListCampaigns(ctx context.Context, q CampaignQuery) (CampaignPage, error) {
	q.Day = UTCDay(s.Now())
	var out CampaignPage
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		limit := q.Limit
		q.Limit++ // one more tells whether a next page exists
		list, err := tx.CampaignPage(ctx, q)
		if err != nil || len(list) == 0 {
			return err
		}
		if len(list) > limit {
			list = list[:limit]
			last := list[len(list)-1]
			out.Next = cursor.Encode(CampaignPosition{CreatedAt: last.CreatedAt, ID: last.ID})
		}
		f, err := readFacts(ctx, tx, q.AppID)
		if err != nil {
			return err
		}
		out.Campaigns = make([]Campaign, len(list))
		for i, c := range list {
			out.Campaigns[i] = f.describe(c)
		}
		return nil
	})
	return out, err
}

// describe fills what an answered campaign computes from the present state:
// its floor and the reason of its recorded status.
//
// A read answers the status as recorded (what GET /v1/campaigns filters
// on); it does not record a new one. The reason describes that status: for
// a recorded `throttled` the rule's reason, or `activating` when the rule
// now gives `active` (delivery records it at its next rebuild); none for
// `active` and `paused`.
func (f facts) describe(c Campaign) Campaign {
	c.FloorCents = f.floor(c.Categories)
	c.StatusReason = ""
	if c.Status == xpromo.CampaignStatusThrottled {
		status, reason := f.explain(c)
		if status == xpromo.CampaignStatusActive {
			reason = ReasonActivating
		}
		c.StatusReason = reason
	}
	return c
}

func campaignNotFound() error { return apperr.New(apperr.NotFound, "campaign not found") }

// ownCampaign reads caller's campaign id, locked for a change of its
// settings when lock is set. Another app's campaign answers not_found,
// exactly like a missing one.
func ownCampaign(ctx context.Context, tx Tx, caller, id string, lock bool) (Campaign, error) {
	read := tx.CampaignByID
	if lock {
		read = tx.LockCampaign
	}
	c, found, err := read(ctx, id)
	if err != nil {
		return Campaign{}, err
	}
	if !found || c.AppID != caller {
		return Campaign{}, campaignNotFound()
	}
	return c, nil
}

// UpdateCampaignRequest is a change of a campaign's settings: nil fields
// stay as they are. SetMaxBid says the bid changes, to MaxBidCents (nil: a
// floor buyer).
type UpdateCampaignRequest struct {
	DailyBudgetCents *int64
	SetMaxBid        bool
	MaxBidCents      *int64
	Categories       *[]string
}

// UpdateCampaign changes caller's campaign id, in one transaction: daily
// budget, maximum bid (or floor buyer) and categories, with the rules of
// creation (the bid at or above the floor of the categories it ends up
// with). The campaign's status is then re-evaluated as resume does (a
// paused campaign stays paused). The change reaches delivery once it
// commits, like a pause: the next fills bid and budget with it, and install
// claims check the new budget. A change to nothing new writes nothing.
//
// A daily budget below what the campaign has already spent today is
// accepted: the campaign buys nothing more until the next UTC day, and what
// it spent stays spent.
func (s *Service) UpdateCampaign(ctx context.Context, caller, id string, req UpdateCampaignRequest) (Campaign, error) {
	if req.DailyBudgetCents == nil && !req.SetMaxBid && req.Categories == nil {
		return Campaign{}, fieldErr(apperr.MissingField, "", "nothing to change: give at least one of daily_budget_cents, max_bid_cents, categories")
	}
	if req.Categories != nil {
		if err := s.checkCategories(*req.Categories); err != nil {
			return Campaign{}, err
		}
	}
	if err := checkAmounts(req.DailyBudgetCents, req.MaxBidCents); err != nil {
		return Campaign{}, err
	}
	now := s.recordTime()
	var out Campaign
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		c, err := ownCampaign(ctx, tx, caller, id, true)
		if err != nil {
			return err
		}
		next := c
		if req.DailyBudgetCents != nil {
			next.DailyBudgetCents = *req.DailyBudgetCents
		}
		if req.SetMaxBid {
			next.MaxBidCents = req.MaxBidCents
		}
		if req.Categories != nil {
			next.Categories = append([]string(nil), *req.Categories...)
		}
		f, err := readFacts(ctx, tx, c.AppID)
		if err != nil {
			return err
		}
		floor := f.floor(next.Categories)
		if next.MaxBidCents != nil && *next.MaxBidCents < floor {
			if req.SetMaxBid {
				return fieldErr(apperr.BidBelowFloor, "max_bid_cents", "max_bid_cents %d is below the campaign's floor of %d cents (the highest %s floor of its categories)", *next.MaxBidCents, floor, f.platform)
			}
			return fieldErr(apperr.BidBelowFloor, "categories", "the campaign's max_bid_cents %d is below %d cents, the highest %s floor of these categories: raise max_bid_cents in the same request, or send it as null to buy at the floor", *next.MaxBidCents, floor, f.platform)
		}
		next.Status, _ = f.explain(next)
		if !sameSettings(c, next) || next.Status != c.Status {
			next.UpdatedAt = now
			if err := tx.SetCampaignSettings(ctx, next); err != nil {
				return err
			}
		}
		out = f.describe(next)
		out.SpentTodayCents, err = tx.CampaignSpend(ctx, c.ID, UTCDay(now))
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	s.afterChange(ctx)
	return out, nil
}

func sameSettings(a, b Campaign) bool {
	sameBid := (a.MaxBidCents == nil) == (b.MaxBidCents == nil) && (a.MaxBidCents == nil || *a.MaxBidCents == *b.MaxBidCents)
	return sameBid && a.DailyBudgetCents == b.DailyBudgetCents && slices.Equal(a.Categories, b.Categories)
}
