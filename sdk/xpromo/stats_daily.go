package xpromo

import (
	"context"
	"net/http"
	"net/url"
)

// MaxDailyStatsDays is the longest range GET /v1/stats/daily answers: a
// longer one is 422 date_range_too_long.
const MaxDailyStatsDays = 366

// DailyStatsPage is the answer of GET /v1/stats/daily: one entry per UTC day
// from From through To, both included, oldest first, days without activity
// included (all zero).
type DailyStatsPage struct {
	From string `json:"from"` // YYYY-MM-DD, UTC
	To   string `json:"to"`
	// CampaignID is the campaign the figures are limited to; nil for all
	// of the app's (and, on the publisher side, every campaign it served).
	CampaignID *string    `json:"campaign_id"`
	Days       []DayStats `json:"days"`
}

// DayStats are one UTC day's figures of the app on both sides of the
// network (docs/stats.md names each figure's facts and which time picks the
// day).
type DayStats struct {
	Day        string             `json:"day"` // YYYY-MM-DD, UTC
	Advertiser AdvertiserDayStats `json:"advertiser"`
	Publisher  PublisherDayStats  `json:"publisher"`
}

// AdvertiserDayStats are a day's figures of the app's campaigns, as /stats
// names them: impressions (fills of its creatives), clicks, installs
// accepted, activations (activated_48h), installs cleared and refunded,
// chains rejected, and spend_cents (what cleared installs were charged).
type AdvertiserDayStats struct {
	Impressions int64 `json:"impressions"`
	Clicks      int64 `json:"clicks"`
	Installs    int64 `json:"installs"`
	Activated   int64 `json:"activated"`
	Cleared     int64 `json:"cleared"`
	Refunded    int64 `json:"refunded"`
	Rejected    int64 `json:"rejected"`
	SpendCents  int64 `json:"spend_cents"`
}

// PublisherDayStats are a day's figures of the app as a publisher: the
// creatives it served (impressions), their clicks, installs and cleared
// installs, and earned_cents (its earn lines less clawbacks).
type PublisherDayStats struct {
	Impressions int64 `json:"impressions"`
	Clicks      int64 `json:"clicks"`
	Installs    int64 `json:"installs"`
	Cleared     int64 `json:"cleared"`
	EarnedCents int64 `json:"earned_cents"`
}

// DailyStatsParams are the parameters of GetDailyStats. From and To are
// UTC days (YYYY-MM-DD); "" lets the server choose (to: today, from: 29
// days before to). CampaignID limits the figures to one of the app's
// campaigns.
type DailyStatsParams struct {
	From, To   string
	CampaignID string
}

// GetDailyStats reads the calling app's figures per UTC day (GET
// /v1/stats/daily). params may be nil. Errors: 422 invalid_date,
// invalid_date_range, date_range_too_long; 404 not_found (a campaign that
// is not the app's).
func (c *Client) GetDailyStats(ctx context.Context, params *DailyStatsParams, opts ...CallOption) (*DailyStatsPage, error) {
	q := url.Values{}
	if params != nil {
		for k, v := range map[string]string{"from": params.From, "to": params.To, "campaign_id": params.CampaignID} {
			if v != "" {
				q.Set(k, v)
			}
		}
	}
	out := new(DailyStatsPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/stats/daily", query: q}, out, opts)
	return result(out, err)
}
