package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The dashboard's reads from the command line: the balance, payouts,
// chains, API keys and the operators' apps by status.

// printWire prints v (a wire type) as the API would send it, for --json on
// commands that read every page.
func (r *runner) printWire(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(r.env.Stdout, "%s\n", raw)
	return err
}

func (r *runner) balanceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "balance",
		Short: "the app's balance: wallet, escrow held, withdrawable, credits (GET /v1/apps/{app_id}/balance)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			b, err := c.GetBalance(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			t := newTable(r.env.Stdout)
			t.row("wallet", eur(b.WalletCents))
			t.row("escrow_held", eur(b.EscrowHeldCents))
			t.row("withdrawable", eur(b.WithdrawableCents))
			t.row("credits", eur(b.CreditsCents))
			t.row("min_payout", eur(b.MinPayoutCents))
			t.row("payout_pending", fmt.Sprint(b.PayoutPending))
			t.row("as_of", ts(b.AsOf))
			return t.flush()
		},
	}
}

func (r *runner) thresholdsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "thresholds",
		Short: "how close the app is to the go-live bar and each suspension bar (GET /v1/apps/{app_id}/thresholds)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			th, err := c.GetThresholds(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			t := newTable(r.env.Stdout)
			t.row("THRESHOLD", "KIND", "VALUE", "BAR", "SAMPLE", "WINDOW", "STATE")
			for _, x := range th.Thresholds {
				sample, window := "-", "since reinstatement"
				if x.Sample != nil {
					sample = fmt.Sprint(*x.Sample)
					if x.MinSample != nil {
						sample += fmt.Sprintf(" (min %d)", *x.MinSample)
					}
				}
				if x.WindowHours != nil {
					window = fmt.Sprintf("%dh", *x.WindowHours)
				}
				cmp := "≥ "
				if x.Comparison == "below" {
					cmp = "< "
				}
				t.row(string(x.Name), string(x.Kind), fmt.Sprintf("%.4g", x.Value), cmp+fmt.Sprintf("%.4g", x.Bar), sample, window, string(x.State))
			}
			if err := t.flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(r.env.Stdout, "status %s, as of %s\n", th.Status, ts(th.AsOf))
			return err
		},
	}
}

func (r *runner) payoutsCommand() *cobra.Command {
	var p xpromo.PageParams
	cmd := &cobra.Command{
		Use:   "payouts",
		Short: "the app's payouts, newest first, every page (GET /v1/apps/{app_id}/payouts)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			var all []xpromo.Payout
			for po, err := range c.Payouts(cmd.Context(), appID, &p) {
				if err != nil {
					return err
				}
				all = append(all, po)
			}
			if r.g.json {
				return r.printWire(xpromo.PayoutPage{Payouts: all})
			}
			if len(all) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no payouts")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("PAYOUT_ID", "STATUS", "AMOUNT", "DESTINATION", "TRANSFER_ID", "CREATED_AT")
			for _, po := range all {
				t.row(po.PayoutID, string(po.Status), eur(po.AmountCents), po.Destination, strOr(po.TransferID, "-"), ts(po.CreatedAt))
			}
			return t.flush()
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 1000, "payouts per page requested (1-1000); every page is read")
	return cmd
}

func strOr(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

func (r *runner) chainsCommand() *cobra.Command {
	var p xpromo.ChainListParams
	var state, role string
	var max int
	cmd := &cobra.Command{
		Use:   "chains [--state S] [--role publisher|advertiser] [--campaign ID] [--max N]",
		Short: "the app's event chains, newest first (GET /v1/chains)",
		Long: `Lists the event chains of the API key's app on either side (or the one --role
names), newest first, following the API's pages up to --max chains. --json prints
one {"chains": [...]} document with both signatures of each chain.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			p.State, p.Role, p.Limit = xpromo.ChainState(state), xpromo.ChainRole(role), xpromo.MaxChainLimit
			var all []xpromo.Chain
			for ch, err := range c.Chains(cmd.Context(), &p) {
				if err != nil {
					return err
				}
				if all = append(all, ch); len(all) >= max {
					break
				}
			}
			if r.g.json {
				return r.printWire(xpromo.ChainPage{Chains: all})
			}
			if len(all) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no chains")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("CHAIN_ID", "STATE", "REASON", "PRICE", "PUBLISHER", "ADVERTISER", "CAMPAIGN", "CLICKED_AT")
			for _, ch := range all {
				reason := "-"
				if ch.Reason != nil {
					reason = string(*ch.Reason)
				}
				t.row(ch.ChainID, string(ch.State), reason, eur(ch.PriceCents), ch.PublisherAppID, ch.AdvertiserAppID, ch.CampaignID, ts(ch.ClickedAt))
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&state, "state", "", "only chains in this state: clicked, installed, activated_48h, cleared, refunded or rejected")
	f.StringVar(&role, "role", "", "only chains where the app is the publisher or the advertiser")
	f.StringVar(&p.CampaignID, "campaign", "", "only the chains of this campaign")
	f.IntVar(&max, "max", 100, "stop after this many chains")
	return cmd
}

func (r *runner) appsKeysCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keys",
		Short: "the app's API keys: prefix, issued, expiry; never a key (GET /v1/apps/{app_id}/keys)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			l, err := c.ListAPIKeys(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			t := newTable(r.env.Stdout)
			t.row("PREFIX", "CREATED_AT", "EXPIRES_AT", "ACTIVE")
			for _, k := range l.Keys {
				exp := "-"
				if k.ExpiresAt != nil {
					exp = ts(*k.ExpiresAt)
				}
				t.row(k.Prefix+"…", ts(k.CreatedAt), exp, fmt.Sprint(k.Active))
			}
			return t.flush()
		},
	}
}

func (r *runner) adminAppsCommand() *cobra.Command {
	var p xpromo.AdminAppListParams
	var status string
	cmd := &cobra.Command{
		Use:   "apps [--status pending|approved|throttled|live|suspended|rejected]",
		Short: "apps oldest first, every page (GET /v1/admin/apps); --status pending is the review queue",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			p.Status = xpromo.AppStatus(status)
			var all []xpromo.App
			for a, err := range c.AdminApps(cmd.Context(), &p) {
				if err != nil {
					return err
				}
				all = append(all, a)
			}
			if r.g.json {
				return r.printWire(xpromo.AdminAppPage{Apps: all})
			}
			if len(all) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no apps")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("APP_ID", "STATUS", "NAME", "PLATFORM", "DOMAIN", "CREATED_AT")
			for _, a := range all {
				t.row(a.AppID, string(a.Status), a.Name, string(a.Platform), a.Domain, ts(a.CreatedAt))
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only apps in this status")
	f.IntVar(&p.Limit, "limit", 1000, "apps per page requested (1-1000); every page is read")
	return cmd
}
