package xpromo

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// GetRateCard reads the rate card: categories and floors, take rate, credit
// bonus (GET /v1/rate-card; public).
func (c *Client) GetRateCard(ctx context.Context, opts ...CallOption) (*RateCard, error) {
	out := new(RateCard)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/rate-card"}, out, opts)
	return result(out, err)
}

// GetNetworkStats reads the network-wide figures (GET /v1/network-stats;
// public).
func (c *Client) GetNetworkStats(ctx context.Context, opts ...CallOption) (*NetworkStats, error) {
	out := new(NetworkStats)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/network-stats"}, out, opts)
	return result(out, err)
}

// GetIntegrationGuide returns the SDK quickstart, as markdown (GET
// /v1/integration-guide; public).
func (c *Client) GetIntegrationGuide(ctx context.Context, opts ...CallOption) (string, error) {
	var out string
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/integration-guide", accept: "text/markdown"}, &out, opts)
	if err != nil {
		return "", err
	}
	return out, nil
}

// GetOpenAPIDocument returns the server's OpenAPI 3.1 document (GET
// /openapi.json; public).
func (c *Client) GetOpenAPIDocument(ctx context.Context, opts ...CallOption) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/openapi.json"}, &out, opts)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateCampaign creates a campaign buying cleared installs for the
// caller's own app (POST /v1/campaigns). It starts `throttled`.
//
// Refusals: 422 below_minimum (daily budget under MinDailyBudgetCents),
// bid_below_floor, unknown_category; 404 not_found for another app's app_id.
func (c *Client) CreateCampaign(ctx context.Context, params *CreateCampaignRequest, opts ...CallOption) (*Campaign, error) {
	out := new(Campaign)
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/campaigns", body: nonNil(params)}, out, opts)
	return result(out, err)
}

// PauseCampaign pauses a campaign of the caller's app (POST
// /v1/campaigns/{campaign_id}/pause) and returns it, `paused`.
func (c *Client) PauseCampaign(ctx context.Context, campaignID string, opts ...CallOption) (*Campaign, error) {
	out := new(Campaign)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/campaigns/%s/pause", campaignID)}, out, opts)
	return result(out, err)
}

// ResumeCampaign resumes a paused campaign (POST
// /v1/campaigns/{campaign_id}/resume) and returns it, `throttled` or
// `active` as the app's state allows.
func (c *Client) ResumeCampaign(ctx context.Context, campaignID string, opts ...CallOption) (*Campaign, error) {
	out := new(Campaign)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/campaigns/%s/resume", campaignID)}, out, opts)
	return result(out, err)
}

// GetCampaign reads a campaign of the caller's app (GET
// /v1/campaigns/{campaign_id}).
//
// Refusals: 404 not_found, for a missing campaign and for another app's
// alike.
func (c *Client) GetCampaign(ctx context.Context, campaignID string, opts ...CallOption) (*Campaign, error) {
	out := new(Campaign)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/campaigns/%s", campaignID)}, out, opts)
	return result(out, err)
}

// ListCampaigns reads one page of the caller's app's campaigns, newest
// first (GET /v1/campaigns). When older campaigns exist the page's
// NextCursor is set: pass it back as params.Cursor. params may be nil.
// Campaigns walks every page.
//
// Refusals: 422 invalid_campaign_status, invalid_limit, invalid_cursor.
func (c *Client) ListCampaigns(ctx context.Context, params *CampaignListParams, opts ...CallOption) (*CampaignPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.Status != "" {
			q.Set("status", string(p.Status))
		}
		if p.Limit != 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
		if p.Cursor != "" {
			q.Set("cursor", p.Cursor)
		}
	}
	out := new(CampaignPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/campaigns", query: q}, out, opts)
	return result(out, err)
}

// Campaigns iterates over the caller's app's campaigns, newest first, from
// params.Cursor on (nil params: every campaign), fetching page after page of
// params.Limit. An error ends the iteration, yielded with a zero campaign:
//
//	for cmp, err := range c.Campaigns(ctx, &xpromo.CampaignListParams{Status: xpromo.CampaignStatusActive}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(cmp.CampaignID, cmp.SpentTodayCents, cmp.DailyBudgetCents)
//	}
func (c *Client) Campaigns(ctx context.Context, params *CampaignListParams, opts ...CallOption) iter.Seq2[Campaign, error] {
	var p CampaignListParams
	if params != nil {
		p = *params
	}
	return paginate(p.Cursor, "campaigns", func(cursor string) ([]Campaign, string, bool, error) {
		p := p
		p.Cursor = cursor
		page, err := c.ListCampaigns(ctx, &p, opts...)
		if err != nil {
			return nil, "", false, err
		}
		next := ""
		if page.NextCursor != nil {
			next = *page.NextCursor
		}
		return page.Campaigns, next, next != "", nil
	})
}

// UpdateCampaign changes a campaign of the caller's app (PATCH
// /v1/campaigns/{campaign_id}): its daily budget, its maximum bid (or makes
// it a floor buyer, with params.FloorPrice) and its categories; the fields
// left unset stay. The change reaches delivery at once: the next fills bid
// and are budgeted with it. It returns the campaign.
//
// Refusals: 422 missing_field (nothing to change), below_minimum,
// invalid_amount, bid_below_floor, invalid_category, unknown_category,
// unknown_field; 404 not_found.
func (c *Client) UpdateCampaign(ctx context.Context, campaignID string, params *UpdateCampaignRequest, opts ...CallOption) (*Campaign, error) {
	out := new(Campaign)
	_, err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/campaigns/%s", campaignID), body: nonNil(params)}, out, opts)
	return result(out, err)
}

// GetStats reads the app's delivery and fraud figures over a period (GET
// /v1/apps/{app_id}/stats). params may be nil (the server's DefaultPeriod).
func (c *Client) GetStats(ctx context.Context, appID string, params *StatsParams, opts ...CallOption) (*Stats, error) {
	q := url.Values{}
	if params != nil && params.Period != "" {
		q.Set("period", string(params.Period))
	}
	out := new(Stats)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/stats", appID), query: q}, out, opts)
	return result(out, err)
}
