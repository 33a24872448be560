// Package cli is the `xpromo` command line: the REST API v1 for people
// (aligned tables, euros, progress) and for scripts (--json prints the API's
// answers unchanged, distinct exit codes, errors as `error: <code>:
// <message>` on stderr). It talks to the server only through the SDK client
// (sdk/xpromo). docs/cli.md is its manual.
//
// cmd/xpromo only wires the process (arguments, standard streams,
// environment, signals) into Run; tests call Run with an Env of their own.
package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/xpromo/xpromo/cli/internal/config"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Version is the CLI's version, sent in its User-Agent.
const Version = "0.1.0"

// Env is everything the CLI takes from its process. Nil fields get the
// process's own (OSEnv).
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable (os.Getenv).
	Getenv func(string) string
	// UserConfigDir is the user's configuration directory
	// (os.UserConfigDir); the config file is <dir>/xpromo/config.json
	// unless XPROMO_CONFIG names another.
	UserConfigDir func() (string, error)
	// Transport performs the HTTP requests (http.DefaultTransport).
	Transport http.RoundTripper
	// ClientOptions are added to the SDK client's options (tests shorten
	// the waits between retries with them).
	ClientOptions []xpromo.Option
	// OpenURL opens a URL in the user's browser (`topup --open`).
	OpenURL func(url string) error
	// IsTerminal reports whether w is an interactive terminal: progress is
	// drawn only there.
	IsTerminal func(w io.Writer) bool
}

// OSEnv is the process's environment.
func OSEnv() Env {
	return Env{
		Stdin:         os.Stdin,
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		Getenv:        os.Getenv,
		UserConfigDir: os.UserConfigDir,
		Transport:     http.DefaultTransport,
		OpenURL:       openBrowser,
		IsTerminal:    isTerminal,
	}
}

func (e Env) withDefaults() Env {
	d := OSEnv()
	if e.Stdin == nil {
		e.Stdin = d.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = d.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = d.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = d.Getenv
	}
	if e.UserConfigDir == nil {
		e.UserConfigDir = d.UserConfigDir
	}
	if e.Transport == nil {
		e.Transport = d.Transport
	}
	if e.OpenURL == nil {
		e.OpenURL = d.OpenURL
	}
	if e.IsTerminal == nil {
		e.IsTerminal = d.IsTerminal
	}
	return e
}

// Run runs the command line args (without the program name) and returns
// the process's exit status (docs/cli.md, "Exit codes").
func Run(ctx context.Context, env Env, args []string) int {
	r := &runner{env: env.withDefaults()}
	r.rec = &recorder{base: r.env.Transport}
	root := r.rootCommand()
	root.SetArgs(args)
	root.SetIn(r.env.Stdin)
	root.SetOut(r.env.Stdout)
	root.SetErr(r.env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	return r.report(cmd, err)
}

// runner is one invocation: its environment, global flags and the state
// loaded on demand.
type runner struct {
	env Env
	g   globalFlags
	rec *recorder

	loaded   bool
	cfgPath  string
	file     *config.File
	settings config.Settings
}

// globalFlags are the flags every command takes.
type globalFlags struct {
	profile, baseURL, apiKey, adminToken string
	appID                                string // --app-id, on the commands that act on an app
	json                                 bool
	retries                              int
}

func (r *runner) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "xpromo",
		Short: "xpromo: the cross-promotion and paid-install network, from the command line",
		Long: `xpromo talks to an xpromo server's REST API v1.

Settings come from flags, then XPROMO_* environment variables, then the
profile in the config file (written by "xpromo apps register"), then defaults.
--json prints the API's answers unchanged. Exit codes: 0 ok, 1 other error,
2 usage, 3 auth (401/403), 4 not found, 5 validation (400/422), 6 conflict
(409), 7 rate limited, 8 server or network. See docs/cli.md.`,
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&r.g.baseURL, "base-url", "", "server root, e.g. http://127.0.0.1:8080 (env XPROMO_BASE_URL; default "+config.DefaultBaseURL+")")
	pf.StringVar(&r.g.apiKey, "api-key", "", "the app's API key (env XPROMO_API_KEY; prefer the env or the config file: flags show in ps)")
	pf.StringVar(&r.g.adminToken, "admin-token", "", "the operators' token for admin commands (env XPROMO_ADMIN_TOKEN)")
	pf.StringVar(&r.g.profile, "profile", "", "config profile (env XPROMO_PROFILE; default \"default\")")
	pf.BoolVar(&r.g.json, "json", false, "print the API's JSON answer unchanged")
	pf.IntVar(&r.g.retries, "retries", xpromo.DefaultRetries, "retries after a network error, 429 or 5xx (POSTs are idempotent)")

	root.AddCommand(
		r.appsCommand(),
		r.rateCardCommand(),
		r.networkStatsCommand(),
		r.guideCommand(),
		r.topUpCommand(),
		r.campaignsCommand(),
		r.ledgerCommand(),
		r.statsCommand(),
		r.payoutCommand(),
		r.payoutAccountCommand(),
		r.balanceCommand(),
		r.thresholdsCommand(),
		r.payoutsCommand(),
		r.chainsCommand(),
		r.keysCommand(),
		r.webhooksCommand(),
		r.eventsCommand(),
		r.listenCommand(),
		r.complaintsCommand(),
		r.adminCommand(),
		r.configCommand(),
		r.dashboardCommand(),
	)
	return root
}

// groupRun is the RunE of commands that only group others: a missing or
// unknown subcommand is a usage error (exit 2), not a silent help page.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageErr("%s needs a command: %s", cmd.CommandPath(), subcommandNames(cmd))
	}
	msg := "unknown command " + quote(args[0]) + " for " + quote(cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + quote(s[0]) + "?"
	}
	return usageErr("%s", msg)
}

func subcommandNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return joinComma(names)
}

// group builds a command that only groups subs.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun}
	c.AddCommand(subs...)
	return c
}

// addAppIDFlag adds --app-id to a command acting on one app.
func (r *runner) addAppIDFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.g.appID, "app-id", "", "the app (env XPROMO_APP_ID; default: the profile's app_id)")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openBrowser opens url with the desktop's handler, without waiting for it.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
