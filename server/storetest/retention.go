package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/retention"
	"github.com/xpromo/xpromo/server/storage"
)

// Retention checks the purge of what is kept only for a while (package
// retention): fill counts of days past 400 days go, in batches of
// retention.Batch rows; the younger ones stay; and nothing a figure reads
// changes: the daily series of the last 366 days and of the purged days
// (from the rollups), the chain stats of the last 90 days, the chains and
// the ledger.
func Retention(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("PurgeFillCounts", func(t *testing.T) { testRetentionFillCounts(t, newStore(t)) })
}

func testRetentionFillCounts(t *testing.T, s storage.Store) {
	ctx := context.Background()
	now := time.Date(2027, 12, 2, 15, 30, 0, 0, time.UTC)
	today := now.Truncate(24 * time.Hour)
	cutoff := retention.FillCountsCutoff(now)
	require.Equal(t, today.AddDate(0, 0, -400), cutoff)
	update := func(fn func(ctx context.Context, tx storage.Tx) error) {
		t.Helper()
		require.NoError(t, s.Update(ctx, fn))
	}
	const adv, pub = "app_adv", "app_pub"

	// Old days: 61 days of 100 campaigns (6,100 rows, more than a batch)
	// before the cutoff, the last one the day just before it; young days:
	// the cutoff's own day, a month ago, today.
	oldRows := 0
	for d := -460; d < -399; d++ {
		day := today.AddDate(0, 0, d)
		var counts []attribution.FillCount
		for c := range 100 {
			if d == -400 { // the cutoff's day is kept
				break
			}
			counts = append(counts, attribution.FillCount{Day: day, CampaignID: fmt.Sprintf("cmp_%03d", c), AdvertiserAppID: adv, PublisherAppID: pub, Count: int64(c + 1)})
		}
		if len(counts) > 0 {
			oldRows += len(counts)
			update(func(ctx context.Context, tx storage.Tx) error { return tx.AddFillCounts(ctx, counts) })
		}
	}
	for _, d := range []int{-400, -30, 0} {
		day := today.AddDate(0, 0, d)
		update(func(ctx context.Context, tx storage.Tx) error {
			return tx.AddFillCounts(ctx, []attribution.FillCount{
				{Day: day, CampaignID: "cmp_000", AdvertiserAppID: adv, PublisherAppID: pub, Count: 7},
				{Day: day, CampaignID: "cmp_001", AdvertiserAppID: adv, PublisherAppID: pub, Count: 5},
			})
		})
	}
	// A chain and money of an old day, which are kept forever.
	old := today.AddDate(0, 0, -450)
	update(func(ctx context.Context, tx storage.Tx) error {
		c := attribution.Chain{ID: "chn_old", Nonce: "jti_old", State: attribution.StateClicked, CampaignID: "cmp_000",
			AdvertiserAppID: adv, PublisherAppID: pub, Category: "cat_tools", Platform: xpromo.PlatformMac, PriceCents: 300,
			OfferedAt: old, ClickedAt: old, CreatedAt: old, UpdatedAt: old}
		if ok, err := tx.InsertChain(ctx, c); err != nil || !ok {
			return fmt.Errorf("chain not inserted: %v", err)
		}
		_, errs, err := ledger.Apply(ctx, tx, old, []ledger.Operation{must(ledger.TopUp("topup:old", adv, 10_000, ""))})
		if err == nil && errs[0] != nil {
			err = errs[0]
		}
		return err
	})

	type figures struct {
		year, purgedDays []attribution.DailyRow
		recent, oldStats attribution.ChainStats
		impressions      [2]int64 // fill_counts read raw: a purged day, a kept one
	}
	read := func() figures {
		var f figures
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			if f.year, err = tx.DailyStats(ctx, adv, "", today.AddDate(0, 0, -365), now); err != nil {
				return err
			}
			if f.purgedDays, err = tx.DailyStats(ctx, adv, "", today.AddDate(0, 0, -460), cutoff.Add(-time.Microsecond)); err != nil {
				return err
			}
			if f.recent, err = tx.ChainStatsDays(ctx, adv, today.AddDate(0, 0, -90), today.Add(-time.Microsecond)); err != nil {
				return err
			}
			if f.oldStats, err = tx.ChainStatsDays(ctx, adv, today.AddDate(0, 0, -460), cutoff.Add(-time.Microsecond)); err != nil {
				return err
			}
			purged, err := tx.AppChainStats(ctx, adv, cutoff.AddDate(0, 0, -1), cutoff.Add(-time.Microsecond))
			if err != nil {
				return err
			}
			kept, err := tx.AppChainStats(ctx, adv, cutoff, cutoff.AddDate(0, 0, 1).Add(-time.Microsecond))
			f.impressions = [2]int64{purged.Impressions, kept.Impressions}
			return err
		}))
		return f
	}
	before := read()
	require.Equal(t, [2]int64{5050, 12}, before.impressions, "the raw fill counts of the day before the cutoff and of the cutoff's day")
	lines := len(must(s.Lines(ctx, ledger.Wallet(adv), ledger.LineQuery{})))

	svc := &retention.Service{Update: storage.Updater[retention.Tx](s), Now: func() time.Time { return now }}
	rep, err := svc.Purge(ctx)
	require.NoError(t, err)
	require.Equal(t, oldRows, rep.FillCounts, "every row of a day before the cutoff, in batches")
	rep, err = svc.Purge(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.FillCounts, "a second purge finds nothing")

	after := read()
	require.Equal(t, [2]int64{0, 12}, after.impressions, "the purged day's raw counts are gone, the cutoff's day's stay")
	after.impressions = before.impressions
	require.Equal(t, before, after, "the figures (the daily rollups, the chain stats) are unchanged by the purge")
	require.Len(t, must(s.Lines(ctx, ledger.Wallet(adv), ledger.LineQuery{})), lines)
	require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, found, err := tx.ChainByID(ctx, "chn_old")
		require.True(t, found, "chains are kept")
		return err
	}))
	verifyOK(t, s)
}
