package wire

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/x402"
)

// errLiveNeedsStripe is why a live server refuses to start: live mode moves
// real money, and the Stripe provider that would move it is not built yet.
var errLiveNeedsStripe = errors.New("live mode needs the Stripe configuration of the payments issue (Stripe Checkout and Connect), which this build does not have yet; run in test mode (-mode test), where no money moves")

func paymentsService(cfg Config, store storage.Store) (*payments.Service, error) {
	if cfg.Mode != httpapi.ModeTest {
		return nil, errLiveNeedsStripe
	}
	x402, err := x402Config(cfg)
	if err != nil {
		return nil, err
	}
	return &payments.Service{
		Update: storage.Updater[payments.WriteTx](store),
		View:   storage.Viewer[payments.Tx](store),
		Ledger: store,
		Provider: &payments.TestProvider{
			BaseURL: cfg.BaseURL,
			Update:  storage.Updater[payments.TestTransferTx](store),
			View:    storage.Viewer[payments.TestTransferTx](store),
			Now:     cfg.Now,
		},
		TestMode: true,
		X402:     x402,
		Now:      cfg.Now,
		Log:      cfg.Logger,
	}, nil
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
