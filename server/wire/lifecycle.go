package wire

import (
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// lifecycleService builds the lifecycle review on the apps domain's status
// machine; a suspension it makes invalidates delivery and the SDK
// endpoints' record of the app, so its campaigns and its fills stop at once.
func lifecycleService(cfg Config, store storage.Store, m *market.Service, attr *attribution.Service) (*lifecycle.Service, error) {
	appsSvc, _, err := appsServices(cfg, store)
	if err != nil {
		return nil, err
	}
	return &lifecycle.Service{
		Update: storage.Updater[lifecycle.Tx](store),
		View:   storage.Viewer[lifecycle.Tx](store),
		Now:    cfg.Now,
		Apps:   appsSvc,
		Rules:  cfg.Lifecycle,
		Log:    cfg.Logger.With("component", "lifecycle"),
		Suspended: func(appID string) {
			attr.ForgetApp(appID)
			m.Invalidate()
		},
	}, nil
}
