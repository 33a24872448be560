package wire

import (
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
)

func appsServices(cfg Config, store storage.Store) (*apps.Service, httpapi.Authenticator, error) {
	return &apps.Service{}, nil, nil
}
