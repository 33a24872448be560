package wire

import (
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/storage"
)

// idempotencyService keeps Idempotency-Keys in the store. The server's
// background loop should call its Purge periodically (e.g. hourly) to delete
// expired keys; expired keys are ignored anyway, so this only reclaims space.
func idempotencyService(cfg Config, store storage.Store) (*idempotency.Service, error) {
	return &idempotency.Service{
		Update: storage.Updater[idempotency.Tx](store),
		Now:    cfg.Now,
	}, nil
}
