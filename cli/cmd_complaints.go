package cli

import (
	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) appsEarnModeCommand() *cobra.Command {
	var idemKey string
	cmd := &cobra.Command{
		Use:   "earn-mode [cash|credits]",
		Short: "read or choose how the app takes its earnings (GET/POST /v1/apps/{app_id}/earn-mode)",
		Long: `Without an argument, prints the app's earn mode and since when it applies.
With one, switches to it: cash (withdrawable) or credits (x1.2, spendable on
campaigns, never withdrawable). The mode in force when a chain clears decides
how it pays; earnings already cleared keep their mode. A suspended or rejected
app cannot switch (exit 6, earn_mode_not_allowed).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("%s takes at most one argument: cash or credits", cmd.CommandPath())
			}
			if len(args) == 1 && !xpromo.EarnMode(args[0]).Valid() {
				return usageErr("the earn mode is cash or credits, not %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			var st *xpromo.EarnModeState
			if len(args) == 1 {
				st, err = c.SetEarnMode(cmd.Context(), appID, xpromo.EarnMode(args[0]), idempotency(idemKey)...)
			} else {
				st, err = c.EarnMode(cmd.Context(), appID)
			}
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"app_id", st.AppID},
				[2]string{"earn_mode", string(st.EarnMode)},
				[2]string{"effective_at", ts(st.EffectiveAt)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) complaintsCommand() *cobra.Command {
	return group("complaints", "report another app, list the app's reports",
		r.complaintsFileCommand(), r.complaintsListCommand())
}

func (r *runner) complaintsFileCommand() *cobra.Command {
	var req xpromo.CreateComplaintRequest
	var reason, idemKey string
	cmd := &cobra.Command{
		Use:   "file <app_id> --reason misleading_ad|malware|broken_install|fraud|other [--detail TEXT]",
		Short: "report an app to the operators (POST /v1/apps/{app_id}/complaints)",
		Long: `Files a complaint, from the profile's app, about <app_id>. Allowed when the
two apps traded (a chain links them) or the reporting app is approved,
throttled or live (else exit 3, complaint_not_allowed); one open complaint per
app (exit 6, complaint_open). An operator upholds or dismisses it; upheld complaints
count against the reported app's behaviour score.`,
		Args: exactArgs("<app_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "reason"); err != nil {
				return err
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			req.AppID, req.Reason = args[0], xpromo.ComplaintReason(reason)
			filed, err := c.FileComplaint(cmd.Context(), appID, &req, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			return r.printComplaint(filed)
		},
	}
	f := cmd.Flags()
	f.StringVar(&reason, "reason", "", "misleading_ad, malware, broken_install, fraud or other")
	f.StringVar(&req.Detail, "detail", "", "what happened (optional, one line, at most 2000 characters)")
	r.addAppIDFlag(cmd)
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) complaintsListCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "list [--limit N]",
		Short: "the complaints the app filed, newest first (GET /v1/apps/{app_id}/complaints)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			page, err := c.Complaints(cmd.Context(), appID, limit)
			if err != nil {
				return err
			}
			return r.printComplaints(page)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "complaints to show, 1-1000 (default: the server's, 100)")
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) adminComplaintsCommand() *cobra.Command {
	return group("complaints", "review complaints: list them, uphold or dismiss one",
		r.adminComplaintsListCommand(), r.adminComplaintsResolveCommand())
}

func (r *runner) adminComplaintsListCommand() *cobra.Command {
	var limit int
	var status string
	cmd := &cobra.Command{
		Use:   "list [--status open|upheld|dismissed] [--limit N]",
		Short: "every app's complaints, newest first (GET /v1/admin/complaints)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			page, err := c.AdminComplaints(cmd.Context(), xpromo.ComplaintStatus(status), limit)
			if err != nil {
				return err
			}
			return r.printComplaints(page)
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only open, upheld or dismissed complaints")
	cmd.Flags().IntVar(&limit, "limit", 0, "complaints to show, 1-1000 (default: the server's, 100)")
	return cmd
}

func (r *runner) adminComplaintsResolveCommand() *cobra.Command {
	var req xpromo.ResolveComplaintRequest
	var resolution, idemKey string
	cmd := &cobra.Command{
		Use:   "resolve <complaint_id> --resolution upheld|dismissed [--note TEXT]",
		Short: "uphold or dismiss an open complaint (POST /v1/admin/complaints/{complaint_id}/resolve)",
		Long: `Resolves an open complaint, once (a resolved one is exit 6,
complaint_resolved). The resolution is recorded in the audit log; upheld
complaints count against the reported app's behaviour score.`,
		Args: exactArgs("<complaint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "resolution"); err != nil {
				return err
			}
			c, err := r.adminClient()
			if err != nil {
				return err
			}
			req.Resolution = xpromo.ComplaintStatus(resolution)
			done, err := c.AdminResolveComplaint(cmd.Context(), args[0], &req, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			return r.printComplaint(done)
		},
	}
	f := cmd.Flags()
	f.StringVar(&resolution, "resolution", "", "upheld or dismissed")
	f.StringVar(&req.Note, "note", "", "why (optional, at most 500 characters; kept with the complaint and in the audit log)")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) printComplaint(c *xpromo.Complaint) error {
	if r.g.json {
		return r.writeRaw()
	}
	resolved := "-"
	if c.ResolvedAt != nil {
		resolved = ts(*c.ResolvedAt)
	}
	detail := c.Detail
	if detail == "" {
		detail = "-"
	}
	return kv(r.env.Stdout,
		[2]string{"complaint_id", c.ComplaintID},
		[2]string{"reporter_app_id", c.ReporterAppID},
		[2]string{"app_id", c.AppID},
		[2]string{"reason", string(c.Reason)},
		[2]string{"detail", detail},
		[2]string{"status", string(c.Status)},
		[2]string{"created_at", ts(c.CreatedAt)},
		[2]string{"resolved_at", resolved},
		[2]string{"resolution_note", orDash(c.ResolutionNote)},
	)
}

func (r *runner) printComplaints(p *xpromo.ComplaintPage) error {
	if r.g.json {
		return r.writeRaw()
	}
	t := newTable(r.env.Stdout)
	t.row("CREATED_AT", "COMPLAINT_ID", "REPORTER", "APP", "REASON", "STATUS")
	for _, c := range p.Complaints {
		t.row(ts(c.CreatedAt), c.ComplaintID, c.ReporterAppID, c.AppID, string(c.Reason), string(c.Status))
	}
	return t.flush()
}
