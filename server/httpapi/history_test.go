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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
// The test clock's offset is kept in the store and every write run moves
// it on (each claim round jumps past a 72-hour window), so after write
// runs the store's clock stands months past the history's end; the kept
// JSON records the offset at the history's end, and a reuse run sets the
// store's back to it before its reads (BENCHMARKS.md, "A year at full
// scale": before, reuse runs read windows holding only the write runs'
// rows).
// XPROMO_HISTORY_SKIP_RAW skips comparing the rollups with the raw facts
// after the fill (rollupsMatchRaw: hours at full scale, where it sums a
// year of chains and lines per day; make test and smaller scales run it).
func TestHistoryReads(t *testing.T) {
	scale, err := strconv.ParseFloat(os.Getenv("XPROMO_HISTORY_SCALE"), 64)
	reads := 40
	if err != nil || scale <= 0 {
		// make test: a few hundred chains, so the generator's writes and
		// `ledger verify` after them run in CI; make history sets the scale.
		scale, reads = 0.00005, 2
	}
	if n, err := strconv.Atoi(os.Getenv("XPROMO_HISTORY_READS")); err == nil && n >= 0 {
		reads = n // 0: no reads (the write paths of a kept store only)
	}
	// The small store the full one's reads are also held against
	// (XPROMO_HISTORY_SMALL_SCALE; 0: none). By default make history's
	// runs at scale 0.01 and more get one of 0.001: 1,000 times smaller
	// than full, with 4 apps of 2,500 chains each (full: 5,000 an app), so
	// its pages are as full and its series as long.
	smallScale := 0.0
	if scale >= 0.01 {
		smallScale = 0.001
	}
	if v, err := strconv.ParseFloat(os.Getenv("XPROMO_HISTORY_SMALL_SCALE"), 64); err == nil && v >= 0 {
		smallScale = v
	}
	stores := os.Getenv("XPROMO_HISTORY_STORES")
	historyEach(t, func(t *testing.T, s storage.Store, kept *historyKept) {
		name := strings.TrimPrefix(t.Name(), "TestHistoryReads/")
		if stores != "" && !slices.Contains(strings.Split(stores, ","), name) {
			t.Skip("not in XPROMO_HISTORY_STORES")
		}
		h := newHistoryReader(t, s, kept)
		e, adv, pub, endpoint := h.e, h.adv, h.pub, h.endpoint
		empty := map[string]readFigure{}
		sz := kept.Sizes
		if !kept.reused {
			empty = h.measure(t, reads, false)

			var end time.Time
			sz, end = h.fill(t, s, scale)
			kept.Sizes = sz
			require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				kept.ClockOffset, err = tx.TestClockOffset(ctx)
				return err
			}))
			kept.save(t, name)
			require.NoError(t, s.Snapshot(context.Background(), func(r ledger.Reader) error {
				rep, err := ledger.Verify(context.Background(), r)
				if err == nil && !rep.OK() {
					err = fmt.Errorf("ledger verify: %+v", rep)
				}
				return err
			}))
			if os.Getenv("XPROMO_HISTORY_SKIP_RAW") == "" {
				rollupsMatchRaw(t, s, []string{adv.AppID, pub.AppID, "app_hist00002"}, end)
			} else {
				t.Log("XPROMO_HISTORY_SKIP_RAW: the rollups are not compared with the raw facts")
			}
			eventsDelivered(t, e, adv, endpoint, sz)
		}
		full := h.measure(t, reads, true)
		// The same reads on a small store of the same generator (its
		// reading apps' pages full, their series of 366 days), so that a
		// ratio says what the store's size costs, not what a page of 100
		// costs against an empty one.
		var small map[string]readFigure
		if smallScale > 0 && reads > 0 {
			var ss storage.Store
			if name == "sqlite" {
				ss = storagetest.SQLite(t)
			} else {
				ss = storagetest.Postgres(t)
			}
			hs := newHistoryReader(t, ss, &historyKept{})
			hs.fill(t, ss, smallScale)
			small = hs.measure(t, reads, true)
		}
		total, tables := storeBytes(t, s)
		// The write paths on the full store and on fresh empty ones of the
		// same kind, alternated in the same run (make history only: not
		// make test): XPROMO_HISTORY_WRITE_PAIRS pairs (1 after a fill,
		// none on a reused store unless set), each pair's order swapped.
		var writeRuns []writeRun
		pairs := 0
		if os.Getenv("XPROMO_HISTORY_SCALE") != "" && !kept.reused {
			pairs = 1
		}
		if n, err := strconv.Atoi(os.Getenv("XPROMO_HISTORY_WRITE_PAIRS")); err == nil {
			pairs = n
		}
		if pairs > 0 {
			var apps []string
			for i := 2; i < int(sz.Apps); i++ {
				apps = append(apps, fmt.Sprintf("app_hist%05d", i))
			}
			for i := range 2 * pairs {
				isFull := i%4 == 1 || i%4 == 2 // empty, full, full, empty, …
				w := s
				if !isFull {
					if name == "sqlite" {
						w = storagetest.SQLite(t)
					} else {
						w = storagetest.Postgres(t)
					}
				}
				writeRuns = append(writeRuns, writeRun{full: isFull, load: loadAverage(), figs: historyWrites(t, w, apps, !isFull, fmt.Sprintf("%d-%d", time.Now().Unix(), i))})
			}
		}

		var b strings.Builder
		fmt.Fprintf(&b, "store %s, scale %g: %d apps, %d chains (%d installs, %d cleared, %d refunded, %d rejected), %d fills in %d counter rows, %d ledger operations, %d events of the last 30 days with %d webhook attempts, written in %s; ledger verify: no violation\n",
			name, scale, sz.Apps, sz.Chains, sz.Installs, sz.Cleared, sz.Refunded, sz.Rejected, sz.Fills, sz.FillRows, sz.LedgerOps, sz.Events, sz.Attempts, sz.Took.Round(time.Second))
		fmt.Fprintf(&b, "storage: %.1f MB in all (tables and indexes), %d bytes per cleared install (%d cleared); largest: %s\n",
			float64(total)/1e6, total/max(1, sz.Cleared), sz.Cleared, strings.Join(tables, ", "))
		readTable(&b, h.list, empty, small, full, smallScale)
		if writeRuns != nil {
			writeTable(&b, writeRuns)
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

// historyReader is the reading apps of one store (an advertiser with a
// campaign and a webhook endpoint, a publisher) and the person-facing GETs
// TestHistoryReads times on it.
type historyReader struct {
	e                    *mktEnv
	adv, pub             xpromo.RegisterAppResponse
	cmp                  xpromo.Campaign
	endpoint             string
	list                 []historyRead
	ledgerMid, ledgerEnd string // the ledger pages' from: dates
}

type historyRead struct {
	name, key string
	path      func() string
	before    func() // not timed
}

// readFigure is one GET's p50 and p99, and the bytes of its last body.
type readFigure struct {
	p50, p99 time.Duration
	bytes    int64
}

// newHistoryReader registers the reading apps on s, or takes those of a
// kept store.
func newHistoryReader(t *testing.T, s storage.Store, kept *historyKept) *historyReader {
	t.Helper()
	e := newMktEnv(t, s)
	h := &historyReader{e: e}
	if kept.reused {
		h.adv.AppID, h.adv.APIKey, h.pub.AppID, h.pub.APIKey, h.cmp.CampaignID = kept.AdvID, kept.AdvKey, kept.PubID, kept.PubKey, kept.CampaignID
		h.endpoint = kept.EndpointID
	} else {
		h.adv = e.register(snip())
		h.pub = e.register(appRequest("Pub", xpromo.PlatformMac))
		e.topUp(h.adv.AppID, 50000, e.clock.Now().AddDate(-1, 0, -1))
		h.cmp = e.createCampaign(h.adv, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, h.adv.AppID))
		e.createCampaign(h.pub, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000000}`, h.pub.AppID))
		// The advertiser receives its chain events at a webhook
		// endpoint: the history records their delivery attempts.
		res := e.do("POST", "/v1/apps/"+h.adv.AppID+"/webhook-endpoints", h.adv.APIKey, map[string]any{"url": "https://example.com/hooks",
			"events": []string{"chain.state_changed", "chain.cleared", "chain.rejected", "fraud.flagged"}})
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var ep xpromo.WebhookEndpoint
		res.decode(t, &ep)
		h.endpoint = ep.ID
		kept.AdvID, kept.AdvKey, kept.PubID, kept.PubKey, kept.CampaignID, kept.EndpointID = h.adv.AppID, h.adv.APIKey, h.pub.AppID, h.pub.APIKey, h.cmp.CampaignID, h.endpoint
	}
	adv, pub, cmp := h.adv, h.pub, h.cmp
	day := func(ago int) string { return e.clock.Now().AddDate(0, 0, -ago).Format(time.DateOnly) }
	h.list = []historyRead{
		{name: "stats last_7_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_7_days" }},
		{name: "stats last_30_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_30_days" }},
		{name: "stats last_90_days", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/stats?period=last_90_days" }},
		{name: "stats/daily 30 days", key: adv.APIKey, path: func() string { return "/v1/stats/daily" }},
		{name: "stats/daily 366 days", key: adv.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(365) + "&to=" + day(0) }},
		{name: "stats/daily 90 days, campaign", key: adv.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(89) + "&campaign_id=" + cmp.CampaignID }},
		{name: "stats/daily 366 days, publisher", key: pub.APIKey, path: func() string { return "/v1/stats/daily?from=" + day(365) + "&to=" + day(0) }},
		{name: "ledger, first page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100" }},
		{name: "ledger, middle page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100&from=" + h.ledgerMid }},
		{name: "ledger, last page", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/ledger?limit=100&from=" + h.ledgerEnd }},
		{name: "events", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/events?limit=100" }},
		{name: "webhook attempts", key: adv.APIKey, path: func() string {
			return "/v1/apps/" + adv.AppID + "/webhook-endpoints/" + h.endpoint + "/attempts?limit=100"
		}},
		{name: "chains, first page", key: adv.APIKey, path: func() string { return "/v1/chains?limit=100" }},
		{name: "chains, cleared as advertiser", key: adv.APIKey, path: func() string { return "/v1/chains?limit=100&state=cleared&role=advertiser" }},
		// Rarer filters: a page of them read the app's whole history
		// before 00044's indexes.
		{name: "chains, rejected as advertiser", key: adv.APIKey, path: func() string { return "/v1/chains?limit=100&state=rejected&role=advertiser" }},
		{name: "chains, activated_48h", key: adv.APIKey, path: func() string { return "/v1/chains?limit=100&state=activated_48h" }},
		{name: "chains of a campaign, refunded", key: adv.APIKey, path: func() string { return "/v1/chains?limit=100&state=refunded&campaign_id=" + cmp.CampaignID }},
		{name: "balance", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/balance" }},
		{name: "campaigns", key: adv.APIKey, path: func() string { return "/v1/campaigns" }},
		{name: "score", key: adv.APIKey, path: func() string { return "/v1/apps/" + adv.AppID + "/score" }},
		// Network stats are recomputed once a minute: the clock moves past
		// it before each read, so each one computes. Last, so that the
		// other reads' windows end where the history does.
		{name: "network-stats (recomputed)", path: func() string { return "/v1/network-stats" }, before: func() { e.clock.Advance(61 * time.Second) }},
	}
	return h
}

// fill writes the history at scale into s, with the reading apps as its
// readers, and returns its sizes and its end.
func (h *historyReader) fill(t *testing.T, s storage.Store, scale float64) (loadgen.HistorySizes, time.Time) {
	t.Helper()
	cfg := loadgen.HistoryConfig{Scale: scale, End: h.e.clock.Now(), Seed: 33, Readers: []loadgen.HistoryApp{
		{ID: h.adv.AppID, CampaignID: h.cmp.CampaignID, Category: "games", PriceCents: 500, EndpointID: h.endpoint},
		{ID: h.pub.AppID, CampaignID: "cmp_of_pub", Category: "games", PriceCents: 450},
	}}
	sz, err := loadgen.History(context.Background(), s, cfg)
	require.NoError(t, err)
	return sz, cfg.End
}

// measure times reads of each GET (none when reads is 0). The ledger's
// middle and last pages start half a year and a day back on a store with
// history, today on an empty one.
func (h *historyReader) measure(t *testing.T, reads int, history bool) map[string]readFigure {
	t.Helper()
	day := func(ago int) string { return h.e.clock.Now().AddDate(0, 0, -ago).Format(time.DateOnly) }
	h.ledgerMid, h.ledgerEnd = day(0), day(0)
	if history {
		h.ledgerMid, h.ledgerEnd = day(182), day(1)
	}
	plain := &http.Client{}
	// get times one read and counts the bytes of its body: a page of 100
	// on the full store against a few rows on the empty one is what most
	// of a p99's growth is, so the table shows both.
	get := func(path, key string) (time.Duration, int64, error) {
		req, _ := http.NewRequest(http.MethodGet, h.e.url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		t0 := time.Now()
		res, err := plain.Do(req)
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		d := time.Since(t0)
		if res.StatusCode != http.StatusOK {
			return d, n, fmt.Errorf("GET %s: %d", path, res.StatusCode)
		}
		return d, n, err
	}
	out := map[string]readFigure{}
	for _, r := range h.list {
		if reads == 0 {
			break
		}
		var ds []time.Duration
		var n int64
		for range reads {
			if r.before != nil {
				r.before()
			}
			d, size, err := get(r.path(), r.key)
			require.NoError(t, err, r.name)
			ds, n = append(ds, d), size
		}
		slices.Sort(ds)
		out[r.name] = readFigure{loadgen.Percentile(ds, 50), loadgen.Percentile(ds, 99), n}
	}
	return out
}

// readTable writes the reads' table: each GET on the empty store, on the
// small one (when measured) and on the full one, with the full store's p99
// against each.
func readTable(b *strings.Builder, list []historyRead, empty, small, full map[string]readFigure, smallScale float64) {
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Microsecond)) }
	if small == nil {
		fmt.Fprintf(b, "| GET | empty p50 / p99 ms | full p50 / p99 ms | p99 full / empty | bytes empty / full |\n|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(b, "| GET | empty p50 / p99 ms | small (scale %g) p50 / p99 ms | full p50 / p99 ms | p99 full / empty | p99 full / small | bytes empty / small / full |\n|---|---|---|---|---|---|---|\n", smallScale)
	}
	for _, r := range list {
		em, sm, fu := empty[r.name], small[r.name], full[r.name]
		if small == nil {
			fmt.Fprintf(b, "| %s | %.2f / %.2f | %.2f / %.2f | %.1f× | %d / %d |\n", r.name, ms(em.p50), ms(em.p99), ms(fu.p50), ms(fu.p99),
				ratio(fu.p99, em.p99), em.bytes, fu.bytes)
			continue
		}
		fmt.Fprintf(b, "| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.1f× | %.1f× | %d / %d / %d |\n", r.name, ms(em.p50), ms(em.p99),
			ms(sm.p50), ms(sm.p99), ms(fu.p50), ms(fu.p99), ratio(fu.p99, em.p99), ratio(fu.p99, sm.p99), em.bytes, sm.bytes, fu.bytes)
	}
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

// eventsDelivered fails the test unless the history's events of the last
// 30 days read back through the API as the worker left them: the app's
// first event page is not empty, the newest attempt at its endpoint
// delivered its event, and every attempt of that page names one of the
// app's events.
func eventsDelivered(t *testing.T, e *mktEnv, app xpromo.RegisterAppResponse, endpoint string, sz loadgen.HistorySizes) {
	t.Helper()
	require.Positive(t, sz.Events, "events of the last 30 days")
	require.Positive(t, sz.Attempts, "webhook attempts")
	res := e.do("GET", "/v1/apps/"+app.AppID+"/events?limit=100", app.APIKey, nil)
	require.Equal(t, http.StatusOK, res.status, res.body)
	var page xpromo.EventPage
	res.decode(t, &page)
	require.NotEmpty(t, page.Events)
	res = e.do("GET", "/v1/apps/"+app.AppID+"/webhook-endpoints/"+endpoint+"/attempts?limit=100", app.APIKey, nil)
	require.Equal(t, http.StatusOK, res.status, res.body)
	var attempts xpromo.WebhookAttemptPage
	res.decode(t, &attempts)
	require.NotEmpty(t, attempts.Attempts)
	require.True(t, attempts.Attempts[0].Succeeded, "the newest attempt delivered its event")
	for _, a := range attempts.Attempts {
		res := e.do("GET", "/v1/apps/"+app.AppID+"/events/"+a.EventID, app.APIKey, nil)
		require.Equal(t, http.StatusOK, res.status, "attempt %s: event %s: %s", a.ID, a.EventID, res.body)
	}
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
	EndpointID                               string // the advertiser's webhook endpoint
	Sizes                                    loadgen.HistorySizes
	// ClockOffset is the store's test clock offset at the history's end
	// (test_mode.clock_offset_ns): write runs move it on, a reuse run sets
	// it back before it reads.
	ClockOffset time.Duration
	dir         string
	reused      bool
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
		if k.reused {
			// Back to the history's end: the write runs after the fill (and
			// after earlier reuse runs) moved the store's clock on.
			// The product's clock only moves forward (a CHECK keeps the
			// offset >= 0): the row is set by hand.
			const set = `UPDATE test_mode SET clock_offset_ns = $1 WHERE id = 1`
			t.Logf("test clock offset set back to the history's end (%s)", k.ClockOffset)
			switch db := s.(type) {
			case *postgres.DB:
				_, err = db.Pool().Exec(ctx, set, int64(k.ClockOffset))
			case *sqlite.DB:
				var raw *sql.DB
				if raw, err = sql.Open("sqlite", "file:"+db.Path()+"?_pragma=busy_timeout(10000)"); err == nil {
					_, err = raw.ExecContext(ctx, strings.Replace(set, "$1", "?", 1), int64(k.ClockOffset))
					raw.Close()
				}
			}
			require.NoError(t, err)
		}
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
// second and latencies in ms (nearest rank), with the count behind them,
// and on PostgreSQL the database's counters over the phase that measured it.
type writeFigure struct {
	rate, p50, p99 float64
	n              int64
	cost           *pgCounters // the phase's, nil on SQLite
	per            int64       // the operations cost is divided by
}

// writeRun is one historyWrites run: on the full or on an empty store, and
// the 1-minute load average when it started.
type writeRun struct {
	full bool
	load string
	figs map[string]writeFigure
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
// with a line each, as the full store's do with a year of them). run makes
// the postings' keys unique, so a kept store measured again posts anew.
func historyWrites(t *testing.T, s storage.Store, apps []string, fund bool, run string) map[string]writeFigure {
	t.Helper()
	ctx := context.Background()
	// A full store measured again: an earlier run's loadgen campaigns would
	// win this run's fills (loadgen needs its own advertisers).
	const pauseLoadgen = `UPDATE campaigns SET paused = true, status = 'paused'
WHERE app_id IN (SELECT id FROM apps WHERE name LIKE 'loadgen-%') AND NOT paused`
	switch db := s.(type) {
	case *postgres.DB:
		_, err := db.Pool().Exec(ctx, pauseLoadgen)
		require.NoError(t, err)
	case *sqlite.DB:
		raw, err := sql.Open("sqlite", "file:"+db.Path()+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		_, err = raw.ExecContext(ctx, pauseLoadgen)
		require.NoError(t, err)
		require.NoError(t, raw.Close())
	}
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
	// phase runs fn between two snapshots of the database's counters. The
	// test clock stands still while loadgen's estimate of it follows the
	// wall clock from its last reading (a claim round's jump): the phase's
	// wall time is added to the test clock after it, or the first claims of
	// the next phase would be dated a click-to-install time that much
	// shorter than the 15 s loadgen waits (fraud_ctit_too_short).
	phase := func(name string, fn func()) *pgCounters {
		t0 := time.Now()
		before := pgSnap(t, s)
		stop := cpuProfile(t, run+"-"+name)
		fn()
		stop()
		var d *pgCounters
		if before != nil {
			// Backends flush their statistics at most once a second.
			time.Sleep(1500 * time.Millisecond)
			d = pgSnap(t, s).minus(before)
		}
		ts.clock.Advance(time.Since(t0))
		return d
	}
	f, err := loadgen.Setup(ctx, op, loadgen.SetupConfig{Publishers: 2, FillPublishers: loadgen.FillPublishersFor(5 * time.Second),
		Advertisers: 2, Category: "productivity", ForwardedFor: true})
	require.NoError(t, err)
	if os.Getenv("XPROMO_HISTORY_NO_ROLLUPS") != "" {
		// After the setup, whose apps go live by their stats; on again
		// before the next run's.
		defer withoutRollups(t, s)()
	}
	c := phase("fills", func() {
		r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{Scenario: loadgen.ScenarioFill, Duration: 5 * time.Second, Concurrency: 8, ForwardedFor: true})
		require.NoError(t, err)
		out[writePaths[0]] = fig(op1(r, loadgen.OpFill))
	})
	w := out[writePaths[0]]
	w.cost, w.per = c, w.n
	out[writePaths[0]] = w
	const batch = 32
	c = phase("mixed", func() {
		r, err := loadgen.Run(ctx, op, f, loadgen.RunConfig{Scenario: loadgen.ScenarioOpenMixed, Duration: 10 * time.Second, Concurrency: 8,
			ClaimBatch: batch, FillRate: 200, ForwardedFor: true, BaseURL: ts.url})
		require.NoError(t, err)
		out[writePaths[1]] = fig(op1(r, loadgen.OpFill))
		out[writePaths[2]] = fig(op1(r, loadgen.OpInstall))
		// A sweep refunds a round's claims: its rate is batch over its
		// latency (the p50 sweep's).
		sw := fig(op1(r, loadgen.OpSweep))
		sw.rate = batch / (sw.p50 / 1000)
		out[writePaths[3]] = sw
	})
	// The mixed phase's counters, per claim (with the claim's share of the
	// sweeps and of the 200 fills a second beside them).
	w = out[writePaths[2]]
	w.cost, w.per = c, w.n
	out[writePaths[2]] = w

	// Single postings, as storetest.Bench's Post/parallel.
	var n atomic.Int64
	var mu sync.Mutex
	var ds []time.Duration
	var postErr error
	var took time.Duration
	c = phase("postings", func() {
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
					op, _ := ledger.TopUp(fmt.Sprintf("hist-w-top-%s-%d", run, i), app, 5000, "")
					if i%2 == 0 { // every other one holds escrow from a funded wallet
						op, _ = ledger.EscrowHold(fmt.Sprintf("hist-w-hold-%s-%d", run, i), ledger.Hold{ID: fmt.Sprintf("hist-w-ch%s-%d", run, i), Advertiser: app, Publisher: apps[0], Amount: 1})
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
		took = time.Since(start)
	})
	require.NoError(t, postErr)
	slices.Sort(ds)
	out[writePaths[4]] = writeFigure{rate: float64(len(ds)) / took.Seconds(), p50: ms(loadgen.Percentile(ds, 50)), p99: ms(loadgen.Percentile(ds, 99)),
		n: int64(len(ds)), cost: c, per: int64(len(ds))}
	return out
}

// pgCounters are a PostgreSQL database's own counters (pg_stat_database,
// pg_statio_user_tables), which other databases of the cluster do not
// move, and the CPU time of its backends (/proc/<pid>/stat, when the
// server runs on this machine).
type pgCounters struct {
	xacts, blksHit, blksRead, tupIns, tupUpd, tupFetched int64
	cpu                                                  time.Duration
	tables                                               map[string][4]int64 // heap hit, heap read, index hit, index read
	procs                                                map[int]time.Duration
}

// pgSnap reads s's counters; nil when s is not PostgreSQL.
func pgSnap(t *testing.T, s storage.Store) *pgCounters {
	t.Helper()
	db, ok := s.(*postgres.DB)
	if !ok {
		return nil
	}
	ctx := context.Background()
	c := &pgCounters{tables: map[string][4]int64{}, procs: map[int]time.Duration{}}
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT xact_commit, blks_hit, blks_read, tup_inserted, tup_updated, tup_fetched
FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.xacts, &c.blksHit, &c.blksRead, &c.tupIns, &c.tupUpd, &c.tupFetched))
	rows, err := db.Pool().Query(ctx, `SELECT relname, coalesce(heap_blks_hit, 0), coalesce(heap_blks_read, 0),
  coalesce(idx_blks_hit, 0), coalesce(idx_blks_read, 0) FROM pg_statio_user_tables`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		var v [4]int64
		require.NoError(t, rows.Scan(&name, &v[0], &v[1], &v[2], &v[3]))
		c.tables[name] = v
	}
	require.NoError(t, rows.Err())
	rows, err = db.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(t, err)
	for rows.Next() {
		var pid int
		require.NoError(t, rows.Scan(&pid))
		// utime and stime, fields 14 and 15, in clock ticks (100 a second).
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		c.procs[pid] = time.Duration(u+st) * 10 * time.Millisecond
	}
	require.NoError(t, rows.Err())
	return c
}

// minus is c less an earlier snapshot b.
func (c *pgCounters) minus(b *pgCounters) *pgCounters {
	d := &pgCounters{xacts: c.xacts - b.xacts, blksHit: c.blksHit - b.blksHit, blksRead: c.blksRead - b.blksRead,
		tupIns: c.tupIns - b.tupIns, tupUpd: c.tupUpd - b.tupUpd, tupFetched: c.tupFetched - b.tupFetched, tables: map[string][4]int64{}}
	for name, v := range c.tables {
		o := b.tables[name]
		d.tables[name] = [4]int64{v[0] - o[0], v[1] - o[1], v[2] - o[2], v[3] - o[3]}
	}
	for pid, cpu := range c.procs {
		d.cpu += cpu - b.procs[pid] // a backend opened since counts whole
	}
	return d
}

// add sums counters (of the runs of one kind).
func (c *pgCounters) add(o *pgCounters) *pgCounters {
	if c == nil {
		c = &pgCounters{tables: map[string][4]int64{}}
	}
	c.xacts, c.blksHit, c.blksRead, c.tupIns, c.tupUpd, c.tupFetched, c.cpu = c.xacts+o.xacts, c.blksHit+o.blksHit,
		c.blksRead+o.blksRead, c.tupIns+o.tupIns, c.tupUpd+o.tupUpd, c.tupFetched+o.tupFetched, c.cpu+o.cpu
	for name, v := range o.tables {
		w := c.tables[name]
		c.tables[name] = [4]int64{w[0] + v[0], w[1] + v[1], w[2] + v[2], w[3] + v[3]}
	}
	return c
}

// cpuProfile profiles this process (client and server) into
// XPROMO_HISTORY_CPUPROFILE/<name>.pprof when that is set.
func cpuProfile(t *testing.T, name string) (stop func()) {
	dir := os.Getenv("XPROMO_HISTORY_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	require.NoError(t, err)
	require.NoError(t, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(t, f.Close())
	}
}

// withoutRollups disables the daily rollups' triggers of a PostgreSQL store
// until restore (XPROMO_HISTORY_NO_ROLLUPS: how much of a write path's cost
// they are). Their figures are then wrong for what is written meanwhile.
func withoutRollups(t *testing.T, s storage.Store) (restore func()) {
	db, ok := s.(*postgres.DB)
	if !ok {
		// SQLite's rollups are row triggers the store's own writes rely on
		// (stats_daily_add); they stay on, and the figures say so.
		t.Log("XPROMO_HISTORY_NO_ROLLUPS: SQLite keeps its rollups on; only PostgreSQL's are switched off")
		return func() {}
	}
	ctx := context.Background()
	// As the login role, which owns the tables (the pool runs as xpromo_app).
	conn, err := pgx.ConnectConfig(ctx, db.Pool().Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	rows, err := conn.Query(ctx, `SELECT t.tgrelid::regclass::text, t.tgname, t.tgenabled::text FROM pg_trigger t
JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal AND p.proname LIKE 'stats\_%' AND t.tgenabled <> 'D'`)
	require.NoError(t, err)
	type trig struct{ table, name, enabled string }
	var ts []trig
	for rows.Next() {
		var g trig
		require.NoError(t, rows.Scan(&g.table, &g.name, &g.enabled))
		ts = append(ts, g)
	}
	require.NoError(t, rows.Err())
	for _, g := range ts {
		_, err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DISABLE TRIGGER %s", g.table, g.name))
		require.NoError(t, err)
	}
	t.Logf("rollup triggers disabled: %d", len(ts))
	return func() {
		for _, g := range ts {
			how := map[string]string{"A": "ENABLE ALWAYS", "R": "ENABLE REPLICA"}[g.enabled]
			_, err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s %s TRIGGER %s", g.table, cmp.Or(how, "ENABLE"), g.name))
			require.NoError(t, err)
		}
	}
}

// loadAverage is the machine's 1-minute load average ("?" off Linux).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// writeTable prints the write paths' figures of each run, empty against
// full, and on PostgreSQL the database's counters per operation of each
// kind of run (summed over its runs).
func writeTable(b *strings.Builder, runs []writeRun) {
	fmt.Fprintf(b, "| write path | run (load) | empty: rate, p50 / p99 ms (n) | full: rate, p50 / p99 ms (n) |\n|---|---|---|---|\n")
	for _, w := range writePaths {
		for i, r := range runs {
			f := r.figs[w]
			cell := fmt.Sprintf("%.1f, %.2f / %.2f (%d)", f.rate, f.p50, f.p99, f.n)
			if r.full {
				fmt.Fprintf(b, "| %s | %d (%s) | | %s |\n", w, i+1, r.load, cell)
			} else {
				fmt.Fprintf(b, "| %s | %d (%s) | %s | |\n", w, i+1, r.load, cell)
			}
		}
	}
	fmt.Fprintf(b, "| write path | median rate empty | median rate full | full / empty | pairs' ratios |\n|---|---|---|---|---|\n")
	for _, w := range writePaths {
		var em, fu []float64
		var ratios []string
		for i := 0; i+1 < len(runs); i += 2 {
			e, f := runs[i], runs[i+1]
			if e.full {
				e, f = f, e
			}
			ratios = append(ratios, fmt.Sprintf("%.2f", f.figs[w].rate/max(e.figs[w].rate, 1e-9)))
		}
		for _, r := range runs {
			if r.full {
				fu = append(fu, r.figs[w].rate)
			} else {
				em = append(em, r.figs[w].rate)
			}
		}
		me, mf := median(em), median(fu)
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.2f× | %s |\n", w, me, mf, mf/max(me, 1e-9), strings.Join(ratios, ", "))
	}
	if runs[0].figs[writePaths[0]].cost == nil {
		return
	}
	fmt.Fprintf(b, "| per operation (PostgreSQL) | store | commits | buffers hit / read | tuples inserted / updated / fetched | backend CPU ms | most buffers (table: heap hit+read, index hit+read) |\n|---|---|---|---|---|---|---|\n")
	for _, w := range writePaths {
		for _, full := range []bool{false, true} {
			var c *pgCounters
			var per int64
			for _, r := range runs {
				if f := r.figs[w]; r.full == full && f.cost != nil {
					c, per = c.add(f.cost), per+f.per
				}
			}
			if c == nil {
				continue
			}
			p := float64(max(per, 1))
			type tb struct {
				name      string
				heap, idx int64
			}
			var top []tb
			for name, v := range c.tables {
				top = append(top, tb{name, v[0] + v[1], v[2] + v[3]})
			}
			slices.SortFunc(top, func(a, b tb) int { return cmp.Compare(b.heap+b.idx, a.heap+a.idx) })
			var most []string
			for _, x := range top[:min(4, len(top))] {
				most = append(most, fmt.Sprintf("%s %.1f+%.1f", x.name, float64(x.heap)/p, float64(x.idx)/p))
			}
			store := map[bool]string{false: "empty", true: "full"}[full]
			fmt.Fprintf(b, "| %s | %s | %.2f | %.1f / %.2f | %.1f / %.1f / %.1f | %.3f | %s |\n", w, store, float64(c.xacts)/p,
				float64(c.blksHit)/p, float64(c.blksRead)/p, float64(c.tupIns)/p, float64(c.tupUpd)/p, float64(c.tupFetched)/p,
				ms(c.cpu)/p, strings.Join(most, ", "))
		}
	}
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
