package assembly

import (
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// lifecycleService builds the lifecycle review on the apps domain's status
// machine; a suspension or reinstatement it makes invalidates delivery and
// the SDK endpoints' record of the app, so its campaigns and its fills stop
// (or resume) at once.
func lifecycleService(cfg Config, store storage.Store, m *market.Service, attr *attribution.Service) (*lifecycle.Service, error) {
	appsSvc, _, err := appsServices(cfg, store)
	if err != nil {
		return nil, err
	}
	return &lifecycle.Service{
		Update:        storage.Updater[lifecycle.Tx](store),
		View:          storage.Viewer[lifecycle.Tx](store),
		Now:           cfg.Now,
		Apps:          appsSvc,
		Rules:         cfg.Lifecycle,
		Log:           cfg.Logger.With("component", "lifecycle"),
		StatusChanged: statusChanged(m, attr),
	}, nil
}

// statusChanged is what this instance does when an app's status changed
// outside trading (the lifecycle review, an operator's action): it drops the
// SDK endpoints' cached record of the app and re-reads delivery, so that a
// suspended app's fills answer publisher_not_eligible and its campaigns
// stop with the very next request (other instances within their caches'
// 30 seconds).
func statusChanged(m *market.Service, attr *attribution.Service) func(appID string) {
	return func(appID string) {
		attr.ForgetApp(appID)
		m.Invalidate()
	}
}
