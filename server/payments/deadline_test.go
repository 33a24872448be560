package payments_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
)

// A payout whose reservation committed answers within its request's
// deadline when the database then stops answering: 503 unavailable asking
// for a retry with the same Idempotency-Key, instead of waiting on the
// database with no bound (issue 31: payouts unanswered within the client's
// 30 s timeout during a partition and a frozen primary). The payout stays
// pending; the retry, once the database is back, answers its outcome, and
// nothing is paid or settled twice. PostgreSQL only: SQLite's database is a
// local file, which has no network to lose.
func TestPayoutAnswersWithinDeadlineWhenTheDatabaseStopsAnswering(t *testing.T) {
	direct := pgtest.NewTestDatabase(t)
	hole := pgtest.NewRelay(t, direct)
	db, err := postgres.Open(context.Background(), hole.URL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	f := newFixture(t, db, true)
	real := f.svc.Provider

	for _, c := range []struct {
		name string
		// provider stops the database at its point of the payout.
		provider func() *provider
	}{
		{"after the transfer", func() *provider {
			return &provider{Provider: real, transfer: func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
				tr, err := real.Transfer(ctx, r)
				hole.Hold() // the settlement finds no database
				return tr, err
			}}
		}},
		{"before the transfer", func() *provider {
			return &provider{Provider: real, transfer: func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
				hole.Hold() // the test provider cannot record the transfer
				return real.Transfer(ctx, r)
			}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := f.addApp(t, "app_"+strings.ReplaceAll(c.name, " ", "_"), xpromo.AppStatusLive)
			f.earn(t, app, 10_000, ledger.EarnCash)
			key := idempotency.Ref{Scope: "app:" + app, Key: "k1"}
			f.svc.Provider = c.provider()

			// The request's deadline, as --request-timeout sets it.
			ctx, cancel := context.WithTimeout(idempotency.WithRef(context.Background(), key), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := f.svc.Payout(ctx, app); done <- err }()
			var perr error
			select {
			case perr = <-done:
			case <-time.After(time.Minute):
				hole.Resume() // let the hung payout end before the cleanups
				t.Fatal("the payout waited on the unanswering database a minute past its deadline")
			}
			f.svc.Provider = real
			hole.Resume()
			assertCode(t, perr, apperr.Unavailable, 503)
			var e *apperr.Error
			require.True(t, errors.As(perr, &e))
			assert.Contains(t, e.Message, "same Idempotency-Key")
			p := f.pendingPayout(t, app)
			assert.Equal(t, int64(7000), p.AmountCents)

			// The client's retry, with the same key, once the database is
			// back: the outcome, from the one transfer.
			got, err := f.freshService(nil).Payout(idempotency.WithRef(context.Background(), key), app)
			require.NoError(t, err)
			assert.Equal(t, p.ID, got.ID)
			assert.Equal(t, payments.PayoutSent, got.Status)
			tr, found, err := real.FindTransfer(context.Background(), payments.TransferRequest{IdempotencyKey: p.ID})
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, tr.TransferID, got.TransferID)
			assert.Equal(t, int64(0), f.balance(t, app), "paid out once")
			assert.Len(t, f.clearingLines(t, p.ID), 2, "reserved once, settled once")
			assert.Len(t, f.payoutEvents(t, app), 1, "payout.sent once")
		})
	}
	f.verify(t)
}
