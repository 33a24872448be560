package market_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

func ptr[T any](v T) *T { return &v }

func code(err error) string { return apperr.Code(err) }

// An advertiser reads its campaigns back: one by id, or all of them newest
// first, a page at a time, optionally by status; never another app's.
func TestCampaignsReadAndList(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		adv := w.app("mac", "", "live", 100_000)
		other := w.app("mac", "", "live", 100_000)
		var made []string
		for i := range 3 {
			made = append(made, w.campaign(adv, 5000+int64(i), 0, "alpha", "beta"))
			w.clk.Advance(time.Minute)
		}
		foreign := w.campaign(other, 5000, 0, "alpha")
		_, err := w.mkt.PauseCampaign(w.ctx, adv, made[1])
		require.NoError(t, err)

		got, err := w.mkt.GetCampaign(w.ctx, adv, made[0])
		require.NoError(t, err)
		assert.Equal(t, adv, got.AppID)
		assert.Equal(t, []string{"alpha", "beta"}, got.Categories)
		assert.Equal(t, int64(5000), got.DailyBudgetCents)
		assert.Equal(t, int64(500), got.FloorCents, "beta's mac floor")
		assert.Equal(t, start, got.CreatedAt)
		// Recorded throttled at creation; the rule now says active (live
		// and funded): the reason says it is about to be.
		assert.Equal(t, xpromo.CampaignStatusThrottled, got.Status)
		assert.Equal(t, market.ReasonActivating, got.StatusReason)

		_, err = w.mkt.GetCampaign(w.ctx, adv, foreign)
		assert.Equal(t, apperr.NotFound, code(err), "another app's campaign is not found")
		_, err = w.mkt.GetCampaign(w.ctx, adv, "cmp_missing")
		assert.Equal(t, apperr.NotFound, code(err))

		q, err := market.ParseCampaignQuery(adv, url.Values{"limit": {"2"}})
		require.NoError(t, err)
		p1, err := w.mkt.ListCampaigns(w.ctx, q)
		require.NoError(t, err)
		require.Len(t, p1.Campaigns, 2)
		assert.Equal(t, []string{made[2], made[1]}, []string{p1.Campaigns[0].ID, p1.Campaigns[1].ID}, "newest first")
		assert.Equal(t, int64(500), p1.Campaigns[0].FloorCents)
		require.NotEmpty(t, p1.Next)
		q, err = market.ParseCampaignQuery(adv, url.Values{"limit": {"2"}, "cursor": {p1.Next}})
		require.NoError(t, err)
		p2, err := w.mkt.ListCampaigns(w.ctx, q)
		require.NoError(t, err)
		require.Len(t, p2.Campaigns, 1)
		assert.Equal(t, made[0], p2.Campaigns[0].ID)
		assert.Empty(t, p2.Next, "the last page")

		q, err = market.ParseCampaignQuery(adv, url.Values{"status": {"paused"}})
		require.NoError(t, err)
		paused, err := w.mkt.ListCampaigns(w.ctx, q)
		require.NoError(t, err)
		require.Len(t, paused.Campaigns, 1)
		assert.Equal(t, made[1], paused.Campaigns[0].ID)
		assert.Empty(t, paused.Campaigns[0].StatusReason)

		for v, want := range map[string]string{
			"status=running": apperr.InvalidCampaignStatus, "status=": apperr.InvalidCampaignStatus,
			"limit=0": apperr.InvalidLimit, "limit=1001": apperr.InvalidLimit, "limit=x": apperr.InvalidLimit,
			"cursor=": apperr.InvalidCursor, "cursor=%25%25": apperr.InvalidCursor, "cursor=bm9kb3Q": apperr.InvalidCursor,
		} {
			vals, err := url.ParseQuery(v)
			require.NoError(t, err)
			_, err = market.ParseCampaignQuery(adv, vals)
			assert.Equal(t, want, code(err), v)
		}
	})
}

// A change obeys the rules of creation and re-evaluates the status; a
// change to nothing new writes nothing.
func TestCampaignUpdateRules(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		adv := w.app("mac", "", "live", 100_000)
		c := w.campaign(adv, 5000, 400, "alpha") // alpha mac floor 300
		update := func(req market.UpdateCampaignRequest) (market.Campaign, error) {
			return w.mkt.UpdateCampaign(w.ctx, adv, c, req)
		}
		refusals := []struct {
			req  market.UpdateCampaignRequest
			code string
		}{
			{market.UpdateCampaignRequest{}, apperr.MissingField},
			{market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](999)}, apperr.BelowMinimum},
			{market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](market.MaxAmountCents + 1)}, apperr.InvalidAmount},
			{market.UpdateCampaignRequest{SetMaxBid: true, MaxBidCents: ptr[int64](market.MaxAmountCents + 1)}, apperr.InvalidAmount},
			{market.UpdateCampaignRequest{SetMaxBid: true, MaxBidCents: ptr[int64](299)}, apperr.BidBelowFloor},
			{market.UpdateCampaignRequest{Categories: &[]string{}}, apperr.InvalidCategory},
			{market.UpdateCampaignRequest{Categories: &[]string{"alpha", "alpha"}}, apperr.InvalidCategory},
			{market.UpdateCampaignRequest{Categories: &[]string{"knitting"}}, apperr.UnknownCategory},
			// beta's floor (500) is above the kept bid of 400.
			{market.UpdateCampaignRequest{Categories: &[]string{"beta"}}, apperr.BidBelowFloor},
		}
		for _, r := range refusals {
			_, err := update(r.req)
			assert.Equal(t, r.code, code(err), "%+v", r.req)
		}
		before := w.stored(c)
		assert.Equal(t, int64(400), *before.MaxBidCents, "a refused change changes nothing")
		_, err := w.mkt.UpdateCampaign(w.ctx, w.app("mac", "", "live", 0), c, market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](2000)})
		assert.Equal(t, apperr.NotFound, code(err), "another app's campaign")

		// Categories and a bid above their floor, in one change; the
		// status is recorded as the rule gives it (live and funded).
		w.clk.Advance(time.Minute + 1234567*time.Nanosecond) // the answer's times are the stored ones (microseconds)
		got, err := update(market.UpdateCampaignRequest{Categories: &[]string{"beta"}, SetMaxBid: true, MaxBidCents: ptr[int64](650), DailyBudgetCents: ptr[int64](3000)})
		require.NoError(t, err)
		assert.Equal(t, []string{"beta"}, got.Categories)
		assert.Equal(t, int64(500), got.FloorCents)
		assert.Equal(t, int64(650), *got.MaxBidCents)
		assert.Equal(t, int64(3000), got.DailyBudgetCents)
		assert.Equal(t, xpromo.CampaignStatusActive, got.Status)
		assert.Equal(t, w.clk.Now().UTC().Truncate(time.Microsecond), got.UpdatedAt)
		stored := w.stored(c)
		assert.True(t, got.UpdatedAt.Equal(stored.UpdatedAt), "answered %v, stored %v", got.UpdatedAt, stored.UpdatedAt)
		assert.Equal(t, got.Categories, stored.Categories)
		assert.Equal(t, xpromo.CampaignStatusActive, stored.Status)

		// null: a floor buyer.
		got, err = update(market.UpdateCampaignRequest{SetMaxBid: true})
		require.NoError(t, err)
		assert.Nil(t, got.MaxBidCents)
		assert.Nil(t, w.stored(c).MaxBidCents)

		// The same values again: nothing is written.
		w.clk.Advance(time.Minute)
		again, err := update(market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](3000), SetMaxBid: true})
		require.NoError(t, err)
		assert.Equal(t, got.UpdatedAt, again.UpdatedAt)

		// A paused campaign stays paused.
		_, err = w.mkt.PauseCampaign(w.ctx, adv, c)
		require.NoError(t, err)
		got, err = update(market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](4000)})
		require.NoError(t, err)
		assert.Equal(t, xpromo.CampaignStatusPaused, got.Status)
		assert.True(t, w.stored(c).Paused)
	})
}

// A change reaches delivery as a pause does: the next fills bid and budget
// with it.
func TestCampaignUpdateReachesDelivery(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s)
		pub := w.app("mac", "alpha", "approved", 0)
		a := w.campaign(w.app("mac", "", "live", 100_000), 100_000, 600, "alpha")
		advB := w.app("mac", "", "live", 100_000)
		b := w.campaign(advB, 100_000, 500, "alpha")

		auctioned := func() (winners map[string]int, prices map[int64]int) {
			winners, prices = map[string]int{}, map[int64]int{}
			for range 10 {
				award, ok := w.fill(pub, "alpha", "mac")
				require.True(t, ok)
				if !award.Reserved {
					winners[award.CampaignID]++
					prices[award.PriceCents]++
				}
			}
			return winners, prices
		}
		winners, prices := auctioned()
		assert.Equal(t, map[string]int{a: 7}, winners)
		assert.Equal(t, map[int64]int{501: 7}, prices)

		// B raises its bid: it wins the next auctions, one cent above A.
		_, err := w.mkt.UpdateCampaign(w.ctx, advB, b, market.UpdateCampaignRequest{SetMaxBid: true, MaxBidCents: ptr[int64](900)})
		require.NoError(t, err)
		winners, prices = auctioned()
		assert.Equal(t, map[string]int{b: 7}, winners)
		assert.Equal(t, map[int64]int{601: 7}, prices)

		// B becomes a floor buyer: A wins again, at B's floor + 1.
		_, err = w.mkt.UpdateCampaign(w.ctx, advB, b, market.UpdateCampaignRequest{SetMaxBid: true})
		require.NoError(t, err)
		winners, prices = auctioned()
		assert.Equal(t, map[string]int{a: 7}, winners)
		assert.Equal(t, map[int64]int{301: 7}, prices)

		// Budgets: B alone in beta, 800 spent of 1000 today.
		w.mkt.Invalidate()
		c := w.campaign(advB, 1000, 0, "beta")
		w.setSpend(c, 800)
		w.mkt.Invalidate()
		_, ok := w.fill(pub, "beta", "mac")
		assert.False(t, ok, "200 left, under beta's floor of 500")
		got, err := w.mkt.UpdateCampaign(w.ctx, advB, c, market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](1300)})
		require.NoError(t, err)
		award, ok := w.fill(pub, "beta", "mac")
		require.True(t, ok, "a raised budget is used by the next fill")
		assert.Equal(t, c, award.CampaignID)
		require.NoError(t, market.CheckBudget(got.DailyBudgetCents, 800, award.PriceCents), "and by the claim's check")

		// Lowered below today's spend: nothing more today; the spend stands.
		_, err = w.mkt.UpdateCampaign(w.ctx, advB, c, market.UpdateCampaignRequest{DailyBudgetCents: ptr[int64](1000)})
		require.NoError(t, err)
		w.setSpend(c, 1300)
		w.mkt.Invalidate()
		_, ok = w.fill(pub, "beta", "mac")
		assert.False(t, ok)
		assert.Equal(t, apperr.BudgetExhausted, code(market.CheckBudget(1000, 1300, 500)))
		spent, _ := market.MemorySpent(w.mkt, c)
		assert.Equal(t, int64(1300), spent)
	})
}
