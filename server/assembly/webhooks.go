package assembly

import (
	"context"
	"errors"
	"time"

	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/webhooks"
)

// errLoopbackInLive refuses the test-only loopback setting in live mode.
var errLoopbackInLive = errors.New("webhooks: the loopback setting (XPROMO_WEBHOOKS_ALLOW_LOOPBACK) lets endpoints reach the server's own machine; it is refused in live mode")

// DefaultWebhookDeliverers is how many delivery loops each instance runs.
const DefaultWebhookDeliverers = 4

func webhooksService(cfg Config, store storage.Store) (*webhooks.Service, error) {
	if cfg.WebhooksAllowLoopback && cfg.Mode != httpapi.ModeTest {
		return nil, errLoopbackInLive
	}
	opts := outbound.Options{
		RequireHTTPS:          cfg.Mode != httpapi.ModeTest,
		TestOnlyAllowLoopback: cfg.WebhooksAllowLoopback,
	}
	return &webhooks.Service{
		Update: webhooks.Txer(storage.Updater[webhooks.Tx](store)),
		View:   webhooks.Txer(storage.Viewer[webhooks.Tx](store)),
		Client: webhooks.NewClient(opts),
		Policy: webhooks.URLPolicy{Options: opts},
		Now:    cfg.Now,
		Wall:   time.Now,
		Log:    cfg.Logger,
	}, nil
}

// RunWebhooks runs this instance's webhook worker until ctx ends: it
// dispatches new events to the deliveries of subscribed endpoints, delivers
// them (DefaultWebhookDeliverers concurrent claims), retries, and purges
// events and attempts after 30 days (webhooks.Service.Run). Every instance
// runs it; they share the queue through the store.
func (s *Server) RunWebhooks(ctx context.Context) {
	s.Webhooks.Run(ctx, DefaultWebhookDeliverers, 0)
}
