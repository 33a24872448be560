package assembly

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/x402"
)

func paymentsService(cfg Config, store storage.Store) (*payments.Service, *stripe.Webhook, error) {
	live := cfg.Mode == httpapi.ModeLive
	if live {
		if err := CheckStripe(cfg); err != nil {
			return nil, nil, err
		}
	}
	x402, err := x402Config(cfg)
	if err != nil {
		return nil, nil, err
	}
	svc := &payments.Service{
		Update:               storage.Updater[payments.WriteTx](store),
		View:                 storage.Viewer[payments.Tx](store),
		Ledger:               store,
		TestMode:             !live,
		X402:                 x402,
		Now:                  cfg.Now,
		Log:                  cfg.Logger,
		CheckoutReconcileAge: cfg.CheckoutReconcileAge,
		ConnectReturnURL:     cfg.StripeConnectReturnURL,
	}
	if !live {
		// Test mode: no money moves, whatever Stripe settings are given.
		svc.Provider = &payments.TestProvider{
			BaseURL: cfg.BaseURL,
			Update:  storage.Updater[payments.TestTransferTx](store),
			View:    storage.Viewer[payments.TestTransferTx](store),
			Now:     cfg.Now,
		}
		return svc, nil, nil
	}
	client := cfg.StripeHTTPClient
	if client == nil {
		client = outbound.New(outbound.Options{RequireHTTPS: true, Timeout: 80 * time.Second, UserAgent: "xpromo-server (stripe)"})
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if svc.ConnectReturnURL == "" {
		svc.ConnectReturnURL = base + "/"
	}
	provider := stripe.New(stripe.Config{
		SecretKey:         cfg.StripeSecretKey,
		APIURL:            cfg.StripeAPIURL,
		HTTPClient:        client,
		SuccessURL:        firstSet(cfg.StripeSuccessURL, base+"/"),
		CancelURL:         firstSet(cfg.StripeCancelURL, cfg.StripeSuccessURL, base+"/"),
		ConnectCountry:    cfg.StripeConnectCountry,
		MaxNetworkRetries: cfg.StripeMaxNetworkRetries,
	})
	svc.Provider = provider
	hook := &stripe.Webhook{
		Secrets:  cfg.StripeWebhookSecrets,
		Livemode: provider.Livemode(),
		Payments: svc,
		Now:      cfg.Now,
		Log:      cfg.Logger,
	}
	return svc, hook, nil
}

// CheckStripe checks the Stripe settings of a live server, saying which one
// is missing or wrong: a secret key (sk_live_ or rk_live_; a test key only
// when StripeAPIURL points somewhere other than Stripe, for a rehearsal
// against stripe-mock), at least one webhook signing secret (whsec_), and
// the country of the connected accounts.
func CheckStripe(cfg Config) error {
	key := cfg.StripeSecretKey
	switch {
	case key == "":
		return errors.New("live mode needs the Stripe secret key (--stripe-secret-key, XPROMO_STRIPE_SECRET_KEY): live mode moves real money through Stripe; run in test mode (--mode test) to try the server without one")
	case !strings.HasPrefix(key, "sk_") && !strings.HasPrefix(key, "rk_"):
		return errors.New("the Stripe secret key must be a secret (sk_…) or restricted (rk_…) key; a publishable key (pk_…) cannot create sessions or transfers")
	case !stripe.Livemode(key) && (cfg.StripeAPIURL == "" || strings.TrimRight(cfg.StripeAPIURL, "/") == stripe.DefaultAPIURL):
		return errors.New("live mode refuses a Stripe test key (sk_test_/rk_test_) against Stripe's API: use a live key, or set --stripe-api-url to a rehearsal counterpart such as stripe-mock")
	}
	if len(cfg.StripeWebhookSecrets) == 0 {
		return errors.New("live mode needs the signing secret of the Stripe webhook endpoint (--stripe-webhook-secret, XPROMO_STRIPE_WEBHOOK_SECRET; comma-separated while rolling it): without it no top-up is ever credited")
	}
	for _, s := range cfg.StripeWebhookSecrets {
		if !strings.HasPrefix(s, "whsec_") {
			return errors.New("a Stripe webhook signing secret starts with whsec_ (Dashboard → Developers → Webhooks → the endpoint → Signing secret)")
		}
	}
	if len(cfg.StripeConnectCountry) != 2 || strings.ToUpper(cfg.StripeConnectCountry) != cfg.StripeConnectCountry {
		return errors.New("live mode needs the country of the apps' Stripe Connect accounts as two capital letters (--stripe-connect-country, XPROMO_STRIPE_CONNECT_COUNTRY, e.g. DE)")
	}
	return nil
}

func firstSet(v ...string) string {
	for _, s := range v {
		if s != "" && s != "/" {
			return s
		}
	}
	return ""
}

// DefaultCheckoutReconcileInterval is how often RunCheckoutReconciliation
// runs.
const DefaultCheckoutReconcileInterval = 5 * time.Minute

// RunCheckoutReconciliation asks the provider about open checkout sessions
// whose webhook never came (payments.Service.ReconcileCheckouts) at once and
// then every interval (DefaultCheckoutReconcileInterval if 0) until ctx
// ends. The test provider has nothing to reconcile.
func (s *Server) RunCheckoutReconciliation(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultCheckoutReconcileInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		res, err := s.Payments.ReconcileCheckouts(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.Warn("checkout reconciliation pass", slog.String("error", err.Error()))
		case res.Credited+res.Closed+res.Errors > 0:
			s.cfg.Logger.Info("checkout reconciliation pass", slog.Int("credited", res.Credited), slog.Int("closed", res.Closed), slog.Int("still_open", res.Open), slog.Int("errors", res.Errors))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// DefaultPayoutRecoveryInterval is how often RunPayoutRecovery runs.
const DefaultPayoutRecoveryInterval = time.Minute

// RunPayoutRecovery resolves pending payouts (payments.Service.RecoverPayouts)
// at once and then every interval (DefaultPayoutRecoveryInterval if 0) until
// ctx ends, on the server's clock. Every resolution is logged by the
// service; a failed pass is logged and retried at the next tick. Several
// instances may run it at once.
func (s *Server) RunPayoutRecovery(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPayoutRecoveryInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		res, err := s.Payments.RecoverPayouts(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.Warn("payout recovery pass", slog.String("error", err.Error()))
		case res.Sent+res.Failed+res.Pending > 0:
			s.cfg.Logger.Info("payout recovery pass", slog.Int("sent", res.Sent), slog.Int("failed", res.Failed), slog.Int("still_pending", res.Pending))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// x402Config builds the x402 settings: the quote, and the facilitator and
// chain clients, through server/outbound. Live mode refuses to start without
// a payTo and a facilitator URL; test mode admits loopback URLs (the
// operator's own x402-devchain), never live.
func x402Config(cfg Config) (payments.X402Config, error) {
	test := cfg.Mode == httpapi.ModeTest
	c, err := payments.NewX402Config(test, cfg.X402Network, cfg.X402PayTo, cfg.X402EURUSD)
	if err != nil {
		return c, err
	}
	if !test && cfg.X402Facilitator == "" {
		return c, errors.New("live mode needs an x402 facilitator URL (--x402-facilitator-url) to settle x402 top-ups")
	}
	// Loopback in test mode only: these URLs are the operator's settings,
	// never a caller's, and a developer runs x402-devchain on 127.0.0.1.
	client := outbound.New(outbound.Options{Timeout: x402Timeout, RequireHTTPS: !test, TestOnlyAllowLoopback: test})
	if cfg.X402Facilitator != "" {
		c.Facilitator = &x402.Facilitator{URL: cfg.X402Facilitator, HTTP: client}
	}
	if cfg.X402RPC != "" {
		c.Chain = &x402.Chain{URL: cfg.X402RPC, HTTP: client}
	}
	if cfg.X402RateURL != "" {
		now := cfg.Now
		if now == nil {
			now = time.Now
		}
		c.Rates = &x402.RateSource{URL: cfg.X402RateURL, HTTP: client, Now: now}
	}
	return c, nil
}

// x402Timeout bounds one facilitator call: a settlement waits for its
// transaction to be mined. Past it the settlement is pending, for
// RunX402Reconciliation.
const x402Timeout = 30 * time.Second

// DefaultX402ReconcileInterval is how often RunX402Reconciliation runs.
const DefaultX402ReconcileInterval = time.Minute

// RunX402Reconciliation resolves x402 settlements whose outcome is unknown
// (payments.Service.ReconcileX402) at once and then every interval
// (DefaultX402ReconcileInterval if 0) until ctx ends. Several instances may
// run it at once.
func (s *Server) RunX402Reconciliation(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultX402ReconcileInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		res, err := s.Payments.ReconcileX402(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.Warn("x402 reconciliation pass", slog.String("error", err.Error()))
		case res.Settled+res.Failed+res.Pending > 0:
			s.cfg.Logger.Info("x402 reconciliation pass", slog.Int("settled", res.Settled), slog.Int("failed", res.Failed), slog.Int("still_pending", res.Pending))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
