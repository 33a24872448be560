package assembly

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// marketService loads the categories, reconciles their floors with the
// stored floor history (a configured floor above the current one fails with
// floor_cannot_rise, and the server must not start) and builds the service:
// rate card, campaigns, stats, delivery and the trading rules.
func marketService(cfg Config, store storage.Store) (*market.Service, error) {
	catalogue, err := market.LoadCatalogue(cfg.CategoriesFile)
	if err != nil {
		return nil, err
	}
	// The trading rules move app statuses through the apps domain's
	// Transition (the service is stateless: this instance is as good as the
	// one the API uses).
	appsSvc, _, err := appsServices(cfg, store)
	if err != nil {
		return nil, err
	}
	svc := &market.Service{
		Update:    market.Txer(storage.Updater[market.Tx](store)),
		View:      market.Txer(storage.Viewer[market.Tx](store)),
		Now:       cfg.Now,
		Catalogue: catalogue,
		Apps:      appsSvc,
		// The go-live bar is a lifecycle setting (docs/apps.md).
		LiveMinCleared:   cfg.Lifecycle.WithDefaults().LiveMinCleared,
		LiveMinRetention: cfg.Lifecycle.WithDefaults().LiveMinRetention,
		// SpendToday is set by the attribution wiring, which owns the
		// record of which campaign each hold is for. Delivery is built on
		// the first fill (or Rebuild), once it is set.
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := svc.Reconcile(ctx); err != nil {
		return nil, err
	}
	return svc, nil
}
