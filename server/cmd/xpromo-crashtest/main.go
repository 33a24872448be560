// Command xpromo-crashtest is the crash test of the money paths (`make
// crashtest`; server/crashtest): it runs the real xpromo-server binary on
// each store under concurrent money operations sent through the SDK, each
// with its own Idempotency-Key, kills it with SIGKILL at a random moment of
// every cycle, starts it again and retries every operation without a
// definite answer with the same key; then it checks that every
// acknowledged operation took effect exactly once, that no wallet line is
// unexplained, that `ledger verify` passed after every kill and restart,
// and that no payout is left pending. Each app has a webhook endpoint at a
// receiver in this process, which verifies every delivery; a second kill
// per cycle falls during a delivery; every event the events API lists must
// reach the receiver, and nothing else.
//
//	xpromo-crashtest -server ./bin/xpromo-server -cycles 20 -stores sqlite,postgres
//
// Exit status: 0 when every store passed, 1 on any violation or a run that
// could not be carried out, 2 for a bad command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/server/crashtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xpromo-crashtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "the xpromo-server binary to crash (required; build it with go build ./server/cmd/xpromo-server)")
	stores := fs.String("stores", "sqlite,postgres", "comma-separated stores: sqlite, postgres")
	dbURL := fs.String("database-url", orDefault(env("XPROMO_TEST_DATABASE_URL"), defaultDatabaseURL), "PostgreSQL URL whose user may CREATE DATABASE: a fresh database is created there and dropped after (env XPROMO_TEST_DATABASE_URL)")
	cycles := fs.Int("cycles", 20, "kills (and restarts) per store")
	ops := fs.String("crash-ops", "all", "operations sent while the server may be killed (all, or some of topup,adjustment,claim,heartbeat,sweep,payout); the others run between kills")
	var load crashtest.LoadFlags
	load.Register(fs, 60*time.Second, "how long one operation is retried (with the same key) before it counts as unresolved")
	leaseSkip := fs.Duration("lease-skip", 0, "how far each restart moves the test clock past where the run had it; 0 (the default) relies on the server taking over the keys of the killed process at once (holder detection), which a -retry-for under the 60 s lease then proves")
	failRate := fs.Float64("webhook-fail-rate", 0.1, "share of verified webhook deliveries the receiver answers 500, so that the server retries them (0 to 0.25)")
	keep := fs.Bool("keep", false, "keep each store's work directory (server log, SQLite file) and PostgreSQL database; a failed store keeps its work directory anyway")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "xpromo-crashtest: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if *server == "" {
		return usage("-server is required: the xpromo-server binary (make crashtest builds it)")
	}
	if _, err := os.Stat(*server); err != nil {
		return usage("-server: %v", err)
	}
	storeList, err := crashtest.ParseStores(*stores)
	if err != nil {
		return usage("-stores: %v", err)
	}
	kinds, err := crashtest.ParseKinds(*ops)
	if err != nil {
		return usage("-crash-ops: %v", err)
	}
	if *failRate < 0 || *failRate > 0.25 {
		return usage("-webhook-fail-rate must be between 0 and 0.25 (eight failed attempts in a row disable an endpoint)")
	}
	if err := load.Check(); err != nil {
		return usage("%v", err)
	}
	if *cycles < 0 || *leaseSkip < 0 {
		return usage("-cycles and -lease-skip must not be negative")
	}

	reports, err := crashtest.Run(ctx, crashtest.Config{
		Server: *server, Stores: storeList, DatabaseURL: *dbURL, Cycles: *cycles, CrashOps: kinds,
		Workers: load.Workers, Claims: load.Claims, TopUps: load.TopUps, Adjustments: load.Adjustments,
		RetryFor: load.RetryFor, LeaseSkip: *leaseSkip, WebhookFailRate: *failRate, Keep: *keep, Out: stdout, Verbose: load.Verbose,
	})
	status := 0
	fmt.Fprintln(stdout)
	for _, r := range reports {
		verdict := "PASS"
		if n := r.Violations(); n > 0 {
			verdict = fmt.Sprintf("FAIL (%d violations)", n)
			status = 1
		}
		fmt.Fprintf(stdout, "crashtest %-8s %s\n", r.Store+":", verdict)
	}
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-crashtest: %v\n", err)
		status = 1
	}
	if len(reports) < len(storeList) {
		status = 1 // interrupted
	}
	return status
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
