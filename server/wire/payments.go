package wire

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
)

// errLiveNeedsStripe is why a live server refuses to start: live mode moves
// real money, and the Stripe provider that would move it is not built yet.
var errLiveNeedsStripe = errors.New("live mode needs the Stripe configuration of the payments issue (Stripe Checkout and Connect), which this build does not have yet; run in test mode (-mode test), where no money moves")

func paymentsService(cfg Config, store storage.Store) (*payments.Service, error) {
	if cfg.Mode != httpapi.ModeTest {
		return nil, errLiveNeedsStripe
	}
	x402, err := payments.NewX402Config(true, cfg.X402Network, cfg.X402PayTo, cfg.X402EURUSD)
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
