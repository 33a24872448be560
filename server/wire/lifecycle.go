package wire

import (
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// lifecycleService builds the lifecycle review on the apps domain's status
// machine; a suspension it makes invalidates delivery, so the app's
// campaigns stop at once.
func lifecycleService(cfg Config, store storage.Store, m *market.Service) (*lifecycle.Service, error) {
	appsSvc, _, err := appsServices(cfg, store)
	if err != nil {
		return nil, err
	}
	return &lifecycle.Service{
		Update:    storage.Updater[lifecycle.Tx](store),
		View:      storage.Viewer[lifecycle.Tx](store),
		Now:       cfg.Now,
		Apps:      appsSvc,
		Rules:     cfg.Lifecycle,
		Log:       cfg.Logger.With("component", "lifecycle"),
		Suspended: func(string) { m.Invalidate() },
	}, nil
}
