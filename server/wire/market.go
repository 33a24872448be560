package wire

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// marketService loads the categories, reconciles their floors with the
// stored floor history (a configured floor above the current one fails with
// floor_cannot_rise, and the server must not start) and builds the service.
func marketService(cfg Config, store storage.Store) (*market.Service, error) {
	catalogue, err := market.LoadCatalogue(cfg.CategoriesFile)
	if err != nil {
		return nil, err
	}
	svc := &market.Service{
		Update:    market.Txer(storage.Updater[market.Tx](store)),
		View:      market.Txer(storage.Viewer[market.Tx](store)),
		Now:       cfg.Now,
		Catalogue: catalogue,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := svc.Reconcile(ctx); err != nil {
		return nil, err
	}
	return svc, nil
}
