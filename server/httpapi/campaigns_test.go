package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// GET /v1/campaigns and GET /v1/campaigns/{campaign_id}: the key's own
// campaigns only, another app's exactly like a missing one.
func TestMarketCampaignReads(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		a := e.register(snip())
		b := e.register(appRequest("Paint", xpromo.PlatformWin))
		var ids []string
		for i := range 3 {
			c := e.createCampaign(a, fmt.Sprintf(`{"app_id":%q,"categories":["finance"],"daily_budget_cents":%d}`, a.AppID, 2000+i))
			ids = append(ids, c.CampaignID)
			e.clock.Advance(1e9)
		}
		theirs := e.createCampaign(b, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000}`, b.AppID))

		res := e.do("GET", "/v1/campaigns/"+ids[0], a.APIKey, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, fmt.Sprintf(`{"campaign_id":%q,"daily_budget_cents":2000,"status":"throttled","status_reason":"app_pending","floor_cents":600,"max_bid_cents":null,`+
			`"app_id":%q,"categories":["finance"],"spent_today_cents":0,"created_at":"2026-11-21T12:00:00Z","updated_at":"2026-11-21T12:00:00Z"}`, ids[0], a.AppID), res.body)
		other := e.do("GET", "/v1/campaigns/"+theirs.CampaignID, a.APIKey, nil)
		missing := e.do("GET", "/v1/campaigns/cmp_missing", a.APIKey, nil)
		assert.Equal(t, http.StatusNotFound, other.status)
		assert.Equal(t, missing.body, other.body, "byte-identical: the id is not echoed")
		assert.Equal(t, http.StatusUnauthorized, e.do("GET", "/v1/campaigns/"+ids[0], "", nil).status)

		// Newest first, two a page.
		var page xpromo.CampaignPage
		e.do("GET", "/v1/campaigns?limit=2", a.APIKey, nil).decode(t, &page)
		require.Len(t, page.Campaigns, 2)
		assert.Equal(t, []string{ids[2], ids[1]}, []string{page.Campaigns[0].CampaignID, page.Campaigns[1].CampaignID})
		require.NotNil(t, page.NextCursor)
		var last xpromo.CampaignPage
		e.do("GET", "/v1/campaigns?limit=2&cursor="+*page.NextCursor, a.APIKey, nil).decode(t, &last)
		require.Len(t, last.Campaigns, 1)
		assert.Equal(t, ids[0], last.Campaigns[0].CampaignID)
		assert.Nil(t, last.NextCursor)

		require.Equal(t, http.StatusOK, e.do("POST", "/v1/campaigns/"+ids[1]+"/pause", a.APIKey, nil).status)
		var paused xpromo.CampaignPage
		e.do("GET", "/v1/campaigns?status=paused", a.APIKey, nil).decode(t, &paused)
		require.Len(t, paused.Campaigns, 1)
		assert.Equal(t, ids[1], paused.Campaigns[0].CampaignID)
		assert.Equal(t, `{"campaigns":[]}`, e.do("GET", "/v1/campaigns?status=active", a.APIKey, nil).body)

		for q, code := range map[string]string{
			"status=running": "invalid_campaign_status", "limit=0": "invalid_limit", "cursor=zz": "invalid_cursor", "app_id=x": "unknown_parameter",
		} {
			res := e.do("GET", "/v1/campaigns?"+q, a.APIKey, nil)
			assert.Equal(t, code, res.code(t), q)
		}
	})
}

// PATCH /v1/campaigns/{campaign_id}: a strict body whose fields may each be
// left out; null sets a floor buyer and is refused elsewhere.
func TestMarketCampaignUpdate(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		a := e.register(snip())
		b := e.register(appRequest("Paint", xpromo.PlatformWin))
		c := e.createCampaign(a, fmt.Sprintf(`{"app_id":%q,"categories":["productivity"],"daily_budget_cents":2000,"max_bid_cents":450}`, a.AppID))
		path := "/v1/campaigns/" + c.CampaignID
		for _, x := range []struct {
			name, body string
			status     int
			code       string
		}{
			{"nothing", `{}`, 422, "missing_field"},
			{"no body", ``, 400, "malformed_json"},
			{"unknown field", `{"status":"active"}`, 422, "unknown_field"},
			{"app_id is not changeable", `{"app_id":"app_x"}`, 422, "unknown_field"},
			{"null budget", `{"daily_budget_cents":null}`, 422, "invalid_type"},
			{"budget as a string", `{"daily_budget_cents":"3000"}`, 422, "invalid_type"},
			{"budget under 1000", `{"daily_budget_cents":999}`, 422, "below_minimum"},
			{"huge budget", `{"daily_budget_cents":100000000000}`, 422, "invalid_amount"},
			{"bid under the floor", `{"max_bid_cents":399}`, 422, "bid_below_floor"},
			{"fractional bid", `{"max_bid_cents":500.5}`, 422, "invalid_type"},
			{"null categories", `{"categories":null}`, 422, "invalid_type"},
			{"no category", `{"categories":[]}`, 422, "invalid_category"},
			{"unknown category", `{"categories":["gardening"]}`, 422, "unknown_category"},
			{"kept bid under the new floor", `{"categories":["finance"]}`, 422, "bid_below_floor"},
			{"twice", `{"max_bid_cents":500,"max_bid_cents":600}`, 400, "duplicate_field"},
		} {
			res := e.do("PATCH", path, a.APIKey, x.body)
			assert.Equal(t, x.status, res.status, "%s: %s", x.name, res.body)
			assert.Equal(t, x.code, res.code(t), x.name)
		}
		other := e.do("PATCH", path, b.APIKey, `{"daily_budget_cents":3000}`)
		missing := e.do("PATCH", "/v1/campaigns/cmp_missing", b.APIKey, `{"daily_budget_cents":3000}`)
		assert.Equal(t, http.StatusNotFound, other.status)
		assert.Equal(t, missing.body, other.body)

		var got xpromo.Campaign
		res := e.do("PATCH", path, a.APIKey, `{"categories":["finance"],"max_bid_cents":650,"daily_budget_cents":3000}`)
		require.Equal(t, http.StatusOK, res.status, res.body)
		res.decode(t, &got)
		assert.Equal(t, []string{"finance"}, got.Categories)
		assert.Equal(t, int64(600), got.FloorCents)
		assert.Equal(t, int64(650), *got.MaxBidCents)
		assert.Equal(t, int64(3000), got.DailyBudgetCents)

		// null: a floor buyer. Idempotency-Key is not read on PATCH: the
		// request runs each time, and sets the same values.
		for range 2 {
			res = e.do("PATCH", path, a.APIKey, `{"max_bid_cents":null}`, "Idempotency-Key: k1")
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.False(t, res.replayed())
			assert.Contains(t, res.body, `"max_bid_cents":null`)
		}
		res = e.do("PATCH", path, a.APIKey, `{"daily_budget_cents":4000}`, "Idempotency-Key: k1")
		require.Equal(t, http.StatusOK, res.status, "not idempotency_key_reused: %s", res.body)
		e.do("GET", path, a.APIKey, nil).decode(t, &got)
		assert.Nil(t, got.MaxBidCents)
		assert.Equal(t, int64(4000), got.DailyBudgetCents)
	})
}
