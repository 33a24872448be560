package assembly_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// RunFillCounts, the only background work of an instance started with
// --background=none, stores the fills that instance counted, on its tick
// and at shutdown: until then they are in its memory only, and no other
// instance can store them. Another instance on the store then counts them
// in the advertiser's impressions.
func TestRunFillCountsStoresFills(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		const category = "productivity"
		limits := assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000}
		a, _ := startBuilt(t, chk, s, limits)
		adv := a.register("Snip", "com.example.snip", "")
		pub := a.register("Clipboard", "com.example.clipboard", category)
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{category}, "daily_budget_cents": 5000}))

		// reader answers from the store alone: it serves no fill, so it has
		// none of its own in memory.
		reader, _ := a.restart(chk, limits)
		impressions := func() int64 {
			t.Helper()
			return decode[xpromo.Stats](t, reader.expect(200, reader.do("GET", "/v1/apps/"+adv.id+"/stats", adv.key, nil))).Impressions
		}
		// run starts an answering instance with RunFillCounts running,
		// storing every interval; stop ends it and waits.
		run := func(interval time.Duration) (inst *api, stop func()) {
			cfg := limits
			cfg.SweepInterval = interval
			inst, srv := a.restart(chk, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); srv.RunFillCounts(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			return inst, func() { cancel(); <-done }
		}
		fill := func(inst *api) {
			t.Helper()
			f := decode[xpromo.FillResponse](t, inst.expect(200, inst.do("POST", "/v1/sdk/fill", "", inst.fillRequest(pub, xpromo.SlotOnboardingComplete))))
			require.True(t, f.Filled, "%+v", f)
		}
		require.Zero(t, impressions())

		ticking, stop := run(20 * time.Millisecond)
		fill(ticking)
		fill(ticking)
		require.Eventually(t, func() bool { return impressions() == 2 }, 10*time.Second, 20*time.Millisecond,
			"the fills are stored on RunFillCounts's tick")
		stop()

		// An interval longer than the test: only the flush at shutdown stores.
		quiet, stop := run(time.Hour)
		fill(quiet)
		require.Equal(t, int64(2), impressions(), "stored before its time")
		stop()
		require.Equal(t, int64(3), impressions(), "the fill counted before shutdown is stored at shutdown")
	})
}
