package wire

import (
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

func marketService(cfg Config, store storage.Store) (*market.Service, error) {
	return &market.Service{}, nil
}
