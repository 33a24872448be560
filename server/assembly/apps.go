package assembly

import (
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
)

// appsServices builds the apps service; it is also the API-key
// authenticator. The mode decides the key prefix (xp_live_ or xp_test_).
func appsServices(cfg Config, store storage.Store) (*apps.Service, httpapi.Authenticator, error) {
	svc := &apps.Service{
		Update: storage.Updater[apps.Tx](store),
		View:   storage.Viewer[apps.Tx](store),
		Now:    cfg.Now,
		Live:   cfg.Mode == httpapi.ModeLive,
	}
	return svc, svc, nil
}
