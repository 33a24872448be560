// Command desktop-app plays two desktop apps through the xpromo SDK against
// a running xpromo server, and tells the whole story of one paid install:
//
//   - a publisher app, "Clipboard Pro", and an advertiser app, "Snip",
//     register with the REST client (sdk/xpromo) and the vetting gate
//     approves them (its test-mode sandbox answers their example.com and
//     example.org names); the advertiser tops up in test mode and runs a campaign in the
//     publisher's category; each app makes an SDK key (sdk/attribution)
//     and registers its public half;
//   - inside the publisher app the in-app SDK (sdk/slots) fills the
//     onboarding_complete slot, a console renderer shows the native ad
//     with its "Sponsored" label, the user clicks, and the SDK signs the
//     click and hands the token to Snip through the local inbox;
//   - Snip's first launch claims the install (countersigned), and after 48
//     hours of the server's test clock a heartbeat activates it; the
//     clearing sweep charges the advertiser and pays the publisher;
//   - both apps' ledgers and stats, and the chain with its two signatures,
//     are printed, and the arithmetic of the clearing is checked;
//   - with --webhook-url, both apps register webhook endpoints at a local
//     receiver (examples/webhook-receiver), each step waits for its
//     webhooks, and the receiver's output is checked (webhooks.go).
//
// It needs a test-mode server with the operator API enabled (the admin
// token), since it moves the server's clock. `make demo` starts one.
//
// Usage:
//
//	desktop-app --base-url http://127.0.0.1:8080 --admin-token TOKEN
//
// Exit status: 0 when the story ends with a cleared install and the
// ledgers add up, 1 when it does not, 2 on a bad command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the program: it parses args (flags over env), plays the story,
// prints it and the report to stdout, and returns the exit status.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "desktop-app:", err)
		return exitUsage
	}
	cfg.Out, cfg.Log = stdout, stderr

	if cfg.Wait > 0 {
		if err := waitReady(ctx, cfg.BaseURL, cfg.Wait); err != nil {
			fmt.Fprintln(stderr, "desktop-app:", err)
			return exitFail
		}
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "xpromo-desktop-app-")
		if err != nil {
			fmt.Fprintln(stderr, "desktop-app:", err)
			return exitFail
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}

	res, err := playStory(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stdout)
		fmt.Fprintln(stderr, "desktop-app: the story did not end with a cleared install:", err)
		return exitFail
	}
	printReport(stdout, res)
	failed := printChecks(stdout, res, checkOutcome(res))
	if failed > 0 {
		fmt.Fprintf(stderr, "desktop-app: %d check(s) failed\n", failed)
		return exitFail
	}
	return exitOK
}

// parseFlags reads the configuration: each flag, else its environment
// variable, else the default.
func parseFlags(args []string, env func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("desktop-app", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", "", "the xpromo server's root URL (env XPROMO_BASE_URL)")
	adminToken := fs.String("admin-token", "", "the server's operator token (env XPROMO_ADMIN_TOKEN)")
	category := fs.String("category", "productivity", "rate-card category the publisher sells and the campaign buys")
	dir := fs.String("dir", "", "directory for both apps' SDK data and the handoff inbox (default: a temporary directory, removed at exit)")
	wait := fs.Duration("wait", 0, "wait up to this long for the server's /readyz before starting (e.g. 30s)")
	webhookURL := fs.String("webhook-url", "", "register both apps' webhook endpoints at this receiver URL and wait for each step's webhooks (needs --webhook-secrets-file and --webhook-log)")
	webhookSecrets := fs.String("webhook-secrets-file", "", "the receiver's secrets file: each endpoint's secret is appended to it")
	webhookLog := fs.String("webhook-log", "", "the receiver's output: one line per verified event (examples/webhook-receiver)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: desktop-app --base-url URL --admin-token TOKEN [flags]\n\n"+
			"Plays a publisher app and an advertiser app through the xpromo SDK against a\n"+
			"test-mode server, from registration to a cleared install, and prints both\n"+
			"ledgers. Exit status 1 if the install is not cleared or the ledgers do not add up.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, errors.New("bad command line (see --help)")
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["base-url"] {
		*baseURL = env("XPROMO_BASE_URL")
	}
	if !set["admin-token"] {
		*adminToken = env("XPROMO_ADMIN_TOKEN")
	}
	cfg := config{
		BaseURL:    strings.TrimSuffix(strings.TrimSpace(*baseURL), "/"),
		AdminToken: strings.TrimSpace(*adminToken),
		Category:   strings.TrimSpace(*category),
		Dir:        *dir,
		Wait:       *wait,

		WebhookURL:     strings.TrimSpace(*webhookURL),
		WebhookSecrets: *webhookSecrets,
		WebhookLog:     *webhookLog,
	}
	switch {
	case cfg.BaseURL == "":
		return cfg, errors.New("the server's URL is required: --base-url or XPROMO_BASE_URL")
	case !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://"):
		return cfg, fmt.Errorf("--base-url %q is not an http(s) URL", cfg.BaseURL)
	case cfg.AdminToken == "":
		return cfg, errors.New("the operator token is required (to move the test clock and run the sweep): --admin-token or XPROMO_ADMIN_TOKEN")
	case cfg.Category == "":
		return cfg, errors.New("--category must not be empty")
	case cfg.Wait < 0:
		return cfg, errors.New("--wait must not be negative")
	case (cfg.WebhookURL != "") != (cfg.WebhookSecrets != "") || (cfg.WebhookURL != "") != (cfg.WebhookLog != ""):
		return cfg, errors.New("--webhook-url, --webhook-secrets-file and --webhook-log go together")
	}
	return cfg, nil
}

// config is what the story needs.
type config struct {
	BaseURL    string
	AdminToken string
	Category   string
	// Dir holds the SDK data directories of both apps and the inbox.
	Dir string
	// Wait bounds the wait for /readyz (0: do not wait).
	Wait time.Duration
	// Out receives the narration and the report; Log the SDK's warnings.
	Out, Log io.Writer

	// WebhookURL, when set, is a receiver both apps register endpoints at;
	// WebhookSecrets is its secrets file and WebhookLog its output.
	WebhookURL, WebhookSecrets, WebhookLog string
}
