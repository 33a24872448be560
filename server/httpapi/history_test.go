package httpapi_test

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/loadgen"
	"github.com/xpromo/xpromo/server/postgres"
	"github.com/xpromo/xpromo/server/postgres/pgtest"
	"github.com/xpromo/xpromo/server/rollup"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// TestHistoryReads is `make history` (BENCHMARKS.md, "A year of history"):
// on each store, the person-facing GETs over HTTP on a store holding only
// the reading apps, then again after loadgen.History wrote a year of a
// busy network (scaled by XPROMO_HISTORY_SCALE; 1 is full size), with
// `ledger verify` run on the result. It prints p50 and p99 of each read
// and asserts nothing about time (a figure, not a test). Without
// XPROMO_HISTORY_SCALE it runs at 0.00005 (make test: the generator and
// ledger verify, not the figures). XPROMO_HISTORY_STORES limits the
// stores (sqlite, postgres), XPROMO_HISTORY_READS sets the reads per GET.
//
// For diagnosis, XPROMO_HISTORY_KEEP=dir keeps each full store instead of
// dropping it (the PostgreSQL database, the SQLite file in dir) and writes
// dir/<store>.json: where it is and the reading apps' ids and keys.
// XPROMO_HISTORY_REUSE=dir then runs the full-store reads only, on the
// kept stores (no fill, no empty-store figures; the migrations of this
// tree are applied on open). Drop a kept database by hand when done.
func TestHistoryReads(t *testing.T) {
	scale, err := strconv.ParseFloat(os.Getenv("XPROMO_HISTORY_SCALE"), 64)
	reads := 40
	if err != nil || scale <= 0 {
		// make test: a few hundred chains, so the generator's writes and
		// `ledger verify` after them run in CI; make history sets the scale.
		scale, reads = 0.00005, 2
	}
	if n, err := strconv.Atoi(os.Getenv("XPROMO_HISTORY_READS")); err == nil && n > 0 {
		reads = n
	}
	stores := os.Getenv("XPROMO_HISTORY_STORES")
	historyEach(t, func(t *testing.T, s storage.Store, kept *historyKept) {
		name := strings.TrimPrefix(t.Name(), "TestHistoryReads/")
		if stores != "" && !slices.Contains(strings.Split(stores, ","), name) {
			t.Skip("not in XPROMO_HISTORY_STORES")
		}
		e := newMktEnv(t, s)
		var adv, pub xpromo.RegisterAppResponse
		var cmp xpromo.Campaign
		if kept.reused {
			adv.AppID, adv.APIKey, pub.AppID, pub.APIKey, cmp.CampaignID = kept.AdvID, kept.AdvKey, kept.PubID, kept.PubKey, kept.CampaignID
		} else {
			adv = e.register(snip())
			pub = e.register(appRequest("Pub", xpromo.PlatformMac))
			e.topUp(adv.AppID, 50000, e.clock.Now().AddDate(-1, 0, -1))
			cmp = e.createCampaign(adv, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, adv.AppID))
			e.createCampaign(pub, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, pub.AppID))
			kept.AdvID, kept.AdvKey, kept.PubID, kept.PubKey, kept.CampaignID = adv.AppID, adv.APIKey, pub.AppID, pub.APIKey, cmp.CampaignID
		}

		plain := &http.Client{}
		get := func(path, key string) (time.Duration, error) {
			req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			t0 := time.Now()
			res, err := plain.Do(req)
			if err != nil {
				return 0, err
			}
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			d := time.Since(t0)
			if res.StatusCode != http.StatusOK {
				return d, fmt.Errorf("GET %s: %d", path, res.StatusCode)
			}
			return d, err
		}
		type read struct {
			name, key string
			path      func() string
			before    func() // not timed
		}
		var ledgerMid, ledgerEnd string
		day := func(ago int) string { return e.clock.Now().AddDate(0, 0, -ago).Format(time.DateOnly) }
		list := []read{
			{name: "stats last_7_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_7_days" }},
			{name: "stats last_30_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_30_days" }},
			{name: "stats last_90_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_90_days" }},
			{name: "stats/daily 30 days", key: adv.APIKey, path: func() string { return "/v1/stats/daily" }},
			{name: "stats/daily 366 days", key: adv.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(365) + "&to=" + day(0) }},
			{name: "stats/daily 90 days, campaign", key: adv.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(89) + "&campaign_id=" + cmp.CampaignID }},
			{name: "stats/daily 366 days, publisher", key: pub.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(365) + "&to=" + day(0) }},
			// Network stats are recomputed once a minute: move the clock
			// past it before each read, so each one computes.
			{name: "network-stats (recomputed)", path: func() string { return "/v1/network-stats" }, before: func() { e.clock.Advance(61 * time.Second) }},
			{name: "ledger, first page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100" }},
			{name: "ledger, middle page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100&from=" + ledgerMid }},
			{name: "ledger, last page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100&from=" + ledgerEnd }},
			{name: "events", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/events?limit=100" }},
			{name: "campaigns", key: adv.APIKey, path: func() string { return "/v1/campaigns" }},
			{name: "score", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/score" }},
		}
		measure := func() map[string][2]time.Duration {
			out := map[string][2]time.Duration{}
			for _, r := range list {
				var ds []time.Duration
				for range reads {
					if r.before != nil {
						r.before()
					}
					d, err := get(r.path(), r.key)
					require.NoError(t, err, r.name)
					ds = append(ds, d)
				}
				slices.Sort(ds)
				out[r.name] = [2]time.Duration{loadgen.Percentile(ds, 50), loadgen.Percentile(ds, 99)}
			}
			return out
		}
		empty := map[string][2]time.Duration{}
		sz := kept.Sizes
		if !kept.reused {
			ledgerMid, ledgerEnd = day(0), day(0)
			empty = measure()

			cfg := loadgen.HistoryConfig{Scale: scale, End: e.clock.Now(), Seed: 33, Readers: []loadgen.HistoryApp{
				{ID: adv.AppID, CampaignID: cmp.CampaignID, Category: "games", PriceCents: 500},
				{ID: pub.AppID, CampaignID: "cmp_of_pub", Category: "games", PriceCents: 450},
			}}
			sz, err = loadgen.History(context.Background(), s, cfg)
			require.NoError(t, err)
			kept.Sizes = sz
			kept.save(t, name)
			require.NoError(t, s.Snapshot(context.Background(), func(r ledger.Reader) error {
				rep, err := ledger.Verify(context.Background(), r)
				if err == nil && !rep.OK() {
					err = fmt.Errorf("ledger verify: %+v", rep)
				}
				return err
			}))
			rollupsMatchRaw(t, s, []string{adv.AppID, pub.AppID, "app_hist00002"}, cfg.End)
		}
		ledgerMid, ledgerEnd = day(182), day(1)
		full := measure()
		total, tables := storeBytes(t, s)
		// The write paths on the full store, then on an empty one of the
		// same kind, in the same run (make history only: not make test).
		var fullW, emptyW map[string]writeFigure
		if os.Getenv("XPROMO_HISTORY_SCALE") != "" && !kept.reused {
			var apps []string
			for i := 2; i < int(sz.Apps); i++ {
				apps = append(apps, fmt.Sprintf("app_hist%05d", i))
			}
			fullW = historyWrites(t, s, apps, false)
			fresh := storage.Store(nil)
			if name == "sqlite" {
				fresh = storagetest.SQLite(t)
			} else {
				fresh = storagetest.Postgres(t)
			}
			emptyW = historyWrites(t, fresh, apps, true)
		}

		var b strings.Builder
		fmt.Fprintf(&b, "store %s, scale %g: %d apps, %d chains (%d installs, %d cleared, %d refunded, %d rejected), %d fills in %d counter rows, %d ledger operations, written in %s; ledger verify: no violation\n",
			name, scale, sz.Apps, sz.Chains, sz.Installs, sz.Cleared, sz.Refunded, sz.Rejected, sz.Fills, sz.FillRows, sz.LedgerOps, sz.Took.Round(time.Second))
		fmt.Fprintf(&b, "storage: %.1f MB in all (tables and indexes), %d bytes per cleared install (%d cleared); largest: %s\n",
			float64(total)/1e6, total/max(1, sz.Cleared), sz.Cleared, strings.Join(tables, ", "))
		fmt.Fprintf(&b, "| GET | empty p50 / p99 ms | full p50 / p99 ms | p99 full / empty |\n|---|---|---|---|\n")
		for _, r := range list {
			em, fu := empty[r.name], full[r.name]
			fmt.Fprintf(&b, "| %s | %.2f / %.2f | %.2f / %.2f | %.1f× |\n", r.name, ms(em[0]), ms(em[1]), ms(fu[0]), ms(fu[1]), float64(fu[1])/float64(max(em[1], time.Microsecond)))
		}
		if fullW != nil {
			writeTable(&b, emptyW, fullW)
		}
		t.Log("\n" + b.String())
		if out := os.Getenv("XPROMO_HISTORY_OUT"); out != "" {
			f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			require.NoError(t, err)
			_, err = f.WriteString(b.String() + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
	})
}

// rollupsMatchRaw fails the test unless the stats read through the daily
// rollups (package rollup's split: the first part of a day raw, the whole
// days from the rollups) equal the same stats read from the raw facts, for
// these apps and the network, over windows of the year: whole days (up to
// 90) and windows from inside a day to the end (the clock's now: a split
// window's last day is read whole from the rollups). The bulk path
// (loadgen.History) writes its rows with COPY where the store has it; this
// is what shows the triggers kept the rollups exact.
func rollupsMatchRaw(t *testing.T, s storage.Store, apps []string, end time.Time) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		require.NoError(t, err)
	}
	var windows [][2]time.Time
	for _, days := range []int{1, 7, 30, 90} {
		for _, ago := range []int{0, 40, 200, 330} {
			from := end.AddDate(0, 0, -ago-days)
			windows = append(windows, [2]time.Time{rollup.Day(from), rollup.Day(from).AddDate(0, 0, days).Add(-time.Microsecond)},
				[2]time.Time{from.Add(-97 * time.Minute), end})
		}
	}
	must(s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, win := range windows {
			sp := rollup.Split(win[0], win[1])
			for _, app := range apps {
				raw, err := tx.AppChainStats(ctx, app, win[0], win[1])
				must(err)
				got, err := tx.AppChainStats(ctx, app, sp.From, sp.RawTo)
				must(err)
				hraw, err := tx.AdvertiserHoldStats(ctx, app, win[0], win[1])
				must(err)
				hgot, err := tx.AdvertiserHoldStats(ctx, app, sp.From, sp.RawTo)
				must(err)
				if sp.HasDays {
					days, err := tx.ChainStatsDays(ctx, app, sp.FirstDay, sp.LastDay)
					must(err)
					got.Impressions += days.Impressions
					got.Clicks += days.Clicks
					for k, n := range days.FraudRejected {
						got.FraudRejected[k] += n
					}
					hdays, err := tx.AdvertiserHoldStatsDays(ctx, app, sp.FirstDay, sp.LastDay)
					must(err)
					hgot = hgot.Add(hdays)
				}
				require.Equal(t, raw, got, "app %q chain stats over %v", app, win)
				require.Equal(t, hraw, hgot, "app %q hold stats over %v", app, win)
			}
			raw, err := tx.NetworkChainStats(ctx, win[0], win[1])
			must(err)
			got, err := tx.NetworkChainStats(ctx, sp.From, sp.RawTo)
			must(err)
			hraw, err := tx.NetworkHoldStats(ctx, win[0], win[1])
			must(err)
			hgot, err := tx.NetworkHoldStats(ctx, sp.From, sp.RawTo)
			must(err)
			if sp.HasDays {
				days, err := tx.NetworkChainStatsDays(ctx, sp.FirstDay, sp.LastDay)
				must(err)
				got.Chains += days.Chains
				got.FraudRejected += days.FraudRejected
				for k := range days.CPICount {
					got.CPISum[k] += days.CPISum[k]
					got.CPICount[k] += days.CPICount[k]
				}
				hdays, err := tx.NetworkHoldStatsDays(ctx, sp.FirstDay, sp.LastDay)
				must(err)
				hgot = hgot.Add(hdays)
			}
			require.Equal(t, raw, got, "network chain stats over %v", win)
			require.Equal(t, hraw, hgot, "network hold stats over %v", win)
		}
		return nil
	}))
}

// storeBytes is the store's size on disk, tables with their indexes (and
// TOAST on PostgreSQL), and its five largest tables with their bytes.
func storeBytes(t *testing.T, s storage.Store) (int64, []string) {
	t.Helper()
	ctx := context.Background()
	var query string
	var rows interface {
		Next() bool
		Scan(...any) error
		Close()
	}
	switch db := s.(type) {
	case *postgres.DB:
		query = `SELECT relname, pg_total_relation_size(oid) FROM pg_class
WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY 2 DESC`
		r, err := db.Pool().Query(ctx, query)
		require.NoError(t, err)
		rows = r
	case *sqlite.DB:
		raw, err := sql.Open("sqlite", "file:"+db.Path()+"?mode=ro")
		require.NoError(t, err)
		t.Cleanup(func() { raw.Close() })
		// dbstat: the pages of each table and index; an index is counted
		// with its table.
		r, err := raw.QueryContext(ctx, `SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d
LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1 ORDER BY 2 DESC`)
		require.NoError(t, err)
		rows = sqlRows{r}
	default:
		t.Fatalf("unknown store %T", s)
	}
	defer rows.Close()
	var total int64
	var top []string
	for rows.Next() {
		var name string
		var n int64
		require.NoError(t, rows.Scan(&name, &n))
		total += n
		if len(top) < 5 {
			top = append(top, fmt.Sprintf("%s %.1f MB", name, float64(n)/1e6))
		}
	}
	return total, top
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// historyKept is a kept full store (XPROMO_HISTORY_KEEP): where it is and
// what the reads need of it.
type historyKept struct {
	URL, Path                                string // PostgreSQL database, SQLite file
	AdvID, AdvKey, PubID, PubKey, CampaignID string
	Sizes                                    loadgen.HistorySizes
	dir                                      string
	reused                                   bool
}

// save writes dir/<store>.json when the store is kept.
func (k *historyKept) save(t *testing.T, store string) {
	t.Helper()
	if k.dir == "" {
		return
	}
	b, err := json.MarshalIndent(k, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(k.dir, store+".json"), b, 0o600))
	t.Logf("kept store %s: %s%s (%s)", store, k.URL, k.Path, filepath.Join(k.dir, store+".json"))
}

// historyEach is storagetest.Each, keeping or reusing the stores as
// XPROMO_HISTORY_KEEP and XPROMO_HISTORY_REUSE say (TestHistoryReads).
func historyEach(t *testing.T, fn func(t *testing.T, s storage.Store, k *historyKept)) {
	keep, reuse := os.Getenv("XPROMO_HISTORY_KEEP"), os.Getenv("XPROMO_HISTORY_REUSE")
	if keep == "" && reuse == "" {
		storagetest.Each(t, func(t *testing.T, s storage.Store) { fn(t, s, &historyKept{}) })
		return
	}
	ctx := context.Background()
	open := func(t *testing.T, store string) (storage.Store, *historyKept) {
		k := &historyKept{dir: keep}
		if reuse != "" {
			b, err := os.ReadFile(filepath.Join(reuse, store+".json"))
			if os.IsNotExist(err) {
				t.Skipf("no kept %s store in %s", store, reuse)
			}
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, k))
			k.dir, k.reused = "", true
		} else {
			require.NoError(t, os.MkdirAll(keep, 0o755))
		}
		var s storage.Store
		var err error
		switch store {
		case "sqlite":
			if k.Path == "" {
				k.Path = filepath.Join(keep, fmt.Sprintf("xpromo-%d.db", time.Now().Unix()))
			}
			s, err = sqlite.Open(ctx, k.Path)
		default:
			if k.URL == "" {
				k.URL, _, err = postgres.ScratchDatabase(ctx, pgtest.AdminURL(t), "xpromo_hist_")
				require.NoError(t, err)
			}
			s, err = postgres.Open(ctx, k.URL)
		}
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s, k
	}
	stores := os.Getenv("XPROMO_HISTORY_STORES")
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			if stores != "" && !slices.Contains(strings.Split(stores, ","), store) {
				t.Skip("not in XPROMO_HISTORY_STORES")
			}
			s, k := open(t, store)
			fn(t, s, k)
		})
	}
}

// writeFigure is one write path's figures on one store: operations a
// second and latencies in ms (nearest rank), with the count behind them.
type writeFigure struct {
	rate, p50, p99 float64
	n              int64
}

// The write paths measured on the empty and the full store (BENCHMARKS.md,
// "A year of history"), in the order historyWrites measures them.
var writePaths = []string{"fills alone (req/s)", "fills while claims and sweeps run (req/s)", "install claims (claims/s)",
	"sweep of a round (settlements/s)", "single ledger postings (ops/s)"}

// historyWrites measures the write paths on s, through a test-mode server of
// its own on s (trusting 127.0.0.1's X-Forwarded-For, as `make loadgen`
// starts it): the loadgen fixture (loadgen.Setup) on a category the history
// does not trade in; fills alone (loadgen's fill scenario, 5 s); fills at 200
// a second while rounds of 32 install claims and a sweep that refunds them run
// as fast as they can (open-mixed, 10 s); and single ledger postings: 16
// posters through ledger.Ledger.Post for 3 s, top-ups and escrow holds of
// the funded apps, as storetest.Bench's Post/parallel. Before it, the clock
// is moved past every open window and the store swept once (unmeasured), so
// the measured sweeps settle the rounds' claims only, on both stores.
// fund tops up each of apps first (an empty store: its wallets then exist
// with a line each, as the full store's do with a year of them).
func historyWrites(t *testing.T, s storage.Store, apps []string, fund bool) map[string]writeFigure {
	t.Helper()
	ctx := context.Background()
	cfg := unlimited
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	ts := serve(t, s, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), cfg)
	op := xpromo.NewClient(ts.url, xpromo.WithAdminToken(adminToken), xpromo.WithRetries(0))
	l := &ledger.Ledger{Store: s, Now: ts.clock.Now}
	if fund {
		var ops []ledger.Operation
		for _, a := range apps {
			o, err := ledger.TopUp("hist-w-fund-"+a, a, 100_000_000, "")
			require.NoError(t, err)
			ops = append(ops, o)
		}
		_, errs, err := l.PostBatch(ctx, ops)
		require.NoError(t, err)
		require.NoError(t, errors.Join(errs...))
	}
	ts.clock.Advance(73 * time.Hour)
	_, err := op.AdminSweep(ctx)
	require.NoError(t, err)

	out := map[string]writeFigure{}
	op1 := func(r *loadgen.Report, name string) loadgen.OpStats {
		for _, o := range r.Ops {
			if o.Op == name {
				require.Zero(t, o.Errors, "%s: %v", name, o.ErrorsByCode)
				return o
			}
		}
		t.Fatalf("no %s in the %s run", name, r.Scenario)
		return loadgen.OpStats{}
	}
	fig := func(o loadgen.OpStats) writeFigure {
		return writeFigure{rate: o.Throughput, p50: o.P50ms, p99: o.P99ms, n: o.Requests}
	}
	f, err := loadgen.Setup(ctx, op, loadgen.SetupConfig{Publishers: 2, FillPublishers: loadgen.FillPublishersFor(5 * time.Second),
		Advertisers: 2, Category: "productivity", ForwardedFor: true})
	require.NoError(t, err)
	r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{Scenario: loadgen.ScenarioFill, Duration: 5 * time.Second, Concurrency: 8, ForwardedFor: true})
	require.NoError(t, err)
	out[writePaths[0]] = fig(op1(r, loadgen.OpFill))
	const batch = 32
	r, err = loadgen.Run(ctx, op, f, loadgen.RunConfig{Scenario: loadgen.ScenarioOpenMixed, Duration: 10 * time.Second, Concurrency: 8,
		ClaimBatch: batch, FillRate: 200, ForwardedFor: true, BaseURL: ts.url})
	require.NoError(t, err)
	out[writePaths[1]] = fig(op1(r, loadgen.OpFill))
	out[writePaths[2]] = fig(op1(r, loadgen.OpInstall))
	// A sweep refunds a round's claims: its rate is batch over its
	// latency (the p50 sweep's).
	sw := fig(op1(r, loadgen.OpSweep))
	sw.rate = batch / (sw.p50 / 1000)
	out[writePaths[3]] = sw

	// Single postings, as storetest.Bench's Post/parallel.
	var n atomic.Int64
	var mu sync.Mutex
	var ds []time.Duration
	var postErr error
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			var mine []time.Duration
			for pctx.Err() == nil {
				i := n.Add(1)
				app := apps[(int(i)*7+w)%len(apps)]
				op, _ := ledger.TopUp(fmt.Sprintf("hist-w-top-%d", i), app, 5000, "")
				if i%2 == 0 { // every other one holds escrow from a funded wallet
					op, _ = ledger.EscrowHold(fmt.Sprintf("hist-w-hold-%d", i), ledger.Hold{ID: fmt.Sprintf("hist-w-ch%d", i), Advertiser: app, Publisher: apps[0], Amount: 1})
				}
				t0 := time.Now()
				_, err := l.Post(ctx, op)
				mine = append(mine, time.Since(t0))
				if err != nil {
					mu.Lock()
					postErr = cmp.Or(postErr, fmt.Errorf("posting %s: %w", op.Key, err))
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			ds = append(ds, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.NoError(t, postErr)
	took := time.Since(start)
	slices.Sort(ds)
	out[writePaths[4]] = writeFigure{rate: float64(len(ds)) / took.Seconds(), p50: ms(loadgen.Percentile(ds, 50)), p99: ms(loadgen.Percentile(ds, 99)), n: int64(len(ds))}
	return out
}

// writeTable prints the write paths' figures, empty against full.
func writeTable(b *strings.Builder, empty, full map[string]writeFigure) {
	fmt.Fprintf(b, "| write path | empty: rate, p50 / p99 ms (n) | full: rate, p50 / p99 ms (n) | rate full / empty |\n|---|---|---|---|\n")
	for _, w := range writePaths {
		em, fu := empty[w], full[w]
		fmt.Fprintf(b, "| %s | %.1f, %.2f / %.2f (%d) | %.1f, %.2f / %.2f (%d) | %.2f× |\n", w, em.rate, em.p50, em.p99, em.n, fu.rate, fu.p50, fu.p99, fu.n, fu.rate/max(em.rate, 1e-9))
	}
}
