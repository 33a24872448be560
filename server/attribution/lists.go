package attribution

import (
	"context"
	"net/url"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
)

// GET /v1/chains: the caller's app's chains, newest first (docs/dashboard.md
// "API").

// ListTx is what the chains list reads.
type ListTx interface {
	// ChainPage returns up to q.Limit chains of q.AppID on the side q.Role
	// ("" either side) with q.State and q.CampaignID when set, newest first
	// (created_at, id), after q.After when set.
	ChainPage(ctx context.Context, q ChainQuery) ([]Chain, error)
}

// Roles of an app in a chain, the `role` filter of GET /v1/chains.
const (
	RolePublisher  = "publisher"  // the app showed the ad and earns
	RoleAdvertiser = "advertiser" // the app was installed and pays
)

// Bounds of GET /v1/chains: a chain carries both signed tokens, so pages
// are smaller than the other lists'.
const (
	DefaultChainLimit = 50
	MaxChainLimit     = 100
)

// ChainQuery selects a page of an app's chains.
type ChainQuery struct {
	AppID      string
	Role       string // RolePublisher, RoleAdvertiser or "" (either)
	State      State  // "": every state
	CampaignID string // "": every campaign; else one of the app's own (ListChains)
	After      *cursor.Position
	Limit      int
}

// ParseChainQuery reads the query of GET /v1/chains for appID: `state`,
// `role`, `campaign_id`, `limit` and `cursor`.
func ParseChainQuery(appID string, v url.Values) (ChainQuery, error) {
	q := ChainQuery{AppID: appID, CampaignID: v.Get("campaign_id")}
	if v.Has("state") {
		q.State = State(v.Get("state"))
		if !q.State.Valid() {
			e := apperr.New(apperr.InvalidChainState, "state must be clicked, installed, activated_48h, cleared, refunded or rejected, got %q", v.Get("state"))
			e.Field = "state"
			return q, e
		}
	}
	if v.Has("role") {
		q.Role = v.Get("role")
		if q.Role != RolePublisher && q.Role != RoleAdvertiser {
			e := apperr.New(apperr.InvalidRole, "role must be publisher or advertiser, got %q", q.Role)
			e.Field = "role"
			return q, e
		}
	}
	var err error
	q.Limit, q.After, err = cursor.Page(v, DefaultChainLimit, MaxChainLimit)
	return q, err
}

// ChainPage is a page of chains; Next is the cursor of the following
// (older) page, "" on the last one.
type ChainPage struct {
	Chains []Chain
	Next   string
}

// ListChains returns a page of q.AppID's chains. A campaign filter names
// one of the app's own campaigns, so it reads the advertiser's side only: a
// campaign of another app matches nothing, on either side (the publisher's
// side with a campaign is not read at all; the store tests the advertiser
// side's ownership before its scan).
func (s *Service) ListChains(ctx context.Context, q ChainQuery) (ChainPage, error) {
	var out ChainPage
	if q.CampaignID != "" {
		if q.Role == RolePublisher {
			return out, nil
		}
		q.Role = RoleAdvertiser
	}
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		limit := q.Limit
		q.Limit++
		list, err := tx.ChainPage(ctx, q)
		out.Chains, out.Next = cursor.Cut(list, limit, func(c Chain) cursor.Position {
			return cursor.Position{CreatedAt: c.CreatedAt, ID: c.ID}
		})
		return err
	})
	return out, err
}
