package wire

import (
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
)

func paymentsService(cfg Config, store storage.Store) (*payments.Service, error) {
	return &payments.Service{}, nil
}
