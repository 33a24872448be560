package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// /metrics goes on serving the backlog gauges when the store stops
// answering (a failover): the figures of the last successful read, with
// xpromo_gauges_up 0 and xpromo_gauges_stale_seconds growing from that
// read, instead of a failed scrape or figures that fall to 0.
func TestGaugesWhenTheStoreCannotAnswer(t *testing.T) {
	s := storagetest.SQLite(t)
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	ts := serve(t, s, start, unlimited)
	app, _ := ts.newApp()
	created := start.Add(-10 * time.Minute)
	require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_gauge", AppID: app, AmountCents: 5000, Destination: "acct_test",
			Status: payments.PayoutPending, CreatedAt: created, UpdatedAt: created})
		return err
	}))
	metrics := func() string {
		t.Helper()
		res := ts.send(request{method: http.MethodGet, path: "/metrics", raw: true})
		require.Equal(t, http.StatusOK, res.status, res.body)
		return res.body + "\n"
	}

	m := metrics()
	assert.Contains(t, m, "\nxpromo_gauges_up 1\n")
	assert.Contains(t, m, "\nxpromo_gauges_stale_seconds 0\n")
	assert.Contains(t, m, "\nxpromo_payouts_pending 1\n")
	assert.Contains(t, m, "\nxpromo_payouts_pending_oldest_seconds 600\n")

	require.NoError(t, s.Close()) // every read fails from now on
	for _, stale := range []string{"20", "40"} {
		ts.clock.Advance(20 * time.Second) // past the collector's cache (15 s): it reads again, and fails
		m = metrics()
		assert.Contains(t, m, "\nxpromo_gauges_up 0\n")
		assert.Contains(t, m, "\nxpromo_gauges_stale_seconds "+stale+"\n", "since the last successful read")
		assert.Contains(t, m, "\nxpromo_payouts_pending 1\n", "the last figures stay")
		assert.Contains(t, m, "\nxpromo_payouts_pending_oldest_seconds 600\n", "as of the last read")
	}
}
