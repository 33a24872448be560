package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// Campaigns runs the suite of the campaign part of market.Tx (pages of an
// app's campaigns, changes of their settings) on a fresh store from
// newStore: the sqlite and postgres packages call it from their tests.
func Campaigns(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Page", func(t *testing.T) { testCampaignPage(t, newStore(t)) })
	t.Run("Settings", func(t *testing.T) { testCampaignSettings(t, newStore(t)) })
}

func insertCampaign(t *testing.T, s storage.Store, c market.Campaign) {
	t.Helper()
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.InsertCampaign(ctx, c) })
}

// setSpend writes a campaign's row of campaign_spend (which triggers on
// chains keep in production): the day is a date on PostgreSQL and the
// microseconds of its midnight on SQLite.
func setSpend(t *testing.T, s storage.Store, campaignID string, day time.Time, cents int64) {
	t.Helper()
	ex := s.(execer)
	ctx := context.Background()
	if err := ex.Exec(ctx, fmt.Sprintf(`INSERT INTO campaign_spend (campaign_id, day, spent_cents) VALUES ('%s', '%s', %d)`, campaignID, day.Format(time.DateOnly), cents)); err != nil {
		require.NoError(t, ex.Exec(ctx, fmt.Sprintf(`INSERT INTO campaign_spend (campaign_id, day, spent_cents) VALUES ('%s', %d, %d)`, campaignID, day.UnixMicro(), cents)))
	}
}

func page(t *testing.T, s storage.Store, q market.CampaignQuery) []market.Campaign {
	t.Helper()
	var out []market.Campaign
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		out, err = tx.CampaignPage(ctx, q)
		return err
	})
	return out
}

func idsOf(cs []market.Campaign) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testCampaignPage(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whApp(t, s, "app_b")
	bid := int64(700)
	// Newest first by creation time, then id: cmp_3 and cmp_4 were created
	// in the same microsecond.
	for i, c := range []market.Campaign{
		{ID: "cmp_1", Status: xpromo.CampaignStatusThrottled, CreatedAt: whStart},
		{ID: "cmp_2", Status: xpromo.CampaignStatusActive, CreatedAt: whStart.Add(time.Minute), MaxBidCents: &bid},
		{ID: "cmp_3", Status: xpromo.CampaignStatusPaused, Paused: true, CreatedAt: whStart.Add(time.Hour)},
		{ID: "cmp_4", Status: xpromo.CampaignStatusThrottled, CreatedAt: whStart.Add(time.Hour)},
	} {
		c.AppID, c.Categories, c.DailyBudgetCents, c.UpdatedAt = "app_a", []string{"productivity", "utilities"}, int64(1000*(i+1)), c.CreatedAt
		insertCampaign(t, s, c)
	}
	insertCampaign(t, s, market.Campaign{ID: "cmp_0", AppID: "app_b", Categories: []string{"games"}, DailyBudgetCents: 1000,
		Status: xpromo.CampaignStatusThrottled, CreatedAt: whStart.Add(2 * time.Hour), UpdatedAt: whStart.Add(2 * time.Hour)})
	day := market.UTCDay(whStart)
	setSpend(t, s, "cmp_2", day, 1400)
	setSpend(t, s, "cmp_2", day.AddDate(0, 0, -1), 900) // another day's spend is not today's

	all := page(t, s, market.CampaignQuery{AppID: "app_a", Limit: 10, Day: day})
	assert.Equal(t, []string{"cmp_4", "cmp_3", "cmp_2", "cmp_1"}, idsOf(all), "newest first, only the app's")
	two := all[2]
	assert.Equal(t, market.Campaign{ID: "cmp_2", AppID: "app_a", Categories: []string{"productivity", "utilities"}, DailyBudgetCents: 2000,
		MaxBidCents: &bid, Status: xpromo.CampaignStatusActive, CreatedAt: whStart.Add(time.Minute), UpdatedAt: whStart.Add(time.Minute),
		SpentTodayCents: 1400}, two)
	assert.Zero(t, all[0].SpentTodayCents, "no row is no spend")

	// Paging: strictly after the position, ties broken by id.
	first := page(t, s, market.CampaignQuery{AppID: "app_a", Limit: 1, Day: day})
	require.Equal(t, []string{"cmp_4"}, idsOf(first))
	after := &market.CampaignPosition{CreatedAt: first[0].CreatedAt, ID: first[0].ID}
	assert.Equal(t, []string{"cmp_3", "cmp_2"}, idsOf(page(t, s, market.CampaignQuery{AppID: "app_a", Limit: 2, After: after, Day: day})))
	after = &market.CampaignPosition{CreatedAt: whStart, ID: "cmp_1"}
	assert.Empty(t, page(t, s, market.CampaignQuery{AppID: "app_a", Limit: 2, After: after, Day: day}))

	// The status filter, with and without a position.
	assert.Equal(t, []string{"cmp_4", "cmp_1"}, idsOf(page(t, s, market.CampaignQuery{AppID: "app_a", Status: xpromo.CampaignStatusThrottled, Limit: 10, Day: day})))
	after = &market.CampaignPosition{CreatedAt: whStart.Add(time.Hour), ID: "cmp_4"}
	assert.Equal(t, []string{"cmp_1"}, idsOf(page(t, s, market.CampaignQuery{AppID: "app_a", Status: xpromo.CampaignStatusThrottled, Limit: 10, After: after, Day: day})))
	assert.Equal(t, []string{"cmp_3"}, idsOf(page(t, s, market.CampaignQuery{AppID: "app_a", Status: xpromo.CampaignStatusPaused, Limit: 10, Day: day})))
	assert.Empty(t, page(t, s, market.CampaignQuery{AppID: "app_c", Limit: 10, Day: day}))
}

func testCampaignSettings(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	bid := int64(700)
	c := market.Campaign{ID: "cmp_1", AppID: "app_a", Categories: []string{"productivity"}, DailyBudgetCents: 5000, MaxBidCents: &bid,
		Paused: true, Status: xpromo.CampaignStatusPaused, CreatedAt: whStart, UpdatedAt: whStart}
	insertCampaign(t, s, c)

	// A change writes the settings and the status, never the paused flag
	// (pause and resume own it).
	c.Categories, c.DailyBudgetCents, c.MaxBidCents, c.UpdatedAt = []string{"finance", "games"}, 2500, nil, whStart.Add(time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		locked, found, err := tx.LockCampaign(ctx, "cmp_1")
		require.True(t, found)
		assert.Equal(t, int64(5000), locked.DailyBudgetCents)
		if err != nil {
			return err
		}
		return tx.SetCampaignSettings(ctx, c)
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error { // FOR UPDATE needs a writing transaction
		got, _, err := tx.CampaignByID(ctx, "cmp_1")
		assert.Equal(t, c, got)
		// Install claims read the budget from the same row: they check the
		// new one from the change's commit on.
		budget, found, err2 := tx.CampaignForUpdate(ctx, "cmp_1")
		assert.True(t, found)
		assert.Equal(t, int64(2500), budget.DailyBudgetCents)
		_, found, err3 := tx.LockCampaign(ctx, "cmp_none")
		assert.False(t, found)
		return errjoin(err, err2, err3)
	})
	// The table's rules still hold: a budget under the minimum is refused.
	c.DailyBudgetCents = 999
	assert.Error(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.SetCampaignSettings(ctx, c) }))
}
