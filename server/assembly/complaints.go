package assembly

import (
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/storage"
)

// complaintsService builds the complaints service.
func complaintsService(cfg Config, store storage.Store) *complaints.Service {
	return &complaints.Service{
		Update: storage.Updater[complaints.Tx](store),
		View:   storage.Viewer[complaints.Tx](store),
		Now:    cfg.Now,
	}
}
