// Command xpromo-loadgen drives a running test-mode xpromo server over HTTP,
// through the Go SDK, and reports throughput and latency of its hot paths:
// slot fills, install claims and ledger reads (server/loadgen; method and
// figures in BENCHMARKS.md).
//
//	XPROMO_ADMIN_TOKEN=… xpromo-loadgen -url http://127.0.0.1:8080 -scenario fill,claim -duration 10s -concurrency 8
//
// The server must run in test mode with the admin token, limits far above
// the load (--rate-read and --rate-write, e.g. 10000000) and, for the
// claim scenarios, trust the load generator's X-Forwarded-For
// (--trusted-proxies 127.0.0.1): each simulated device has its own address,
// else the per-address install velocity rule refuses claims past 20 an
// hour. `make loadgen` starts such a server.
//
// Exit status: 0 when every request succeeded, 1 when some failed or the
// run could not start, 2 for a bad command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xpromo-loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("url", orDefault(env("XPROMO_BASE_URL"), "http://127.0.0.1:8080"), "server URL (env XPROMO_BASE_URL); the admin token comes from XPROMO_ADMIN_TOKEN")
	scenarios := fs.String("scenario", "fill", "comma-separated scenarios: fill, claim, ledger, mixed, open-fill, open-mixed, or all")
	duration := fs.Duration("duration", 10*time.Second, "measured time of each scenario")
	concurrency := fs.Int("concurrency", 8, "concurrent workers")
	rate := fs.Float64("rate", 0, "requests per second over all workers; 0: as fast as the server answers")
	publishers := fs.Int("publishers", 4, "publisher apps to register for each scenario that fills (fill, claim, mixed); the server allows each 6,000 fills a minute, so a fill run of r fills/s needs at least r/100 of them (see -fill-publishers)")
	advertisers := fs.Int("advertisers", 4, "advertiser apps to register, each funded with a campaign")
	topups := fs.Int("topups", 10, "test top-ups per advertiser (ledger lines for the ledger scenario)")
	category := fs.String("category", "", "category everything trades in; empty: the rate card's first")
	batch := fs.Int("claim-batch", 500, "clicks made, unmeasured, before each round of claims")
	page := fs.Int("ledger-page", 20, "page size of the ledger reads")
	forwarded := fs.Bool("forwarded-for", true, "send a distinct X-Forwarded-For address per simulated device (the server must trust it: --trusted-proxies 127.0.0.1)")
	asJSON := fs.Bool("json", false, "print the reports as JSON instead of a table")
	lean := fs.Bool("lean", true, "send the fill scenario's requests with the lean generator (pre-signed, pre-serialized, raw keep-alive connections) rather than the SDK's client; ignored with -rate")
	fillPubs := fs.Int("fill-publishers", 0, "publisher apps for the fill scenario; 0: enough for 20,000 fills/s over -duration (each app may fill 6,000 times a minute)")
	fillURL := fs.String("fill-url", "", "open-fill and open-mixed: send the open-loop fills to this instance of the same store (e.g. one started with --background=none) instead of -url; setup, clicks, claims and clock moves still go to -url (the fills' instance is caught up with the test clock once, at the start, and its fills are never held for the rounds' jumps)")
	fillRate := fs.Float64("fill-rate", 1000, "fills a second of the open-loop scenarios (open-fill: alone; open-mixed: while claims and sweeps run as fast as they can), each timed from when it was due")
	readRate := fs.Float64("read-rate", 0, "reads a second of the open-loop scenarios beside the fills (an advertiser's stats and ledger page in turn, as a dashboard asks them), each timed from when it was due; 0: none")
	ceilings := fs.String("ceilings", "", "a JSON file of xpromo-ceilings -o: print each throughput's ratio to its ceiling after the table")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	names := strings.Split(*scenarios, ",")
	if *scenarios == "all" {
		names = loadgen.Scenarios
	}
	for _, n := range names {
		if !slices.Contains(loadgen.Scenarios, n) {
			fmt.Fprintf(stderr, "xpromo-loadgen: unknown scenario %q (want fill, claim, ledger, mixed, open-fill, open-mixed or all)\n", n)
			return 2
		}
	}
	token := env("XPROMO_ADMIN_TOKEN")
	if token == "" {
		fmt.Fprintln(stderr, "xpromo-loadgen: set XPROMO_ADMIN_TOKEN to the admin token of a test-mode server")
		return 2
	}

	// One connection pool for every worker; no retries: a retried request
	// would hide its failure and stretch its latency.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 2 * *concurrency
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "open-") }) {
		// The open-loop fills keep up to loadgen.MaxOpenInFlight requests in
		// flight: each keeps its connection, rather than a new one per fill.
		transport.MaxIdleConnsPerHost = loadgen.MaxOpenInFlight
	}
	op := xpromo.NewClient(*baseURL,
		xpromo.WithAdminToken(token),
		xpromo.WithHTTPClient(&http.Client{Transport: transport, Timeout: 30 * time.Second}),
		xpromo.WithRetries(0),
		xpromo.WithUserAgent("xpromo-loadgen"))

	var fillOp *xpromo.Client
	if *fillURL != "" {
		fillOp = xpromo.NewClient(*fillURL, xpromo.WithAdminToken(token),
			xpromo.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}), xpromo.WithRetries(0), xpromo.WithUserAgent("xpromo-loadgen"))
	}
	if *fillPubs == 0 {
		*fillPubs = loadgen.FillPublishersFor(*duration)
	}
	fmt.Fprintf(stderr, "xpromo-loadgen: setting up %d publishers per filling scenario (fill: %d) and %d advertisers on %s...\n", *publishers, max(*publishers, *fillPubs), *advertisers, *baseURL)
	var ceil *loadgen.Ceilings
	if *ceilings != "" {
		var err error
		if ceil, err = loadgen.ReadCeilings(*ceilings); err != nil {
			fmt.Fprintf(stderr, "xpromo-loadgen: %v\n", err)
			return 2
		}
	}
	f, err := loadgen.Setup(ctx, op, loadgen.SetupConfig{Publishers: *publishers, FillPublishers: *fillPubs, Advertisers: *advertisers, Category: *category, TopUps: *topups, ForwardedFor: *forwarded})
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-loadgen: setup: %v\n", err)
		return 1
	}
	var reports []*loadgen.Report
	status := 0
	for _, name := range names {
		fmt.Fprintf(stderr, "xpromo-loadgen: %s for %s at concurrency %d...\n", name, *duration, *concurrency)
		r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{
			Scenario: name, Duration: *duration, Concurrency: *concurrency, Rate: *rate,
			ClaimBatch: *batch, LedgerPage: *page, ForwardedFor: *forwarded, FillRate: *fillRate, ReadRate: *readRate,
			Lean: *lean && *rate == 0, BaseURL: *baseURL, FillURL: *fillURL, FillOp: fillOp,
		})
		if err != nil {
			fmt.Fprintf(stderr, "xpromo-loadgen: %s: %v\n", name, err)
			status = 1
			break
		}
		if r.Errors > 0 || r.Requests == 0 {
			status = 1
		}
		reports = append(reports, r)
	}
	if *asJSON {
		err = loadgen.WriteJSON(stdout, reports)
	} else {
		err = loadgen.WriteTable(stdout, reports)
	}
	if err == nil && ceil != nil && !*asJSON {
		err = loadgen.WriteRatios(stdout, reports, ceil)
	}
	if err != nil {
		fmt.Fprintf(stderr, "xpromo-loadgen: %v\n", err)
		return 1
	}
	return status
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
