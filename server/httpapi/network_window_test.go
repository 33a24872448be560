package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/rollup"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The network's 30 days are whole UTC days, today so far and the 29 before
// it (docs/marketplace.md), not the 720 hours before now: a hold opened a
// minute after the first midnight counts, one opened a minute before it
// does not, though it is less than 30 days old.
func TestNetworkStatsWholeDays(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		adv := e.register(snip())
		pub := e.register(appRequest("Pub", xpromo.PlatformMac))
		now := e.clock.Now()
		first := rollup.Days(30, now)
		require.True(t, first.After(now.AddDate(0, 0, -30)), "the test needs the clock past midnight")
		e.topUp(adv.AppID, 50000, now.AddDate(0, 0, -60))

		post := func(id string, opened time.Time, charge bool) {
			h := ledger.Hold{ID: id, Advertiser: adv.AppID, Publisher: pub.AppID, Amount: 500}
			hold, err := ledger.EscrowHold("hold:"+id, h)
			require.NoError(t, err)
			e.postAt(opened, hold)
			end, err := ledger.EscrowRelease("release:"+id, h)
			if charge {
				end, err = ledger.Clear("clear:"+id, h, ledger.EarnCash)
			}
			require.NoError(t, err)
			e.postAt(opened.Add(49*time.Hour), end)
		}
		post("hold_before_first_day", first.Add(-time.Minute), false) // 29 days and 12 hours old: not counted
		post("hold_on_first_day", first.Add(time.Minute), true)

		res := e.do("GET", "/v1/network-stats", "", nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Contains(t, res.body, `"clearing_rate":1,`, "only the hold of the first whole day is counted")
	})
}
