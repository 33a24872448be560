package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
)

// shutdownTimeout is how long in-flight requests get to finish after a
// signal before their connections are closed.
const shutdownTimeout = 15 * time.Second

// serve runs the HTTP API until ctx is cancelled, then drains and stops.
func (p *program) serve(ctx context.Context, args []string) error {
	cfg, err := parseConfig("serve", args, p.env, p.stdout, p.stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, p.stderr)
	applyMemoryLimit(cfg.Guard, p.env, log)
	if cfg.Mode == httpapi.ModeTest {
		log.Warn("TEST MODE: payments are simulated, API keys are xp_test_, payouts are fake and x402 uses the testnet; never run test mode in production (set --mode live)")
	}

	st, err := openStore(ctx, cfg, false)
	if err != nil {
		log.Error("cannot open the store", slog.String("error", err.Error()))
		return exitCode(exitFail)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("closing the store", slog.String("error", err.Error()))
		}
	}()

	// Holder detection (docs/operations.md): this process's instance id,
	// held in the store until it stops, so that the idempotency claims of a
	// process that died are taken over at once rather than after their lease.
	instance, releaseInstance, err := assembly.HoldInstance(ctx, st.store)
	switch {
	case heldElsewhere(err):
		log.Error("cannot start: another server process serves this SQLite database", slog.String("database", st.location), slog.String("error", err.Error()))
		return exitCode(exitFail)
	case err != nil:
		log.Warn("no holder detection: claims of a process that died wait out their lease", slog.String("error", err.Error()))
		instance, releaseInstance = "", func() error { return nil }
	}
	defer func() {
		if err := releaseInstance(); err != nil {
			log.Error("releasing the instance", slog.String("error", err.Error()))
		}
	}()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error("cannot listen", slog.String("addr", cfg.Addr), slog.String("error", err.Error()))
		return exitCode(exitFail)
	}
	defer ln.Close()
	registry := httpapi.NewRegistry()
	if c, ok := st.store.(interface{ Collectors() []prometheus.Collector }); ok {
		registry.MustRegister(c.Collectors()...) // database failures and retries by class
	}
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = "http://" + ln.Addr().String()
	}
	wcfg := assembly.Config{
		Mode:        cfg.Mode,
		AdminToken:  cfg.AdminToken,
		BaseURL:     baseURL,
		RedisURL:    cfg.RedisURL,
		ReadLimit:   cfg.ReadLimit,
		WriteLimit:  cfg.WriteLimit,
		Logger:      log,
		Now:         p.now,
		Registry:    registry,
		X402PayTo:   cfg.X402PayTo,
		X402Network: cfg.X402Network,
		X402EURUSD:  cfg.X402EURUSD,

		StripeSecretKey:        cfg.StripeSecretKey,
		StripeWebhookSecrets:   cfg.StripeWebhookSecrets,
		StripeAPIURL:           cfg.StripeAPIURL,
		StripeConnectCountry:   cfg.StripeConnectCountry,
		StripeSuccessURL:       cfg.StripeSuccessURL,
		StripeConnectReturnURL: cfg.StripeConnectReturnURL,
		CategoriesFile:         cfg.CategoriesFile,
		OfferSecret:            cfg.OfferSecret,
		IPToASNFile:            cfg.IPToASNFile,
		DatacentersFile:        cfg.DatacentersFile,
		TrustedProxies:         cfg.TrustedProxies,
		Lifecycle:              cfg.Lifecycle,
		CanaryRate:             cfg.CanaryRate,
		MCPAllowedOrigins:      cfg.MCPAllowedOrigins,
		BodyReaders:            cfg.Guard.BodyReaders,
		Instance:               instance,

		WebhooksAllowLoopback: cfg.WebhooksAllowLoopback,
		JobConcurrency:        cfg.JobConcurrency,
		Gate:                  cfg.Gate,
		Scoring:               cfg.Scoring,
	}
	if cfg.PreviousOfferSecret != "" {
		wcfg.PreviousOfferSecrets = []string{cfg.PreviousOfferSecret}
	}
	wcfg.X402Facilitator, wcfg.X402RPC, wcfg.X402RateURL = cfg.X402FacilitatorURL, cfg.X402RPCURL, cfg.X402RateURL
	built, err := assembly.Build(wcfg, st)
	if err != nil {
		log.Error("cannot start", slog.String("error", err.Error()))
		return exitCode(exitFail)
	}
	srv := &http.Server{
		Handler: httpapi.WithDeadline(built.HTTP, cfg.RequestTimeout),
		// A slow client holds a body slot at most ReadTimeout (slowloris;
		// docs/operations.md, "The process guard").
		ReadHeaderTimeout: cfg.Guard.ReadHeaderTimeout,
		ReadTimeout:       cfg.Guard.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Requests do not inherit ctx: a signal must let them finish
		// (Shutdown drains them) rather than cancel them outright.
	}

	adminAPI := "disabled"
	if cfg.AdminToken != "" {
		adminAPI = "enabled" // the token itself is never logged
	} else {
		log.Info(adminAPIOffMessage)
	}
	log.Info("listening",
		slog.String("addr", ln.Addr().String()),
		slog.String("store", st.kind),
		slog.String("database", st.location),
		slog.String("mode", cfg.Mode),
		slog.String("admin_api", adminAPI),
		slog.String("base_url", baseURL),
		slog.String("instance", instance),
	)

	// Background work stops with ctx, before the store is closed.
	bg, stopBackground := context.WithCancel(ctx)
	var background sync.WaitGroup
	if cfg.NoBackground {
		// Fill counts live in this process until it stores them: only it
		// can. Everything else is the other instances' (--background).
		log.Info("background work off: this instance answers requests and stores its fill counts only")
		background.Go(func() { built.RunFillCounts(bg) })
	} else {
		background.Go(func() { assembly.RunIdempotencyPurge(bg, wcfg, st, 0) })
		// What is kept only for a while (fill counts by day): hourly, in batches.
		background.Go(func() { assembly.RunRetention(bg, wcfg, st, 0) })
		background.Go(func() { built.RunBackground(bg) }) // attribution: the clearing sweep, fill counts
		// x402 settlements the facilitator did not answer: every minute.
		background.Go(func() { built.RunX402Reconciliation(bg, 0) })
		// Pending payouts: resolved at start, then every minute.
		background.Go(func() { built.RunPayoutRecovery(bg, 0) })
		// Open checkout sessions whose webhook never came: asked about every 5
		// minutes (live mode; the test provider has none).
		background.Go(func() { built.RunCheckoutReconciliation(bg, 0) })
		// Webhooks: dispatch, delivery with retries, the 30-day purge.
		background.Go(func() { built.RunWebhooks(bg) })
		// The job queue (vetting gate, scoring): jobs of the kinds with a handler.
		background.Go(func() { built.RunJobs(bg) })
	}
	defer func() { stopBackground(); background.Wait() }()

	if cfg.PprofAddr != "" {
		pl, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			log.Error("cannot listen for the profiler", slog.String("addr", cfg.PprofAddr), slog.String("error", err.Error()))
			return exitCode(exitFail)
		}
		defer pl.Close()
		// Where requests wait (channels, locks, the store's connections):
		// /debug/pprof/block and /debug/pprof/mutex. Sampled, and only
		// while profiling is on: each blocking event of 10 µs or more, one
		// contended mutex in 10.
		runtime.SetBlockProfileRate(10_000)
		runtime.SetMutexProfileFraction(10)
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		go (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(pl)
		log.Info("profiler listening", slog.String("addr", pl.Addr().String()))
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		// Serve returned without Shutdown: the listener failed.
		log.Error("server stopped", slog.String("error", err.Error()))
		return exitCode(exitFail)
	case <-ctx.Done():
	}

	log.Info("shutting down", slog.String("drain_timeout", shutdownTimeout.String()))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Connections still busy after the timeout are cut.
		log.Error("requests did not drain in time; closing their connections", slog.String("error", err.Error()))
		_ = srv.Close()
		return exitCode(exitFail)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped")
	return nil
}

// adminAPIOffMessage is logged at start when no admin token is configured:
// admin calls then answer 403 admin_api_disabled.
const adminAPIOffMessage = "the admin API is off: start the server with --admin-token <token> or XPROMO_ADMIN_TOKEN=<token> to enable it"
