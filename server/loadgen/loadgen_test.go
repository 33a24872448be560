package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/loadgen"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const adminToken = "loadgen-test-admin-token"

// TestScenariosAgainstTheServer runs the setup and every scenario for about
// a second against the real server (SQLite, behind httptest), configured as
// `make loadgen` starts it: every request must succeed.
func TestScenariosAgainstTheServer(t *testing.T) {
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := assembly.Config{
		BaseURL: ts.URL, AdminToken: adminToken, Mode: httpapi.ModeTest,
		ReadLimit: 100_000_000, WriteLimit: 100_000_000,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")},
	}
	store := storagetest.SQLite(t)
	srv, err := assembly.New(cfg, store)
	require.NoError(t, err)
	handler = srv

	ctx := context.Background()
	op := xpromo.NewClient(ts.URL, xpromo.WithAdminToken(adminToken), xpromo.WithRetries(0))
	f, err := loadgen.Setup(ctx, op, loadgen.SetupConfig{Publishers: 2, FillPublishers: 3, Advertisers: 2, TopUps: 2, ForwardedFor: true})
	require.NoError(t, err)
	require.Len(t, f.Advertisers, 2)
	// Each scenario that fills has publishers of its own: one scenario
	// never spends another's fill budget (6,000 a minute per app).
	seen := map[string]string{}
	for _, sc := range []string{loadgen.ScenarioFill, loadgen.ScenarioClaim, loadgen.ScenarioMixed} {
		want := 2
		if sc == loadgen.ScenarioFill {
			want = 3 // FillPublishers
		}
		require.Len(t, f.Fillers[sc], want, sc)
		for _, p := range f.Fillers[sc] {
			require.Empty(t, seen[p.ID], "publisher %s fills for %s and %s", p.ID, seen[p.ID], sc)
			seen[p.ID] = sc
		}
	}
	require.Len(t, f.Publishers, 7)
	for id := range f.Advertisers {
		a, err := op.AdminGetApp(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusLive, a.Status, "the warm-up takes advertisers live")
	}

	// The fill scenario twice: through the SDK's client, then the lean
	// generator (pre-signed, serialized ahead, raw connections).
	for _, sc := range append(loadgen.Scenarios, "fill/lean") {
		t.Run(sc, func(t *testing.T) {
			lean := sc == "fill/lean"
			if lean {
				sc = loadgen.ScenarioFill
			}
			d, batch, fillRate, readRate := time.Second, 40, 50.0, 0.0
			if sc == loadgen.ScenarioOpenMixed {
				// A round of clicks and claims beside the fills (clicks take
				// a few hundred ms each under -race on a loaded machine),
				// and a dashboard's reads.
				d, batch, fillRate, readRate = 6*time.Second, 4, 20, 4
			}
			r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{
				Scenario: sc, Duration: d, Concurrency: 4, ClaimBatch: batch, LedgerPage: 5, ForwardedFor: true,
				Lean: lean, BaseURL: ts.URL, FillRate: fillRate, ReadRate: readRate,
			})
			require.NoError(t, err)
			assert.Positive(t, r.Requests)
			assert.Zero(t, r.Errors, "%+v", r.Ops)
			assert.Positive(t, r.MeasuredSec)
			want := map[string][]string{
				loadgen.ScenarioFill:     {loadgen.OpFill},
				loadgen.ScenarioClaim:    {loadgen.OpInstall},
				loadgen.ScenarioLedger:   {loadgen.OpLedger},
				loadgen.ScenarioOpenFill: {loadgen.OpFill},
			}[sc]
			if want != nil {
				var got []string
				for _, o := range r.Ops {
					got = append(got, o.Op)
				}
				assert.Equal(t, want, got)
			}
			if sc == loadgen.ScenarioOpenMixed {
				ops := opCounts(r)
				assert.Positive(t, ops[loadgen.OpFill], "open-mixed fills")
				assert.Positive(t, ops[loadgen.OpInstall], "open-mixed claims beside the fills")
				assert.Positive(t, ops[loadgen.OpClockHold], "the round's clock jumps held the fills")
				assert.Positive(t, ops[loadgen.OpStatsRead], "open-mixed stats reads")
				assert.Positive(t, ops[loadgen.OpLedger], "open-mixed ledger reads")
			}
			if sc == loadgen.ScenarioOpenFill || sc == loadgen.ScenarioOpenMixed {
				assertServerSawFills(t, r)
			}
			for _, o := range r.Ops {
				assert.Positive(t, o.P50ms)
				assert.LessOrEqual(t, o.P50ms, o.P99ms)
				assert.LessOrEqual(t, o.P99ms, o.MaxMs)
			}
		})
	}

	// The fills on an instance of their own on the same store (make
	// loadgen-split): its test clock is caught up once, then left where it
	// is while the rounds' jumps move the other's; every fill must still be
	// accepted, and none is held for a jump.
	t.Run("open-mixed/fills-apart", func(t *testing.T) {
		var fills http.Handler
		fts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fills.ServeHTTP(w, r) }))
		t.Cleanup(fts.Close)
		fcfg := cfg
		fcfg.BaseURL = fts.URL
		fsrv, err := assembly.New(fcfg, store)
		require.NoError(t, err)
		fills = fsrv
		r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{
			Scenario: loadgen.ScenarioOpenMixed, Duration: 6 * time.Second, Concurrency: 4, ClaimBatch: 4, ForwardedFor: true,
			BaseURL: ts.URL, FillRate: 20, FillURL: fts.URL,
			FillOp: xpromo.NewClient(fts.URL, xpromo.WithAdminToken(adminToken), xpromo.WithRetries(0)),
		})
		require.NoError(t, err)
		assert.Zero(t, r.Errors, "%+v", r.Ops)
		ops := opCounts(r)
		assert.Positive(t, ops[loadgen.OpFill], "fills")
		assert.Positive(t, ops[loadgen.OpInstall], "claims beside the fills, on the other instance")
		assert.Positive(t, ops[loadgen.OpSweep], "a whole round, jumps of the clock included")
		assert.Zero(t, ops[loadgen.OpClockHold], "fills apart are not held for the jumps")
		assertServerSawFills(t, r)
	})
}

// opCounts is the requests of each operation of r.
func opCounts(r *loadgen.Report) map[string]int64 {
	ops := map[string]int64{}
	for _, o := range r.Ops {
		ops[o.Op] = o.Requests
	}
	return ops
}

// assertServerSawFills checks what the open-loop run read of the fills'
// server's /metrics: at least the fills it recorded, and its scheduler's
// histogram.
func assertServerSawFills(t *testing.T, r *loadgen.Report) {
	t.Helper()
	var recorded int64
	for _, o := range r.Ops {
		if o.Op == loadgen.OpFill {
			recorded = o.Requests
		}
	}
	require.Len(t, r.Server, 2)
	assert.GreaterOrEqual(t, r.Server[0].Total(), float64(recorded), "the server's count of its fills: %+v", r.Server[0])
	assert.Positive(t, r.Server[1].Total(), "the scheduler's latencies over the run")
}
