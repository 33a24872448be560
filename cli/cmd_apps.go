package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/cli/internal/config"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) appsCommand() *cobra.Command {
	return group("apps", "register an app, read or change it, read its score, rotate its API key, choose its earn mode, answer the vetting gate",
		r.appsRegisterCommand(), r.appsShowCommand(), r.appsUpdateCommand(), r.appsScoreCommand(), r.appsRotateKeyCommand(), r.appsKeysCommand(), r.appsEarnModeCommand(),
		r.appsRecheckCommand(), r.appsVerifyContactCommand(), r.appsResendContactCommand())
}

func (r *runner) appsRegisterCommand() *cobra.Command {
	var req xpromo.RegisterAppRequest
	var platform string
	var force bool
	cmd := &cobra.Command{
		Use:   "register --name N --platform mac|win --bundle-id ID --domain D --download-url URL --contact-email E [--category C] [--appcast-url URL]",
		Short: "register an app (POST /v1/apps); saves its app_id and api_key to the profile",
		Long: `Registers an app. The answer's api_key is shown once: it is printed here and
saved, with the app_id and base URL, to the profile in the config file (mode 0600).
A profile that already holds an API key is not overwritten: name another with
--profile, or pass --force.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "name", "platform", "bundle-id", "domain", "download-url", "contact-email"); err != nil {
				return err
			}
			req.Platform = xpromo.Platform(platform)
			c, err := r.publicClient()
			if err != nil {
				return err
			}
			name := r.settings.Profile.Value
			if p := r.file.Profiles[name]; p.APIKey != "" && !force {
				return usageErr("profile %q already holds the API key of %s; use --profile <new name>, or --force to replace it", name, p.AppID)
			}
			reg, err := c.RegisterApp(cmd.Context(), &req)
			if err != nil {
				return err
			}
			saveErr := r.saveProfile(func(p *config.Profile) {
				*p = config.Profile{BaseURL: c.BaseURL(), AppID: reg.AppID, APIKey: reg.APIKey, ScoringJobID: reg.ScoringJobID, AdminToken: p.AdminToken}
			})
			if r.g.json {
				if err := r.writeRaw(); err != nil {
					return err
				}
			} else {
				if err := kv(r.env.Stdout,
					[2]string{"app_id", reg.AppID},
					[2]string{"status", string(reg.Status)},
					[2]string{"scoring_job_id", reg.ScoringJobID},
					[2]string{"api_key", reg.APIKey},
				); err != nil {
					return err
				}
				if saveErr == nil {
					fmt.Fprintf(r.env.Stdout, "\nThe api_key is shown only this once. It was saved to profile %q in %s.\n", name, r.cfgPath)
				}
			}
			if saveErr != nil {
				// The key must not be lost: it was printed above.
				return fmt.Errorf("the app is registered but its key could not be saved (copy it from above): %w", saveErr)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "the app's name")
	f.StringVar(&platform, "platform", "", "mac or win")
	f.StringVar(&req.BundleID, "bundle-id", "", "reverse-DNS bundle id, e.g. com.example.app")
	f.StringVar(&req.Domain, "domain", "", "the app's web domain (at least six months old)")
	f.StringVar(&req.DownloadURL, "download-url", "", "URL serving the app's installer")
	f.StringVar(&req.ContactEmail, "contact-email", "", "contact address (answers a challenge)")
	f.StringVar(&req.Category, "category", "", "rate-card category the app's slots sell in (optional)")
	f.StringVar(&req.AppcastURL, "appcast-url", "", "the app's Sparkle-format appcast, for release cadence (optional; a Windows app's only cadence source)")
	f.BoolVar(&force, "force", false, "replace the API key already saved in the profile")
	return cmd
}

// appRows are the fields of an app, in the API's order: `apps show` and
// `apps update` print them, and `admin app` before the status history.
func appRows(app *xpromo.App) [][2]string {
	return [][2]string{
		{"app_id", app.AppID},
		{"name", app.Name},
		{"platform", string(app.Platform)},
		{"bundle_id", app.BundleID},
		{"domain", app.Domain},
		{"download_url", app.DownloadURL},
		{"contact_email", app.ContactEmail},
		{"category", orDash(app.Category)},
		{"appcast_url", orDash(app.AppcastURL)},
		{"status", string(app.Status)},
		{"earn_mode", app.EarnMode},
		{"created_at", ts(app.CreatedAt)},
		{"updated_at", ts(app.UpdatedAt)},
	}
}

func (r *runner) appsShowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "the app as registered, with its status and earn mode (GET /v1/apps/{app_id})",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			app, err := c.GetApp(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout, appRows(app)...)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) appsUpdateCommand() *cobra.Command {
	var appcastURL string
	var clearAppcast bool
	cmd := &cobra.Command{
		Use:   "update (--appcast-url URL | --clear-appcast-url)",
		Short: "change the app's appcast URL (PATCH /v1/apps/{app_id}); its cadence is read again",
		Long: `Sets the app's Sparkle-format appcast (--appcast-url), the release-cadence
source of a Windows app and of a Mac app whose bundle declares no SUFeedURL, or
removes it (--clear-appcast-url). The URL is checked as at registration
(invalid_appcast_url). A change queues a scoring run that reads the new feed,
due at once (or a minute after the last run ended): its scoring_job_id is
printed ("-" when nothing changed); follow it with "apps score". The other
registration fields cannot be changed: register the app again.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, remove := cmd.Flags().Changed("appcast-url"), clearAppcast
			if set == remove {
				return usageErr("%s needs exactly one of --appcast-url URL, --clear-appcast-url", cmd.CommandPath())
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			req := &xpromo.UpdateAppRequest{} // nil AppcastURL: null, removing it
			if set {
				req.AppcastURL = xpromo.String(appcastURL)
			}
			upd, err := c.UpdateApp(cmd.Context(), appID, req)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout, append(appRows(&upd.App), [2]string{"scoring_job_id", orDash(upd.ScoringJobID)})...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&appcastURL, "appcast-url", "", "the app's new Sparkle-format appcast URL")
	f.BoolVar(&clearAppcast, "clear-appcast-url", false, "remove the app's appcast URL")
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) appsScoreCommand() *cobra.Command {
	var watch bool
	var interval, timeout time.Duration
	var jobID string
	cmd := &cobra.Command{
		Use:   "score [--watch]",
		Short: "the app's status, gate checks and reputation (GET /v1/apps/{app_id}/score)",
		Long: `Prints the app's score. With --watch it polls the score (and the scoring job)
until the app leaves "pending" (the vetting gate or an operator decided),
showing the gate checks as they pass, then prints the final score.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			if jobID == "" && r.file.Profiles[r.settings.Profile.Value].AppID == appID {
				jobID = r.file.Profiles[r.settings.Profile.Value].ScoringJobID
			}
			var sc *xpromo.Score
			if watch {
				if interval <= 0 {
					return usageErr("--interval must be positive")
				}
				sc, err = r.watchScore(cmd.Context(), c, appID, jobID, interval, timeout)
			} else {
				sc, err = c.GetScore(cmd.Context(), appID)
			}
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return printScore(r.env.Stdout, sc)
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.BoolVar(&watch, "watch", false, "poll until the app leaves pending, showing the gate checks")
	f.DurationVar(&interval, "interval", 5*time.Second, "time between polls with --watch")
	f.DurationVar(&timeout, "timeout", defaultWatchTimeout, "give up watching after this long (0: never; Ctrl-C stops)")
	f.StringVar(&jobID, "job-id", "", "scoring job to follow with --watch (default: the registration's scoring_job_id)")
	return cmd
}

// gateChecks are the gate's booleans, in the API's order.
func gateChecks(g xpromo.Gate) [][2]string {
	return [][2]string{
		{"signed", yesNo(g.Signed)},
		{"malware_clean", yesNo(g.MalwareClean)},
		{"domain_age_ok", yesNo(g.DomainAgeOK)},
		{"contact_verified", yesNo(g.ContactVerified)},
		{"bundle_match", yesNo(g.BundleMatch)},
	}
}

func gatePassed(g xpromo.Gate) int {
	n := 0
	for _, ok := range []bool{g.Signed, g.MalwareClean, g.DomainAgeOK, g.ContactVerified, g.BundleMatch} {
		if ok {
			n++
		}
	}
	return n
}

func printScore(w io.Writer, sc *xpromo.Score) error {
	rows := [][2]string{
		{"status", string(sc.Status)},
		{"gate", fmt.Sprintf("%d/5 checks passed", gatePassed(sc.Gate))},
	}
	for _, c := range gateChecks(sc.Gate) {
		rows = append(rows, [2]string{"gate." + c[0], c[1]})
	}
	rp := sc.Reputation
	rows = append(rows, [2]string{"reputation", fmt.Sprintf("%d/100 (ai_visibility %d, cadence %d, reviews %d, coherence %d)",
		rp.Total, rp.AIVisibility, rp.Cadence, rp.Reviews, rp.Coherence)})
	if b := sc.Behavior; b != nil {
		rows = append(rows, [2]string{"behavior", fmt.Sprintf("retention_48h %s, uninstall_rate %s, complaints %s, canary %s",
			percent(b.Retention48h), percent(b.UninstallRate), strconv.FormatFloat(b.Complaints, 'f', -1, 64), yesNo(b.Canary))})
	} else {
		rows = append(rows, [2]string{"behavior", "- (replaces reputation after 500 installs traded)"})
	}
	reasons := "-"
	if len(sc.Reasons) > 0 {
		reasons = strings.Join(sc.Reasons, ", ")
	}
	rows = append(rows, [2]string{"reasons", reasons}, [2]string{"next_review_at", ts(sc.NextReviewAt)})
	return kv(w, rows...)
}

// defaultWatchTimeout bounds `apps score --watch`: a script that forgot
// --timeout must not hang for ever on an app an operator never looks at.
const defaultWatchTimeout = 30 * time.Minute

// watchScore polls the score until the app's status is no longer pending.
// Progress goes to stderr: a bar of the gate checks on a terminal, a line
// per change otherwise.
func (r *runner) watchScore(ctx context.Context, c *xpromo.Client, appID, jobID string, interval, timeout time.Duration) (sc *xpromo.Score, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var bar *progressbar.ProgressBar
	if r.env.IsTerminal(r.env.Stderr) {
		bar = progressbar.NewOptions(5,
			progressbar.OptionSetWriter(r.env.Stderr),
			progressbar.OptionSetDescription("gate checks"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetSpinnerChangeInterval(0),
			progressbar.OptionSetWidth(20),
			progressbar.OptionClearOnFinish(),
		)
		defer func() {
			_ = bar.Clear()
			_ = bar.Exit()
			if err != nil {
				// The error is printed next: on a line of its own, not
				// after the bar's.
				fmt.Fprintln(r.env.Stderr)
			}
		}()
	}
	last := ""
	for {
		// The job first, the score last: --json prints the last answer.
		job := ""
		if jobID != "" {
			j, err := c.GetJob(ctx, appID, jobID)
			if err != nil {
				return nil, watchErr(err, timeout)
			}
			job = string(j.Status)
		}
		sc, err = c.GetScore(ctx, appID)
		if err != nil {
			return nil, watchErr(err, timeout)
		}
		state := watchLine(sc, job)
		if bar != nil {
			// Short, so that description and bar fit on one line.
			desc := string(sc.Status)
			if job != "" {
				desc += ", scoring " + job
			}
			bar.Describe(desc + " · gate checks")
			_ = bar.Set(gatePassed(sc.Gate))
		} else if state != last {
			fmt.Fprintln(r.env.Stderr, state)
		}
		last = state
		if sc.Status != xpromo.AppStatusPending {
			return sc, nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, watchErr(ctx.Err(), timeout)
		case <-t.C:
		}
	}
}

func watchLine(sc *xpromo.Score, job string) string {
	s := fmt.Sprintf("status %s, gate %d/5 checks passed", sc.Status, gatePassed(sc.Gate))
	if job != "" {
		s += ", scoring job " + job
	}
	if len(sc.Reasons) > 0 {
		s += " (" + strings.Join(sc.Reasons, ", ") + ")"
	}
	return s
}

func watchErr(err error, timeout time.Duration) error {
	if timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
		return localErr(codeTimeout, ExitOther, "the app was still pending after %s", timeout)
	}
	return err
}

func (r *runner) appsRotateKeyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "issue a new API key (POST /v1/apps/{app_id}/keys/rotate) and save it to the profile",
		Long: `Issues a new API key and saves it to the profile; every older key stops working
at previous_key_expires_at (24 hours). The table shows the new key masked; --json
prints the API's answer, key included.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			rot, err := c.RotateKey(cmd.Context(), appID)
			if err != nil {
				return err
			}
			saveErr := r.saveProfile(func(p *config.Profile) {
				p.APIKey, p.AppID = rot.APIKey, appID
				if p.BaseURL == "" {
					p.BaseURL = c.BaseURL()
				}
			})
			if r.g.json {
				if err := r.writeRaw(); err != nil {
					return err
				}
			} else if saveErr == nil {
				if err := kv(r.env.Stdout,
					[2]string{"api_key", config.Mask(rot.APIKey) + " (saved to profile " + quote(r.settings.Profile.Value) + ")"},
					[2]string{"previous_key_expires_at", ts(rot.PreviousKeyExpiresAt)},
				); err != nil {
					return err
				}
			}
			if saveErr != nil {
				if !r.g.json {
					// Not saved: this is the only chance to see the key.
					fmt.Fprintf(r.env.Stdout, "api_key  %s\n", rot.APIKey)
				}
				return fmt.Errorf("the key was rotated but could not be saved (copy it from above): %w", saveErr)
			}
			return nil
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) appsRecheckCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recheck",
		Short: "run the vetting gate again for an app it rejected (POST /v1/apps/{app_id}/gate/recheck)",
		Long: `After fixing what the score's reasons say (a signed build at the same
download_url, …), runs the gate again: the app goes back to pending and a gate
job is queued; prints that job. Follow it with "apps score --watch". Refused for
an app an operator decided (gate_recheck_refused) and while its domain is too
young (gate_domain_too_young, with retry_after).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			j, err := c.RecheckGate(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout, [2]string{"job_id", j.JobID}, [2]string{"status", string(j.Status)}, [2]string{"run_after", ts(j.RunAfter)})
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) appsVerifyContactCommand() *cobra.Command {
	var code string
	cmd := &cobra.Command{
		Use:   "verify-contact --code 123456",
		Short: "answer the contact challenge with the code from its email (POST /v1/apps/{app_id}/contact/verify)",
		Long: `The gate mails the app's contact_email a link and a 6-digit code; this answers
the code (opening the link does the same). The gate then runs again at once.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "code"); err != nil {
				return err
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			v, err := c.VerifyContactCode(cmd.Context(), appID, code)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout, [2]string{"status", v.Status}, [2]string{"verified_at", ts(v.VerifiedAt)})
		},
	}
	cmd.Flags().StringVar(&code, "code", "", "the 6-digit code from the challenge email")
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) appsResendContactCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resend-contact",
		Short: "mail the contact challenge again (POST /v1/apps/{app_id}/contact/resend)",
		Long: `Mails the app's contact_email a new link and code (valid 24 hours), replacing
the previous ones. At most one a minute and five a day (contact_resend_too_soon).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			ch, err := c.ResendContactChallenge(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout, [2]string{"email", ch.Email}, [2]string{"expires_at", ts(ch.ExpiresAt)})
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

// noArgs refuses positional arguments (a usage error).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// exactArgs wants n positional arguments, named in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr("%s needs %s", cmd.CommandPath(), strings.Join(names, " "))
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return usageErr("%s: %s is empty", cmd.CommandPath(), names[i])
			}
		}
		return nil
	}
}

// required checks that flags were given (a usage error names the missing).
func required(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usageErr("%s needs %s", cmd.CommandPath(), strings.Join(missing, ", "))
	}
	return nil
}
