package sqlite

import (
	"context"

	"github.com/xpromo/xpromo/server/scoring"
)

// appTradeSQL counts the chains of an app, as publisher or advertiser, by
// what became of their install (scoring.Trade).
const appTradeSQL = `SELECT
    COALESCE(SUM(CASE WHEN state IN ('installed', 'activated_48h', 'cleared', 'refunded') THEN 1 ELSE 0 END), 0),
    COALESCE(SUM(CASE WHEN state IN ('activated_48h', 'cleared') THEN 1 ELSE 0 END), 0),
    COALESCE(SUM(CASE WHEN state = 'refunded' AND reason = 'not_activated' THEN 1 ELSE 0 END), 0),
    COALESCE(SUM(CASE WHEN state = 'refunded' AND reason = 'not_activated' AND heartbeat_seq > 0 THEN 1 ELSE 0 END), 0)
FROM chains WHERE publisher_app_id = ?1 OR advertiser_app_id = ?1`

func (t *tx) AppTrade(ctx context.Context, appID string) (scoring.Trade, error) {
	var tr scoring.Trade
	err := t.tx.QueryRowContext(ctx, appTradeSQL, appID).Scan(&tr.Installs, &tr.Retained, &tr.Lapsed, &tr.Silent)
	return tr, wrap(err)
}
