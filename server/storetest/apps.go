package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage"
)

// Apps runs the suite of the apps.Tx methods that change an app's
// registration on a fresh store from newStore: the sqlite and postgres
// packages call it from their tests.
func Apps(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("AppcastURL", func(t *testing.T) { testAppcastURL(t, newStore(t)) })
}

// SetAppAppcastURL sets the URL and updated_at of that app only; "" is
// none, and reads back as "".
func testAppcastURL(t *testing.T, s storage.Store) {
	whApp(t, s, "app_a")
	whApp(t, s, "app_b")
	at := whStart.Add(time.Hour + time.Microsecond)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		return tx.SetAppAppcastURL(ctx, "app_a", "https://example.com/appcast.xml", at)
	})
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		a, ok, err := tx.GetApp(ctx, "app_a", false)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "https://example.com/appcast.xml", a.AppcastURL)
		assert.True(t, at.Equal(a.UpdatedAt), "updated_at %v", a.UpdatedAt)
		assert.True(t, whStart.Equal(a.CreatedAt), "created_at unchanged")
		b, _, err := tx.GetApp(ctx, "app_b", false)
		assert.Empty(t, b.AppcastURL, "another app unchanged")
		assert.True(t, whStart.Equal(b.UpdatedAt))
		return err
	})
	later := at.Add(time.Minute)
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.SetAppAppcastURL(ctx, "app_a", "", later) })
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		a, _, err := tx.GetApp(ctx, "app_a", false)
		assert.Empty(t, a.AppcastURL)
		assert.True(t, later.Equal(a.UpdatedAt))
		return err
	})
}
