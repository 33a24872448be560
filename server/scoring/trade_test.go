package scoring_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// TestBehaviorIgnoresPublisherSuspendedRefunds: the behaviour's
// retention_48h and uninstall_rate are over decided installs — retained
// (activated_48h, cleared) or refunded not_activated. Activated installs the
// sweep refunded because their publisher was suspended for fraud
// (publisher_suspended) are installs traded, but decided neither way, as
// the advertiser's retention in stats leaves them out too (both stores).
func TestBehaviorIgnoresPublisherSuspendedRefunds(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
		n := 0
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for _, g := range []struct {
				count      int
				state      attribution.State
				reason     string
				heartbeats int64
			}{
				{6, attribution.StateCleared, "", 2},
				{30, attribution.StateRefunded, attribution.ReasonPublisherSuspended, 2},
				{3, attribution.StateRefunded, attribution.ReasonNotActivated, 1},
				{1, attribution.StateRefunded, attribution.ReasonNotActivated, 0},
			} {
				for range g.count {
					n++
					c := attribution.Chain{ID: fmt.Sprintf("chn_%d", n), Nonce: fmt.Sprintf("nonce_%d", n), State: g.state, Reason: g.reason,
						PublisherAppID: "app_pub", AdvertiserAppID: "app_adv", Platform: xpromo.PlatformMac, HeartbeatSeq: g.heartbeats,
						InstalledAt: now, CreatedAt: now, UpdatedAt: now}
					if _, err := tx.InsertChain(ctx, c); err != nil {
						return err
					}
				}
			}
			return nil
		}))
		for _, app := range []string{"app_adv", "app_pub"} {
			var tr scoring.Trade
			require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
				tr, err = tx.AppTrade(ctx, app)
				return err
			}))
			assert.Equal(t, scoring.Trade{Installs: 40, Retained: 6, Lapsed: 4, Silent: 3}, tr, app)
			b, reasons := scoring.Behavior(tr, 0, scoring.Canaries{}, 1)
			assert.Equal(t, xpromo.Behavior{Retention48h: 0.6, UninstallRate: 0.3}, b, app)
			assert.NotContains(t, reasons, scoring.ReasonRetentionNotMeasured)
		}
	})
}
