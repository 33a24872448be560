package postgres

import (
	"context"

	"github.com/xpromo/xpromo/server/scoring"
)

// appTradeSQL counts the chains of an app, as publisher or advertiser, by
// what became of their install (scoring.Trade).
const appTradeSQL = `SELECT
    count(*) FILTER (WHERE state IN ('installed', 'activated_48h', 'cleared', 'refunded')),
    count(*) FILTER (WHERE state IN ('activated_48h', 'cleared')),
    count(*) FILTER (WHERE state = 'refunded' AND reason = 'not_activated'),
    count(*) FILTER (WHERE state = 'refunded' AND reason = 'not_activated' AND heartbeat_seq > 0)
FROM chains WHERE publisher_app_id = $1 OR advertiser_app_id = $1`

func (t *tx) AppTrade(ctx context.Context, appID string) (scoring.Trade, error) {
	var n [4]int64
	err := t.queryRow(ctx, appTradeSQL, []any{appID}, &n[0], &n[1], &n[2], &n[3])
	return scoring.Trade{Installs: int(n[0]), Retained: int(n[1]), Lapsed: int(n[2]), Silent: int(n[3])}, wrap(err, "counting an app's trade")
}
