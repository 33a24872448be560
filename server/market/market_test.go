package market_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// start is where every test's clock starts.
var start = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func cat(key string, mac, win int64) market.Category {
	return market.Category{Key: key, Label: "Label " + key, Floors: map[xpromo.Platform]int64{xpromo.PlatformMac: mac, xpromo.PlatformWin: win}}
}

func service(s storage.Store, now func() time.Time, cats ...market.Category) *market.Service {
	return &market.Service{
		Update:    market.Txer(storage.Updater[market.Tx](s)),
		View:      market.Txer(storage.Viewer[market.Tx](s)),
		Now:       now,
		Catalogue: cats,
	}
}

func rateCardFloors(t *testing.T, svc *market.Service) map[string][2]int64 {
	t.Helper()
	card, err := svc.RateCard(context.Background())
	require.NoError(t, err)
	out := map[string][2]int64{}
	for _, c := range card.Categories {
		out[c.Key] = [2]int64{c.FloorCentsMin, c.FloorCentsMax}
	}
	return out
}

type row struct {
	platform xpromo.Platform
	floor    int64
	version  int64
	reason   string
}

func history(t *testing.T, svc *market.Service, category string) []row {
	t.Helper()
	fs, err := svc.FloorHistory(context.Background(), category)
	require.NoError(t, err)
	var out []row
	for _, f := range fs {
		out = append(out, row{f.Platform, f.FloorCents, f.Version, f.Reason})
	}
	return out
}

const (
	initial = "initial floor from the catalogue"
	lowered = "lowered in the catalogue"
)

func TestReconcileFloors(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		clk := clocktest.New(start)

		// First start: every (category, platform) gets its first row.
		svc := service(s, clk.Now, cat("alpha", 300, 200), cat("beta", 500, 400))
		require.NoError(t, svc.Reconcile(ctx))
		assert.Equal(t, map[string][2]int64{"alpha": {200, 300}, "beta": {400, 500}}, rateCardFloors(t, svc))
		assert.Equal(t, []row{{"mac", 300, 1, initial}, {"win", 200, 1, initial}}, history(t, svc, "alpha"))

		// Same configuration again: nothing written.
		require.NoError(t, service(s, clk.Now, cat("alpha", 300, 200), cat("beta", 500, 400)).Reconcile(ctx))
		assert.Len(t, history(t, svc, "alpha"), 2)
		assert.Len(t, history(t, svc, "beta"), 2)

		// A lower configured floor is recorded as a cut.
		svc = service(s, clk.Now, cat("alpha", 250, 200), cat("beta", 500, 400))
		require.NoError(t, svc.Reconcile(ctx))
		assert.Equal(t, []row{{"mac", 300, 1, initial}, {"mac", 250, 2, lowered}, {"win", 200, 1, initial}}, history(t, svc, "alpha"))
		assert.Equal(t, [2]int64{200, 250}, rateCardFloors(t, svc)["alpha"])

		// A higher one refuses the start, and the cut beside it is not
		// written either (one transaction).
		err := service(s, clk.Now, cat("alpha", 100, 200), cat("beta", 500, 450)).Reconcile(ctx)
		require.Error(t, err)
		assert.True(t, apperr.Is(err, apperr.FloorCannotRise), "got %v", err)
		assert.Contains(t, err.Error(), `"beta"`)
		assert.Len(t, history(t, svc, "alpha"), 3)
		assert.Len(t, history(t, svc, "beta"), 2)

		// Going back up to an earlier configured value is a rise too.
		err = service(s, clk.Now, cat("alpha", 300, 200), cat("beta", 500, 400)).Reconcile(ctx)
		assert.True(t, apperr.Is(err, apperr.FloorCannotRise), "got %v", err)

		// A category dropped from the catalogue leaves the rate card and keeps
		// its history; a new one is added.
		svc = service(s, clk.Now, cat("alpha", 250, 200), cat("gamma", 120, 110))
		require.NoError(t, svc.Reconcile(ctx))
		assert.Equal(t, map[string][2]int64{"alpha": {200, 250}, "gamma": {110, 120}}, rateCardFloors(t, svc))
		assert.Len(t, history(t, svc, "beta"), 2)
	})
}

// The floor history is append-only in the database itself.
func TestFloorHistoryIsAppendOnly(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		svc := service(s, clocktest.New(start).Now, cat("alpha", 300, 200))
		require.NoError(t, svc.Reconcile(ctx))
		db, ok := s.(interface {
			Exec(ctx context.Context, query string) error
		})
		require.True(t, ok, "the store has no Exec")
		stmts := []string{
			`UPDATE category_floors SET floor_cents = 999`,
			`UPDATE category_floors SET reason = 'rewritten'`,
			`DELETE FROM category_floors`,
			`DELETE FROM category_floors WHERE platform = 'mac'`,
			`INSERT INTO category_floors SELECT category, platform, version, 999, reason, at FROM category_floors WHERE true
			 ON CONFLICT (category, platform, version) DO UPDATE SET floor_cents = 999`,
		}
		if strings.HasSuffix(t.Name(), "/sqlite") {
			// Replacing deletes the old row without firing DELETE triggers.
			stmts = append(stmts,
				`INSERT OR REPLACE INTO category_floors SELECT category, platform, version, 999, reason, at FROM category_floors`,
				`REPLACE INTO category_floors SELECT category, platform, version, 999, reason, at FROM category_floors`)
		}
		for _, stmt := range stmts {
			assert.Error(t, db.Exec(ctx, stmt), stmt)
		}
		assert.Equal(t, []row{{"mac", 300, 1, initial}, {"win", 200, 1, initial}}, history(t, svc, "alpha"))
	})
}

func TestCutFloor(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		svc := service(s, clocktest.New(start).Now, cat("alpha", 300, 200))
		require.NoError(t, svc.Reconcile(ctx))

		got, err := svc.CutFloor(ctx, "alpha", xpromo.PlatformWin, 150, "launch promotion")
		require.NoError(t, err)
		assert.Equal(t, market.CategoryFloors{Key: "alpha", Label: "Label alpha", Floors: map[xpromo.Platform]int64{"mac": 300, "win": 150}}, got)
		assert.Equal(t, [2]int64{150, 300}, rateCardFloors(t, svc)["alpha"], "the snapshot is refreshed at once")

		// Equal: a no-op.
		got, err = svc.CutFloor(ctx, "alpha", xpromo.PlatformWin, 150, "again")
		require.NoError(t, err)
		assert.Equal(t, int64(150), got.Floors[xpromo.PlatformWin])
		assert.Equal(t, []row{{"mac", 300, 1, initial}, {"win", 200, 1, initial}, {"win", 150, 2, "launch promotion"}}, history(t, svc, "alpha"))

		// A rise, even back to a previous floor, is refused.
		_, err = svc.CutFloor(ctx, "alpha", xpromo.PlatformWin, 151, "oops")
		assert.True(t, apperr.Is(err, apperr.FloorCannotRise), "got %v", err)
		assert.Equal(t, 409, apperr.HTTPStatus(err))

		for _, c := range []struct {
			category string
			platform xpromo.Platform
			floor    int64
			reason   string
			code     string
		}{
			{"nope", "mac", 100, "r", apperr.NotFound},
			{"alpha", "linux", 100, "r", apperr.InvalidPlatform},
			{"alpha", "mac", 0, "r", apperr.InvalidAmount},
			{"alpha", "mac", market.MaxFloorCents + 1, "r", apperr.InvalidAmount},
			{"alpha", "mac", 100, "", apperr.MissingField},
		} {
			_, err := svc.CutFloor(ctx, c.category, c.platform, c.floor, c.reason)
			assert.True(t, apperr.Is(err, c.code), "%+v: got %v", c, err)
		}
		assert.Len(t, history(t, svc, "alpha"), 3)
	})
}

// Concurrent cuts of one floor serialise: the history stays gapless and
// strictly decreasing, and the lowest requested floor wins.
func TestConcurrentCuts(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		svc := service(s, clocktest.New(start).Now, cat("alpha", 300, 200))
		require.NoError(t, svc.Reconcile(ctx))
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				_, err := svc.CutFloor(ctx, "alpha", xpromo.PlatformMac, int64(290-10*i), fmt.Sprint("cut ", i))
				if err != nil && !apperr.Is(err, apperr.FloorCannotRise) {
					t.Errorf("cut %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		var prev int64 = 301
		for i, r := range history(t, svc, "alpha") {
			if r.platform != xpromo.PlatformMac {
				continue
			}
			assert.Equal(t, int64(i+1), r.version)
			assert.Less(t, r.floor, prev, "floors only go down")
			prev = r.floor
		}
		assert.Equal(t, int64(220), prev)
		assert.Equal(t, [2]int64{200, 220}, rateCardFloors(t, svc)["alpha"])
	})
}

// Another instance's cut reaches this instance's snapshot within
// RefreshEvery.
func TestRateCardSnapshotRefresh(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		clk := clocktest.New(start)
		a := service(s, clk.Now, cat("alpha", 300, 200))
		b := service(s, clk.Now, cat("alpha", 300, 200))
		require.NoError(t, a.Reconcile(ctx))
		require.NoError(t, b.Reconcile(ctx))
		_, err := b.CutFloor(ctx, "alpha", xpromo.PlatformMac, 250, "cut on b")
		require.NoError(t, err)
		assert.Equal(t, [2]int64{200, 250}, rateCardFloors(t, b)["alpha"])
		clk.Advance(market.DefaultRefreshEvery - time.Second)
		assert.Equal(t, [2]int64{200, 300}, rateCardFloors(t, a)["alpha"], "served from memory")
		clk.Advance(time.Second)
		assert.Equal(t, [2]int64{200, 250}, rateCardFloors(t, a)["alpha"], "reloaded")
	})
}
