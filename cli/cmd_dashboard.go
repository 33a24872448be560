package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// dashboardCommand is `xpromo dashboard [--open]`: a single-use sign-in
// link to the app's web dashboard (POST /v1/dashboard/sign-in-links,
// docs/dashboard.md).
func (r *runner) dashboardCommand() *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "dashboard [--open]",
		Short: "a one-time sign-in link to the app's web dashboard (POST /v1/dashboard/sign-in-links)",
		Long: `Mints a sign-in link to the app's web dashboard and prints it: it works once,
within 5 minutes. --open opens it in the browser. The page asks to Continue;
the browser is then signed in for at most 12 hours (30 minutes idle). --json
prints the API's answer.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.keyClient()
			if err != nil {
				return err
			}
			link, err := c.DashboardLink(cmd.Context())
			if err != nil {
				return err
			}
			if r.g.json {
				err = r.writeRaw()
			} else {
				err = kv(r.env.Stdout, [2]string{"url", link.URL}, [2]string{"expires_at", link.ExpiresAt.UTC().Format(time.RFC3339)})
			}
			if err != nil {
				return err
			}
			if open {
				if err := r.env.OpenURL(link.URL); err != nil {
					fmt.Fprintf(r.env.Stderr, "warning: could not open a browser (%v); open the url yourself\n", err)
				}
			} else if !r.g.json {
				fmt.Fprintln(r.env.Stderr, "Open the url in a browser within 5 minutes (--open opens it); it works once.")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the link in the browser")
	return cmd
}
