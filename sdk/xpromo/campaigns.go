package xpromo

import (
	"encoding/json"
	"errors"
)

// Wire types of the additive campaign endpoints: GET /v1/campaigns,
// GET /v1/campaigns/{campaign_id} and PATCH /v1/campaigns/{campaign_id}.

// Bounds of GET /v1/campaigns: the page size when `limit` is omitted, and
// the largest `limit` accepted.
const (
	DefaultCampaignLimit = 100
	MaxCampaignLimit     = 1000
)

// CampaignPage is the answer of GET /v1/campaigns: the caller's app's
// campaigns, newest first.
type CampaignPage struct {
	Campaigns []Campaign `json:"campaigns"`
	// NextCursor is set when older campaigns exist: pass it back as
	// CampaignListParams.Cursor. Absent on the last page.
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Campaigns as [] when nil.
func (p CampaignPage) MarshalJSON() ([]byte, error) {
	type plain CampaignPage
	if p.Campaigns == nil {
		p.Campaigns = []Campaign{}
	}
	return json.Marshal(plain(p))
}

// CampaignListParams are the optional query parameters of ListCampaigns and
// Campaigns. The zero value (or nil) reads every status, newest first, 100 a
// page.
type CampaignListParams struct {
	// Status keeps only the campaigns in this status ("" = all).
	Status CampaignStatus
	// Limit is the page size, 1 to MaxCampaignLimit (0 = DefaultCampaignLimit).
	Limit int
	// Cursor is the NextCursor of the previous page (of the same Status);
	// "" reads the first page. Campaigns follows cursors itself.
	Cursor string
}

// UpdateCampaignRequest is the body of PATCH /v1/campaigns/{campaign_id}:
// the fields left nil (or false) stay as they are; at least one must be set.
//
// The bid has three states, as on the wire: unchanged (MaxBidCents nil,
// FloorPrice false), a maximum bid (MaxBidCents set), or a floor buyer
// (FloorPrice true, sent as "max_bid_cents": null). Setting both is an
// error of the caller, reported by MarshalJSON before anything is sent.
type UpdateCampaignRequest struct {
	// DailyBudgetCents is the new daily budget: at least
	// MinDailyBudgetCents. It applies to the current UTC day at once: a
	// budget below what the campaign already spent today stops it buying
	// until the next UTC day (what was spent stays spent).
	DailyBudgetCents *int64
	// MaxBidCents is the new maximum bid per cleared install, at or above
	// the campaign's floor (its categories' highest floor on its app's
	// platform).
	MaxBidCents *int64
	// FloorPrice makes the campaign a floor buyer: it bids its floor
	// (max_bid_cents becomes null).
	FloorPrice bool
	// Categories replaces the rate-card categories the campaign buys
	// (non-empty, each key once). The floor follows them, and a maximum bid
	// kept or set must be at or above the new floor.
	Categories []string
}

// errBidTwice is MarshalJSON's refusal of MaxBidCents with FloorPrice.
var errBidTwice = errors.New("xpromo: UpdateCampaignRequest: set MaxBidCents or FloorPrice, not both")

// MarshalJSON sends only the fields that change, and max_bid_cents as null
// for FloorPrice.
func (r UpdateCampaignRequest) MarshalJSON() ([]byte, error) {
	if r.FloorPrice && r.MaxBidCents != nil {
		return nil, errBidTwice
	}
	body := map[string]any{}
	if r.DailyBudgetCents != nil {
		body["daily_budget_cents"] = *r.DailyBudgetCents
	}
	switch {
	case r.FloorPrice:
		body["max_bid_cents"] = nil
	case r.MaxBidCents != nil:
		body["max_bid_cents"] = *r.MaxBidCents
	}
	if r.Categories != nil {
		body["categories"] = r.Categories
	}
	return json.Marshal(body)
}
