package wire

import (
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/storage"
)

func idempotencyService(cfg Config, store storage.Store) (*idempotency.Service, error) {
	return &idempotency.Service{}, nil
}
