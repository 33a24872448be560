package payments_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Under an Idempotency-Key an adjustment's ledger key derives from the
// request: every run of that request posts (and audits) one line, even
// outside the API's unit of work. Another request, or none, is another
// adjustment.
func TestAdjustUnderAnIdempotencyKeyPostsOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		app := registerApp(t, s, start)
		ref := idempotency.Ref{Scope: "admin", Key: idempotency.StoredKey("adj-1"), Expires: start.Add(idempotency.DefaultTTL)}
		ctx := idempotency.WithRef(context.Background(), ref)

		first, err := f.svc.Adjust(ctx, app, 1500, "goodwill")
		require.NoError(t, err)
		again, err := f.svc.Adjust(ctx, app, 1500, "goodwill")
		require.NoError(t, err)
		assert.Equal(t, first, again, "a second run returns the first run's line")
		assert.Len(t, f.wallet(t, app), 1)

		// The same key, used again once expired, is another request.
		ref.Expires = ref.Expires.Add(idempotency.DefaultTTL)
		_, err = f.svc.Adjust(idempotency.WithRef(context.Background(), ref), app, 1500, "goodwill")
		require.NoError(t, err)
		// Without a key every call is a correction of its own.
		_, err = f.svc.Adjust(context.Background(), app, 1500, "goodwill")
		require.NoError(t, err)
		assert.Len(t, f.wallet(t, app), 3)
		assert.EqualValues(t, 4500, f.balance(t, app))

		var audited int
		require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			entries, err := tx.AuditPage(ctx, nil, 100)
			for _, e := range entries {
				if e.Action == "app.adjustment" {
					audited++
				}
			}
			return err
		}))
		assert.Equal(t, 3, audited, "one audit entry per adjustment")
		f.verify(t)
	})
}
