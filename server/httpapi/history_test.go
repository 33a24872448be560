package httpapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/loadgen"
	"github.com/xpromo/xpromo/server/postgres"
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
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		name := strings.TrimPrefix(t.Name(), "TestHistoryReads/")
		if stores != "" && !slices.Contains(strings.Split(stores, ","), name) {
			t.Skip("not in XPROMO_HISTORY_STORES")
		}
		e := newMktEnv(t, s)
		adv := e.register(snip())
		pub := e.register(appRequest("Pub", xpromo.PlatformMac))
		e.topUp(adv.AppID, 50000, e.clock.Now().AddDate(-1, 0, -1))
		cmp := e.createCampaign(adv, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, adv.AppID))
		e.createCampaign(pub, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, pub.AppID))

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
		ledgerMid, ledgerEnd = day(0), day(0)
		empty := measure()

		cfg := loadgen.HistoryConfig{Scale: scale, End: e.clock.Now(), Seed: 33, Readers: []loadgen.HistoryApp{
			{ID: adv.AppID, CampaignID: cmp.CampaignID, Category: "games", PriceCents: 500},
			{ID: pub.AppID, CampaignID: "cmp_of_pub", Category: "games", PriceCents: 450},
		}}
		sz, err := loadgen.History(context.Background(), s, cfg)
		require.NoError(t, err)
		require.NoError(t, s.Snapshot(context.Background(), func(r ledger.Reader) error {
			rep, err := ledger.Verify(context.Background(), r)
			if err == nil && !rep.OK() {
				err = fmt.Errorf("ledger verify: %+v", rep)
			}
			return err
		}))
		rollupsMatchRaw(t, s, []string{adv.AppID, pub.AppID, "app_hist00002"}, cfg.End)
		ledgerMid, ledgerEnd = day(182), day(1)
		full := measure()
		total, tables := storeBytes(t, s)

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
