package attribution_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
)

// kinds counts events by type, leaving out score.updated (apps announce
// their registration and status changes: TestScoreEvents).
func kinds(evs []outbox.Event) map[xpromo.EventType]int {
	out := map[xpromo.EventType]int{}
	for _, e := range evs {
		if e.Type != xpromo.EventScoreUpdated {
			out[e.Type]++
		}
	}
	return out
}

// TestOutbox: each state change writes its events, for both apps, in its
// transaction; a refused claim whose offer verified tells both apps too,
// with fraud.flagged beside chain.rejected.
func TestOutbox(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		ch, tok, err := w.clickAndInstall(p, "dev-1", residential)
		require.NoError(t, err)
		for _, app := range []string{p.pub, p.adv} {
			assert.Equal(t, map[xpromo.EventType]int{xpromo.EventChainStateChanged: 1}, kinds(w.outbox(app)))
			// The first trade moved both apps to throttled: score.updated,
			// after registration's and approval's.
			var statuses []xpromo.AppStatus
			for _, e := range w.outbox(app) {
				if e.Type == xpromo.EventScoreUpdated {
					var d xpromo.ScoreEventData
					require.NoError(t, json.Unmarshal(e.Data, &d))
					statuses = append(statuses, d.Score.Status)
				}
			}
			// (Events of one instant have no order between them.)
			assert.ElementsMatch(t, []xpromo.AppStatus{"pending", "approved", "throttled"}, statuses, app)
		}
		w.clock.Advance(49 * time.Hour)
		_, err = w.heartbeat(p.advKey, p.adv, "dev-1", tok, 1)
		require.NoError(t, err)
		_, err = w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		_, err = w.claim(p, tok, "dev-2", time.Second, residential) // expired by now
		assertFraud(t, err, attribution.FraudTokenExpired)
		for _, app := range []string{p.pub, p.adv} {
			evs := w.outbox(app)
			assert.Equal(t, map[xpromo.EventType]int{xpromo.EventChainStateChanged: 3, xpromo.EventChainCleared: 1,
				xpromo.EventChainRejected: 1, xpromo.EventFraudFlagged: 1}, kinds(evs), app)
			for _, e := range evs {
				if e.Type == xpromo.EventFraudFlagged {
					var fd xpromo.FraudEventData
					require.NoError(t, json.Unmarshal(e.Data, &fd))
					assert.Equal(t, xpromo.ChainReason(attribution.FraudTokenExpired), fd.Reason)
					assert.Nil(t, fd.PreviousState, "a refused claim is recorded rejected at once")
					assert.Equal(t, p.adv, fd.Chain.AdvertiserAppID)
				}
				var pl xpromo.ChainEventData
				require.NoError(t, json.Unmarshal(e.Data, &pl))
				if e.Type == xpromo.EventChainCleared {
					assert.Equal(t, ch.ID, pl.Chain.ChainID)
					assert.Equal(t, xpromo.ChainCleared, pl.Chain.State)
					require.NotNil(t, pl.PreviousState)
					assert.Equal(t, xpromo.ChainActivated48h, *pl.PreviousState)
					require.NotNil(t, pl.Chain.Countersignature)
				}
			}
		}
	})
}

// TestHeartbeatChecks: a heartbeat is signed by the app's key, fresh, for
// an install of that app on that device, with a growing seq.
func TestHeartbeatChecks(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		_, tok, err := w.clickAndInstall(p, "dev-1", residential)
		require.NoError(t, err)
		send := func(kp token.KeyPair, app, device string, seq int64, ts time.Time) error {
			hb, err := token.SignHeartbeat(kp.Private, kp.ID, token.HeartbeatClaims{AppID: app, DeviceID: device, TokenHash: token.TokenHashString(tok), Seq: seq, SentAt: ts.Unix()})
			require.NoError(t, err)
			_, err = w.attr.Heartbeat(w.ctx, hb)
			return err
		}
		require.NoError(t, send(p.advKey, p.adv, "dev-1", 5, w.now()))
		assertFraud(t, send(p.advKey, p.adv, "dev-1", 5, w.now()), attribution.FraudTokenReused)
		assertFraud(t, send(p.advKey, p.adv, "dev-1", 6, w.now().Add(-10*time.Minute)), attribution.FraudTokenExpired)
		assertFraud(t, send(p.pubKey, p.adv, "dev-1", 6, w.now()), attribution.FraudBadSignature) // another app's key
		err = send(p.advKey, p.adv, "dev-other", 6, w.now())
		assert.Equal(t, apperr.NotFound, apperr.Code(err), "no install on that device")
		_, err = w.attr.Heartbeat(w.ctx, "not.a.heartbeat")
		assertFraud(t, err, attribution.FraudBadSignature)
		require.NoError(t, send(p.advKey, p.adv, "dev-1", 6, w.now()))
	})
}

// TestConcurrentSweeps: two sweeps at once settle every due chain exactly
// once (on PostgreSQL they claim disjoint batches with SKIP LOCKED; SQLite
// has one writer), and the ledger verifies.
func TestConcurrentSweeps(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		var pairs []pair
		for range 4 {
			p := w.pair("productivity", 0)
			w.topUp(p.adv, 100_000)
			pairs = append(pairs, p)
		}
		const n = 300
		w.activated(pairs, n)
		w.attr.SweepBatch = 25
		var wg sync.WaitGroup
		results := make([]attribution.SweepResult, 3)
		for i := range results {
			wg.Go(func() {
				var err error
				results[i], err = w.attr.Sweep(w.ctx)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		total := 0
		for _, r := range results {
			assert.Zero(t, r.Failed)
			total += r.Cleared
		}
		// A sweeper that found a short batch while others held the rest
		// stops early; one more sweep finishes whatever is left.
		rest, err := w.attr.Sweep(w.ctx)
		require.NoError(t, err)
		assert.Equal(t, n, total+rest.Cleared)
		var earned int64
		for _, p := range pairs {
			for _, l := range w.wallet(p.pub) {
				require.Equal(t, ledger.TypeEarn, l.Type)
				earned += l.Amount
			}
		}
		assert.Equal(t, int64(n*280), earned, "each chain earned once")
		w.verify()
	})
}
