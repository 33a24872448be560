package mcpserver

import (
	"context"
	"math"
	"net/http"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The app's figures per UTC day (docs/stats.md). Same rules as tools.go:
// the tool mirrors its REST operation, schemas as openapi.json has them.

// statsToolNames are the daily stats tools' names (in ToolNames).
var statsToolNames = []string{"get_daily_stats"}

func dailyStatsSchema() schema {
	date := func(desc string) schema {
		return withDesc(schema{"type": "string", "format": "date", "minLength": 10, "maxLength": 10}, desc)
	}
	count := func(desc string) schema { return cents(0, maxInt64, desc) }
	advertiser := allRequired("The day's figures of the app's campaigns.", schema{
		"impressions": count("Fills of the app's campaigns that day."),
		"clicks":      count("Clicks on its offers."),
		"installs":    count("Install claims accepted that day."),
		"activated":   count("Installs that reached activated_48h that day."),
		"cleared":     count("Installs cleared (charged) that day."),
		"refunded":    count("Installs refunded that day."),
		"rejected":    count("Chains and claims rejected that day."),
		"spend_cents": count("What the cleared installs were charged that day."),
	})
	publisher := allRequired("The day's figures of the app as a publisher.", schema{
		"impressions":  count("Creatives the app served that day."),
		"clicks":       count("Clicks on the offers it served."),
		"installs":     count("Install claims accepted for offers it served."),
		"cleared":      count("Those installs cleared that day."),
		"earned_cents": cents(math.MinInt64, maxInt64, "Its earn lines of the day less its clawback lines (may be negative)."),
	})
	day := allRequired("One UTC day.", schema{"day": date("The UTC day."), "advertiser": advertiser, "publisher": publisher})
	return allRequired("The app's figures for each UTC day of the range.", schema{
		"from":        date("First UTC day of the range."),
		"to":          date("Last UTC day of the range, included."),
		"campaign_id": nullableString(64, "The campaign the figures are limited to; null for all."),
		"days":        withDesc(schema{"type": "array", "maxItems": xpromo.MaxDailyStatsDays, "items": day}, "One entry per UTC day, oldest first."),
	})
}

func statsTools() []*tool {
	date := func(desc string) schema {
		return withDesc(schema{"type": "string", "format": "date", "minLength": 10, "maxLength": 10}, desc)
	}
	return []*tool{{
		name:  "get_daily_stats",
		title: "Read the app's figures per day",
		description: "Read the app's figures for each UTC day from `from` through `to` (GET /v1/stats/daily; both included, at most 366 days, one entry per day, quiet days as zeros): " +
			"as an advertiser impressions, clicks, installs, activated, cleared, refunded, rejected and spend_cents; as a publisher impressions served, clicks, installs, cleared and earned_cents. " +
			"campaign_id limits them to one of the app's campaigns. Days are UTC. Errors: invalid_date, invalid_date_range, date_range_too_long; not_found for a campaign that is not the app's." + keyNote,
		params: []param{
			{name: "from", in: inQuery, schema: date("Optional: the first UTC day, YYYY-MM-DD (default: 29 days before to).")},
			{name: "to", in: inQuery, schema: date("Optional: the last UTC day included, YYYY-MM-DD (default: today, UTC).")},
			{name: "campaign_id", in: inQuery, schema: nonEmpty(64, "Optional: one of the app's campaigns.")},
		},
		output: dailyStatsSchema(),
		hints:  read,
		call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
			// The arguments as they are (the API judges them), so an agent's
			// mistake gets the REST caller's code.
			out := new(xpromo.DailyStatsPage)
			err := c.Do(ctx, http.MethodGet, "/v1/stats/daily?"+a.query().Encode(), nil, out, opts...)
			return answer{value: out}, err
		},
	}}
}
