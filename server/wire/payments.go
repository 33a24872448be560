package wire

import (
	"errors"

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
