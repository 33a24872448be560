package assembly_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

func TestClock(t *testing.T) {
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return base }

	c := assembly.NewClock(now, true)
	assert.Equal(t, base, c.Now())
	got, off, err := c.Advance(context.Background(), 48*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, base.Add(48*time.Hour), got)
	assert.Equal(t, 48*time.Hour, off)
	assert.Equal(t, base.Add(48*time.Hour), c.Now())
	assert.Equal(t, 48*time.Hour, c.Offset())
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond, assembly.MaxClockAdvance + time.Second} {
		_, _, err := c.Advance(context.Background(), d)
		assert.Equal(t, apperr.InvalidDuration, apperr.Code(err), "%s", d)
	}
	assert.Equal(t, 48*time.Hour, c.Offset(), "refused moves change nothing")

	live := assembly.NewClock(now, false)
	_, _, err = live.Advance(context.Background(), time.Hour)
	assert.Equal(t, apperr.TestModeOnly, apperr.Code(err))
	assert.Equal(t, 403, apperr.HTTPStatus(err))
	assert.Equal(t, base, live.Now())
	assert.False(t, live.TestMode())
}

// TestTestModeKeptInStore: a test-mode server rebuilt on its store (a
// restart) starts with the test clock where the last one left it and seals
// offers with the same drawn secret; a configured secret wins over the
// stored one. (A live server reads neither: its clock is never advanced,
// and it refuses to start without a configured secret.)
func TestTestModeKeptInStore(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		build := func(cfg assembly.Config) *assembly.Server {
			t.Helper()
			b, err := assembly.Build(cfg, s)
			require.NoError(t, err)
			return b
		}
		first := build(assembly.Config{})
		assert.Zero(t, first.Clock.Offset())
		_, _, err := first.Clock.Advance(ctx, 48*time.Hour)
		require.NoError(t, err)
		_, _, err = first.Clock.Advance(ctx, time.Minute)
		require.NoError(t, err)

		restarted := build(assembly.Config{})
		assert.Equal(t, 48*time.Hour+time.Minute, restarted.Clock.Offset(), "the restart keeps the clock")
		assert.Equal(t, first.Attribution.MACKey, restarted.Attribution.MACKey, "and the offer secret")
		// Advances of two instances on one store add up.
		_, _, err = restarted.Clock.Advance(ctx, time.Hour)
		require.NoError(t, err)
		_, _, err = first.Clock.Advance(ctx, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 49*time.Hour+time.Minute+time.Second, first.Clock.Offset())
		// An instance that only reads the clock learns of the others'
		// advances when asked for it (GET /v1/admin/clock syncs first).
		reader := build(assembly.Config{})
		_, _, err = first.Clock.Advance(ctx, 72*time.Hour)
		require.NoError(t, err)
		assert.Equal(t, 49*time.Hour+time.Minute+time.Second, reader.Clock.Offset(), "not yet")
		require.NoError(t, reader.Clock.Sync(ctx))
		assert.Equal(t, first.Clock.Offset(), reader.Clock.Offset())

		configured := build(assembly.Config{OfferSecret: strings.Repeat("c", 32)})
		assert.NotEqual(t, first.Attribution.MACKey.ID, configured.Attribution.MACKey.ID, "a configured secret wins")
		assert.Equal(t, first.Attribution.MACKey, build(assembly.Config{}).Attribution.MACKey, "and leaves the stored one")

	})
}

// TestClockAdvanceReplay: an advance sent again with its Idempotency-Key is
// answered from the first, and the clock moves once.
func TestClockAdvanceReplay(t *testing.T) {
	s := storagetest.SQLite(t)
	a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
	before := a.serverNow()
	first := a.expect(200, a.do("POST", "/v1/admin/clock/advance", adminToken, map[string]any{"seconds": 3600}, "Idempotency-Key", "advance-1"))
	again := a.expect(200, a.do("POST", "/v1/admin/clock/advance", adminToken, map[string]any{"seconds": 3600}, "Idempotency-Key", "advance-1"))
	assert.JSONEq(t, string(first.Body), string(again.Body))
	var c xpromo.ClockState
	require.NoError(t, json.Unmarshal(a.expect(200, a.do("GET", "/v1/admin/clock", adminToken, nil)).Body, &c))
	assert.Equal(t, int64(3600), c.OffsetSeconds, "moved once")
	assert.WithinDuration(t, before.Add(time.Hour), c.Now, time.Second)
}
