package attribution_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
)

// TestClearedChainEventsReachEachAppOnce: a cleared chain's two events are
// stored as one outbox row each for both apps, yet each app sees
// chain.state_changed and chain.cleared once, under ids of its own, in the
// events API's order and in the dispatch, and finds each by its id.
func TestClearedChainEventsReachEachAppOnce(t *testing.T) {
	eachWorld(t, benchRules, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		w.topUp(p.adv, 1_000_000)
		w.activated([]pair{p}, 3)
		// The claims' and heartbeats' events are dispatched already.
		w.dispatch()
		res, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		require.Equal(t, 3, res.Cleared)

		seen := map[string]string{} // event id → app
		for _, app := range []string{p.pub, p.adv} {
			var cleared []outbox.Event
			for _, e := range w.outbox(app) {
				if e.Type != xpromo.EventChainStateChanged && e.Type != xpromo.EventChainCleared {
					continue
				}
				var d xpromo.ChainEventData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				if d.Chain.State == xpromo.ChainCleared {
					cleared = append(cleared, e)
				}
			}
			require.Len(t, cleared, 6, "state_changed and cleared for each of 3 chains, once for %s", app)
			for i, e := range cleared {
				assert.Equal(t, app, e.AppID)
				assert.Regexp(t, `^evt_[0-9a-z]{26}$`, e.ID)
				_, dup := seen[e.ID]
				assert.False(t, dup, "an event id is one app's")
				seen[e.ID] = app
				// Each chain's state change lists before its clearing.
				if i%2 == 0 {
					assert.Equal(t, xpromo.EventChainStateChanged, e.Type)
				} else {
					assert.Equal(t, xpromo.EventChainCleared, e.Type)
				}
				require.NoError(t, w.store.View(w.ctx, func(ctx context.Context, tx storage.Tx) error {
					got, found, err := tx.AppEvent(ctx, app, e.ID)
					assert.True(t, found)
					assert.Equal(t, e, got)
					return err
				}))
			}
		}

		// The dispatch hands out each app's event once (beside the
		// advertiser's score.updated: its first clearing took it live).
		n := 0
		for _, e := range w.dispatch() {
			if e.Type == xpromo.EventScoreUpdated {
				continue
			}
			n++
			assert.Equal(t, seen[e.ID], e.AppID, e.ID)
			delete(seen, e.ID)
		}
		assert.Equal(t, 12, n)
		assert.Empty(t, seen, "every event dispatched")
		w.verify()
	})
}

// dispatch claims every undispatched event as the webhook worker does.
func (w *world) dispatch() []outbox.Event {
	w.t.Helper()
	var out []outbox.Event
	require.NoError(w.t, w.store.Update(w.ctx, func(ctx context.Context, tx storage.Tx) (err error) {
		out, err = tx.ClaimUndispatched(ctx, w.now().Add(time.Hour), 1000)
		return err
	}))
	return out
}
