package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) adminCommand() *cobra.Command {
	cmd := group("admin", "operators: app status, wallet adjustments, floor cuts, payout accounts, audit, complaints (admin token)",
		r.adminActionCommand(xpromo.AdminApprove, "approve a pending app", false),
		r.adminActionCommand(xpromo.AdminReject, "reject an app (a --reason is required)", true),
		r.adminActionCommand(xpromo.AdminSuspend, "suspend an approved, throttled or live app", false),
		r.adminActionCommand(xpromo.AdminReinstate, "lift a suspension: back to the status before it", false),
		r.adminActionCommand(xpromo.AdminReview, "send a rejected app back to review (pending)", false),
		r.adminAppCommand(),
		r.adminAppsCommand(),
		r.adminAdjustCommand(),
		r.adminFloorCutCommand(),
		r.adminPayoutAccountCommand(),
		r.adminAuditCommand(),
		r.adminComplaintsCommand(),
	)
	cmd.Long = `The operators' surface (/v1/admin/...). Every command sends the admin token
(--admin-token, XPROMO_ADMIN_TOKEN, or the profile's admin_token), never the API
key; every change is recorded in the audit log.`
	return cmd
}

func (r *runner) adminActionCommand(action xpromo.AdminAction, short string, needReason bool) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   string(action) + " <app_id> [--reason TEXT]",
		Short: short + " (POST /v1/admin/apps/{app_id}/" + string(action) + ")",
		Args:  exactArgs("<app_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if needReason {
				if err := required(cmd, "reason"); err != nil {
					return err
				}
			}
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			app, err := c.AdminAct(cmd.Context(), args[0], action, reason)
			if err != nil {
				return err
			}
			return r.printAdminApp(app)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the status history and the audit log)")
	return cmd
}

func (r *runner) adminAppCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "app <app_id>",
		Short: "an app as operators see it, with its status history (GET /v1/admin/apps/{app_id})",
		Args:  exactArgs("<app_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			app, err := c.AdminGetApp(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return r.printAdminApp(app)
		},
	}
}

func (r *runner) printAdminApp(app *xpromo.AdminApp) error {
	if r.g.json {
		return r.writeRaw()
	}
	if err := kv(r.env.Stdout, appRows(&app.App)...); err != nil {
		return err
	}
	fmt.Fprintln(r.env.Stdout)
	t := newTable(r.env.Stdout)
	t.row("AT", "FROM", "TO", "ACTOR", "REASON")
	for _, h := range app.StatusHistory {
		from := "-"
		if h.From != nil {
			from = string(*h.From)
		}
		reason := h.Reason
		if reason == "" {
			reason = "-"
		}
		t.row(ts(h.At), from, string(h.To), h.Actor, reason)
	}
	return t.flush()
}

func (r *runner) adminAdjustCommand() *cobra.Command {
	var adj xpromo.Adjustment
	var idemKey string
	cmd := &cobra.Command{
		Use:     "adjust <app_id> --amount-cents N --note TEXT [--idempotency-key KEY]",
		Aliases: []string{"adjustment", "adjustments"},
		Short:   "correct an app's wallet (POST /v1/admin/apps/{app_id}/adjustments)",
		Long: `Posts an adjustment line on the app's wallet: positive amount_cents credits it,
negative debits it (never below zero: 409 insufficient_funds). The note is shown
on the ledger line. Adjustments are not withdrawable earnings. Pass a ticket
number as --idempotency-key so that repeating the command posts once.`,
		Args: exactArgs("<app_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "amount-cents", "note"); err != nil {
				return err
			}
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			line, err := c.AdminAdjustWallet(cmd.Context(), args[0], adj, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"id", line.ID},
				[2]string{"ts", ts(line.Ts)},
				[2]string{"type", string(line.Type)},
				[2]string{"amount", eur(line.AmountCents)},
				[2]string{"balance_after", eur(line.BalanceAfter)},
				[2]string{"note", orDash(line.Note)},
			)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&adj.AmountCents, "amount-cents", 0, "signed amount in cents: positive credits the wallet")
	f.StringVar(&adj.Note, "note", "", "why (1 to 500 bytes; shown on the ledger line)")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) adminFloorCutCommand() *cobra.Command {
	var cut xpromo.FloorCut
	var platform string
	cmd := &cobra.Command{
		Use:   "floor-cut <category> --platform mac|win --floor-cents N --reason TEXT",
		Short: "lower a category's floor on one platform (POST /v1/admin/categories/{category}/floors)",
		Long: `Lowers a category's published floor on one platform. Floors never rise: a
higher floor is refused (409 floor_cannot_rise).`,
		Args: exactArgs("<category>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "platform", "floor-cents", "reason"); err != nil {
				return err
			}
			cut.Platform = xpromo.Platform(platform)
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			floors, err := c.AdminCutFloor(cmd.Context(), args[0], cut)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"key", floors.Key},
				[2]string{"label", floors.Label},
				[2]string{"floors.mac", eur(floors.Floors.Mac)},
				[2]string{"floors.win", eur(floors.Floors.Win)},
			)
		},
	}
	f := cmd.Flags()
	f.StringVar(&platform, "platform", "", "mac or win")
	f.Int64Var(&cut.FloorCents, "floor-cents", 0, "the new floor in cents, at most the current one")
	f.StringVar(&cut.Reason, "reason", "", "why (kept in the floor history)")
	return cmd
}

func (r *runner) adminPayoutAccountCommand() *cobra.Command {
	var accountID string
	cmd := &cobra.Command{
		Use:   "payout-account <app_id> --account-id acct_...",
		Short: "connect the account an app's payouts go to (PUT /v1/admin/apps/{app_id}/payout-account)",
		Args:  exactArgs("<app_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "account-id"); err != nil {
				return err
			}
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			acct, err := c.AdminSetPayoutAccount(cmd.Context(), args[0], accountID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			appID := acct.AppID
			if appID == "" {
				appID = args[0]
			}
			return kv(r.env.Stdout, [2]string{"app_id", appID}, [2]string{"account_id", acct.AccountID})
		},
	}
	cmd.Flags().StringVar(&accountID, "account-id", "", "the connected account, acct_...")
	return cmd
}

func (r *runner) adminAuditCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--limit N]",
		Short: "the operator audit log, newest first (GET /v1/admin/audit)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			page, err := c.AdminAudit(cmd.Context(), limit)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			t := newTable(r.env.Stdout)
			t.row("AT", "ACTION", "SUBJECT", "ACTOR", "DETAIL")
			for _, e := range page.Entries {
				t.row(ts(e.At), e.Action, e.Subject, e.Actor, compactJSON(e.Detail))
			}
			return t.flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "entries to show, 1-1000 (default: the server's, 100)")
	return cmd
}
