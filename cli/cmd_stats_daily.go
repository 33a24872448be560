package cli

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// dailyStatsCommand is `xpromo stats daily`: the app's figures per UTC day
// on both sides (GET /v1/stats/daily, docs/stats.md).
func (r *runner) dailyStatsCommand() *cobra.Command {
	var p xpromo.DailyStatsParams
	cmd := &cobra.Command{
		Use:   "daily [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--campaign cmp_…]",
		Short: "the app's figures per UTC day, as advertiser and as publisher (GET /v1/stats/daily)",
		Long: `One row per UTC day from --from through --to (both included; at most 366 days;
default: the 30 days ending today, UTC), quiet days as zeros. The advertiser's
columns: impressions, clicks, installs, activated, cleared, refunded, rejected,
spend; the publisher's (pub.*): impressions served, clicks, installs, cleared,
earned (earn lines less clawbacks). --campaign limits both to one of the app's
campaigns. --json prints the API's answer.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			page, err := c.GetDailyStats(cmd.Context(), &p)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			n := func(v int64) string { return strconv.FormatInt(v, 10) }
			t := newTable(r.env.Stdout)
			t.row("day", "impressions", "clicks", "installs", "activated", "cleared", "refunded", "rejected", "spend",
				"pub.impressions", "pub.clicks", "pub.installs", "pub.cleared", "pub.earned")
			for _, d := range page.Days {
				a, pb := d.Advertiser, d.Publisher
				t.row(d.Day, n(a.Impressions), n(a.Clicks), n(a.Installs), n(a.Activated), n(a.Cleared), n(a.Refunded), n(a.Rejected), eur(a.SpendCents),
					n(pb.Impressions), n(pb.Clicks), n(pb.Installs), n(pb.Cleared), eur(pb.EarnedCents))
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&p.From, "from", "", "first UTC day, YYYY-MM-DD (default: 29 days before --to)")
	cmd.Flags().StringVar(&p.To, "to", "", "last UTC day included, YYYY-MM-DD (default: today, UTC)")
	cmd.Flags().StringVar(&p.CampaignID, "campaign", "", "only this campaign of the app")
	return cmd
}
