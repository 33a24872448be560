package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) rateCardCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rate-card",
		Short: "categories and floors, take rate, credit bonus (GET /v1/rate-card)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.publicClient()
			if err != nil {
				return err
			}
			card, err := c.GetRateCard(cmd.Context())
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			if err := kv(r.env.Stdout,
				[2]string{"currency", card.Currency},
				[2]string{"take_rate", percent(card.TakeRate)},
				[2]string{"credit_bonus", "x" + strconv.FormatFloat(card.CreditBonus, 'f', -1, 64)},
				[2]string{"reserved_floor_share", percent(card.ReservedFloorShare)},
				[2]string{"pricing_model", card.PricingModel},
			); err != nil {
				return err
			}
			fmt.Fprintln(r.env.Stdout)
			t := newTable(r.env.Stdout)
			t.row("KEY", "LABEL", "FLOOR_MIN", "FLOOR_MAX")
			for _, k := range card.Categories {
				t.row(k.Key, k.Label, eur(k.FloorCentsMin), eur(k.FloorCentsMax))
			}
			return t.flush()
		},
	}
}

func (r *runner) networkStatsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "network-stats",
		Short: "network-wide clearing rate, fraud share and cost per install (GET /v1/network-stats)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.publicClient()
			if err != nil {
				return err
			}
			ns, err := c.GetNetworkStats(cmd.Context())
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			if err := kv(r.env.Stdout,
				[2]string{"period", ns.Period},
				[2]string{"clearing_rate", percent(ns.ClearingRate)},
				[2]string{"fraud_pct", percent(ns.FraudPct)},
			); err != nil {
				return err
			}
			fmt.Fprintln(r.env.Stdout)
			t := newTable(r.env.Stdout)
			t.row("CATEGORY", "AVG_CPI")
			for _, k := range sortedKeys(ns.AvgCPIByCategory) {
				t.row(k, eur(ns.AvgCPIByCategory[k]))
			}
			return t.flush()
		},
	}
}

func (r *runner) guideCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "guide",
		Short: "the SDK integration guide, as markdown (GET /v1/integration-guide)",
		Long: `Prints the SDK quickstart as markdown. The endpoint answers markdown, not JSON:
with --json it is printed as one JSON string.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.publicClient()
			if err != nil {
				return err
			}
			md, err := c.GetIntegrationGuide(cmd.Context())
			if err != nil {
				return err
			}
			if r.g.json {
				return writeJSON(r.env.Stdout, md)
			}
			_, err = io.WriteString(r.env.Stdout, md)
			if err == nil && !strings.HasSuffix(md, "\n") {
				_, err = io.WriteString(r.env.Stdout, "\n")
			}
			return err
		},
	}
}

func (r *runner) campaignsCommand() *cobra.Command {
	return group("campaigns", "create, list, show, change, pause and resume campaigns buying cleared installs",
		r.campaignsCreateCommand(),
		r.campaignsListCommand(),
		r.campaignActionCommand("show", "a campaign: settings, status, today's spend (GET /v1/campaigns/{campaign_id})", (*xpromo.Client).GetCampaign),
		r.campaignsUpdateCommand(),
		r.campaignActionCommand("pause", "pause a campaign (POST /v1/campaigns/{campaign_id}/pause)", (*xpromo.Client).PauseCampaign),
		r.campaignActionCommand("resume", "resume a paused campaign (POST /v1/campaigns/{campaign_id}/resume)", (*xpromo.Client).ResumeCampaign),
	)
}

func (r *runner) campaignsListCommand() *cobra.Command {
	var p xpromo.CampaignListParams
	var status string
	cmd := &cobra.Command{
		Use:   "list [--status throttled|active|paused]",
		Short: "the app's campaigns, newest first, every page (GET /v1/campaigns)",
		Long: `Lists the campaigns of the API key's app, newest first, following the API's
pages. --json prints one {"campaigns": [...]} document, the campaigns as the API
sends them.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			p.Status = xpromo.CampaignStatus(status)
			var all []xpromo.Campaign
			for cmp, err := range c.Campaigns(cmd.Context(), &p) {
				if err != nil {
					return err
				}
				all = append(all, cmp)
			}
			if r.g.json {
				raw, err := json.Marshal(xpromo.CampaignPage{Campaigns: all}) // the wire type the server encodes
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(r.env.Stdout, "%s\n", raw)
				return err
			}
			if len(all) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no campaigns")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("CAMPAIGN_ID", "STATUS", "CATEGORIES", "DAILY_BUDGET", "SPENT_TODAY", "FLOOR", "MAX_BID")
			for _, cmp := range all {
				t.row(cmp.CampaignID, string(cmp.Status), strings.Join(cmp.Categories, ","), eur(cmp.DailyBudgetCents),
					eur(cmp.SpentTodayCents), eur(cmp.FloorCents), eurPtr(cmp.MaxBidCents, "floor"))
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only campaigns in this status: throttled, active or paused")
	f.IntVar(&p.Limit, "limit", xpromo.MaxCampaignLimit, "campaigns per page requested (the API's limit, 1-1000); every page is read")
	return cmd
}

func (r *runner) campaignsUpdateCommand() *cobra.Command {
	var req xpromo.UpdateCampaignRequest
	var budget, maxBid int64
	cmd := &cobra.Command{
		Use:   "update <campaign_id> [--daily-budget-cents N] [--max-bid-cents N | --floor-price] [--categories a,b]",
		Short: "change a campaign's budget, bid or categories (PATCH /v1/campaigns/{campaign_id})",
		Long: `Changes what is given and keeps the rest. The next fills and install claims use
the change at once; offers already made keep their price. --floor-price makes the
campaign buy at its floor (max_bid null). A daily budget under what the campaign
spent today stops it until the next UTC day; the spend stands.`,
		Args: exactArgs("<campaign_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if fl.Changed("max-bid-cents") && req.FloorPrice {
				return usageErr("--max-bid-cents and --floor-price exclude each other")
			}
			if !fl.Changed("daily-budget-cents") && !fl.Changed("max-bid-cents") && !req.FloorPrice && !fl.Changed("categories") {
				return usageErr("nothing to change: give --daily-budget-cents, --max-bid-cents, --floor-price or --categories")
			}
			if fl.Changed("daily-budget-cents") {
				req.DailyBudgetCents = &budget
			}
			if fl.Changed("max-bid-cents") {
				req.MaxBidCents = &maxBid
			}
			if fl.Changed("categories") && req.Categories == nil {
				req.Categories = []string{} // --categories "": the API says why that is refused
			}
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			cmp, err := c.UpdateCampaign(cmd.Context(), args[0], &req)
			if err != nil {
				return err
			}
			return r.printCampaign(cmp)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&budget, "daily-budget-cents", 0, "new daily budget in cents (at least 1000)")
	f.Int64Var(&maxBid, "max-bid-cents", 0, "new most paid per cleared install, in cents (at or above the floor)")
	f.BoolVar(&req.FloorPrice, "floor-price", false, "buy at the floor: no maximum bid")
	f.StringSliceVar(&req.Categories, "categories", nil, "rate-card category keys that replace the campaign's, comma-separated")
	return cmd
}

func (r *runner) campaignsCreateCommand() *cobra.Command {
	var req xpromo.CreateCampaignRequest
	var maxBid int64
	var idemKey string
	cmd := &cobra.Command{
		Use:   "create --categories a,b --daily-budget-cents N [--max-bid-cents N] [--app-id ID]",
		Short: "create a campaign for the app (POST /v1/campaigns); it starts throttled",
		Long: `Creates a campaign buying cleared installs in the given rate-card categories.
Without --max-bid-cents it buys at the floor; with it, clearing is second price
(one cent above the next-highest competing bid, never more than the maximum).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "categories", "daily-budget-cents"); err != nil {
				return err
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			req.AppID = appID
			if cmd.Flags().Changed("max-bid-cents") {
				req.MaxBidCents = &maxBid
			}
			cmp, err := c.CreateCampaign(cmd.Context(), &req, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			return r.printCampaign(cmp)
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&req.Categories, "categories", nil, "rate-card category keys, comma-separated")
	f.Int64Var(&req.DailyBudgetCents, "daily-budget-cents", 0, "daily budget in cents (at least 1000)")
	f.Int64Var(&maxBid, "max-bid-cents", 0, "most paid per cleared install, in cents (at or above the floor); omit to buy at the floor")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) campaignActionCommand(name, short string, act func(*xpromo.Client, context.Context, string, ...xpromo.CallOption) (*xpromo.Campaign, error)) *cobra.Command {
	return &cobra.Command{
		Use:   name + " <campaign_id>",
		Short: short,
		Args:  exactArgs("<campaign_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			cmp, err := act(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return r.printCampaign(cmp)
		},
	}
}

func (r *runner) printCampaign(cmp *xpromo.Campaign) error {
	if r.g.json {
		return r.writeRaw()
	}
	return kv(r.env.Stdout,
		[2]string{"campaign_id", cmp.CampaignID},
		[2]string{"status", campaignStatus(cmp)},
		[2]string{"categories", strings.Join(cmp.Categories, ",")},
		[2]string{"daily_budget", eur(cmp.DailyBudgetCents)},
		[2]string{"spent_today", eur(cmp.SpentTodayCents)},
		[2]string{"floor", eur(cmp.FloorCents)},
		[2]string{"max_bid", eurPtr(cmp.MaxBidCents, "- (buys at the floor)")},
	)
}

// campaignStatus is the status with what it means when it is not plain.
func campaignStatus(cmp *xpromo.Campaign) string {
	if cmp.StatusReason == nil {
		return string(cmp.Status)
	}
	why := map[string]string{
		"app_pending":        "delivers nothing until the app is approved",
		"app_rejected":       "the app is rejected: delivers nothing",
		"app_suspended":      "the app is suspended: delivers nothing",
		"app_not_live":       "within the app's daily cap until it is live",
		"wallet_below_floor": "delivers nothing until a top-up covers the floor",
		"activating":         "active within seconds",
	}[*cmp.StatusReason]
	if why == "" {
		why = *cmp.StatusReason
	}
	return string(cmp.Status) + " (" + why + ")"
}

func (r *runner) statsCommand() *cobra.Command {
	var period string
	cmd := &cobra.Command{
		Use:   "stats [--period last_7_days|last_30_days|last_90_days]",
		Short: "the app's delivery and fraud figures (GET /v1/apps/{app_id}/stats)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			st, err := c.GetStats(cmd.Context(), appID, &xpromo.StatsParams{Period: xpromo.Period(period)})
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			rows := [][2]string{
				{"impressions", strconv.FormatInt(st.Impressions, 10)},
				{"clicks", strconv.FormatInt(st.Clicks, 10)},
				{"installs", strconv.FormatInt(st.Installs, 10)},
				{"cleared", strconv.FormatInt(st.Cleared, 10)},
				{"retention_48h", percent(st.Retention48h)},
				{"floor", eur(st.FloorCents)},
				{"avg_clearing_price", eur(st.AvgClearingPriceCents)},
			}
			if len(st.FraudRejected) == 0 {
				rows = append(rows, [2]string{"fraud_rejected", "none"})
			}
			for _, code := range sortedKeys(st.FraudRejected) {
				rows = append(rows, [2]string{"fraud_rejected." + code, strconv.FormatInt(st.FraudRejected[code], 10)})
			}
			return kv(r.env.Stdout, rows...)
		},
	}
	r.addAppIDFlag(cmd)
	cmd.Flags().StringVar(&period, "period", "", "reporting window: last_7_days, last_30_days or last_90_days (default: the server's, last_30_days)")
	cmd.AddCommand(r.dailyStatsCommand())
	return cmd
}

// idempotency sends key as the call's Idempotency-Key when set.
func idempotency(key string) []xpromo.CallOption {
	if key == "" {
		return nil
	}
	return []xpromo.CallOption{xpromo.WithIdempotencyKey(key)}
}

func addIdempotencyFlag(cmd *cobra.Command, key *string) {
	cmd.Flags().StringVar(key, "idempotency-key", "", "Idempotency-Key of the POST: repeating the command with the same key runs it once (within 24 hours)")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
