package assembly

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/server/gauges"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage"
)

// gaugeCollector serves the store's backlogs on /metrics: their ages on the
// domain clock (cfg.Now, the test clock in test mode), the cache and its
// staleness on wall.
func gaugeCollector(cfg Config, store storage.Store, wall func() time.Time) *httpapi.GaugeCollector {
	view := storage.Viewer[gauges.Tx](store)
	return &httpapi.GaugeCollector{
		Read: func(ctx context.Context, now time.Time) (gauges.Figures, error) { return gauges.Read(ctx, view, now) },
		Now:  cfg.Now,
		Wall: wall,
		Log:  cfg.Logger,
	}
}
