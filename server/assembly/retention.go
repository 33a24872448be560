package assembly

import (
	"context"
	"log/slog"
	"time"

	"github.com/xpromo/xpromo/server/retention"
	"github.com/xpromo/xpromo/server/storage"
)

// RunRetention purges what is kept only for a while (package retention:
// fill counts by day past 400 days) now and then every interval
// (retention.DefaultInterval, an hour, if 0), on the server's clock, until
// ctx ends.
func RunRetention(ctx context.Context, cfg Config, store storage.Store, interval time.Duration) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	svc := &retention.Service{Update: storage.Updater[retention.Tx](store), Now: cfg.Now}
	svc.Run(ctx, interval, cfg.Logger)
}
