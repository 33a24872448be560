package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// mktEnv is a server whose clock starts at 21 Nov 2026 12:00 UTC, with the
// apps domain on its store to move apps through their statuses.
type mktEnv struct {
	*testServer
	apps *apps.Service
}

func newMktEnv(t *testing.T, s storage.Store) *mktEnv {
	t.Helper()
	srv := serve(t, s, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), unlimited)
	return &mktEnv{testServer: srv, apps: &apps.Service{Update: storage.Updater[apps.Tx](s), View: storage.Viewer[apps.Tx](s), Now: srv.clock.Now}}
}

// goLive moves an app through the status machine to live.
func (e *mktEnv) goLive(appID string) {
	e.t.Helper()
	require.NoError(e.t, e.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		a, _, err := tx.GetApp(ctx, appID, true)
		if err != nil {
			return err
		}
		for _, to := range []xpromo.AppStatus{xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive} {
			if to == a.Status {
				a.Status = "" // from here on, every step is a move
				continue
			}
			if _, err := e.apps.Transition(ctx, tx, appID, to, "test", apps.ActorMarket); err != nil {
				return err
			}
		}
		return nil
	}))
}

// postAt applies ledger operations at time at, in one transaction.
func (e *mktEnv) postAt(at time.Time, ops ...ledger.Operation) {
	e.t.Helper()
	require.NoError(e.t, e.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		_, errs, err := ledger.Apply(ctx, tx, at, ops)
		if err != nil {
			return err
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}))
}

func (e *mktEnv) topUp(appID string, amount int64, at time.Time) {
	e.t.Helper()
	op, err := ledger.TopUp(fmt.Sprintf("topup:%s:%d:%d", appID, amount, at.UnixNano()), appID, amount, "")
	require.NoError(e.t, err)
	e.postAt(at, op)
}

func (e *mktEnv) createCampaign(app xpromo.RegisterAppResponse, body string) xpromo.Campaign {
	e.t.Helper()
	res := e.do("POST", "/v1/campaigns", app.APIKey, body)
	require.Equal(e.t, http.StatusCreated, res.status, res.body)
	var c xpromo.Campaign
	res.decode(e.t, &c)
	return c
}

func TestMarketRateCard(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		res := e.do("GET", "/v1/rate-card", "", nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `{"currency":"EUR","take_rate":0.3,"credit_bonus":1.2,"categories":[`+
			`{"key":"design","label":"Design","floor_cents_min":450,"floor_cents_max":550},`+
			`{"key":"developer-tools","label":"Developer Tools","floor_cents_min":400,"floor_cents_max":500},`+
			`{"key":"education","label":"Education","floor_cents_min":200,"floor_cents_max":250},`+
			`{"key":"finance","label":"Finance","floor_cents_min":500,"floor_cents_max":600},`+
			`{"key":"games","label":"Games","floor_cents_min":150,"floor_cents_max":200},`+
			`{"key":"music-audio","label":"Music \u0026 Audio","floor_cents_min":250,"floor_cents_max":350},`+
			`{"key":"photo-video","label":"Photo \u0026 Video","floor_cents_min":350,"floor_cents_max":450},`+
			`{"key":"productivity","label":"Productivity","floor_cents_min":300,"floor_cents_max":400},`+
			`{"key":"security","label":"Security","floor_cents_min":450,"floor_cents_max":500},`+
			`{"key":"utilities","label":"Utilities","floor_cents_min":200,"floor_cents_max":300}],`+
			`"reserved_floor_share":0.3,"pricing_model":"floor_plus_second_price"}`, res.body)

		// A server restarted on the same store with the same catalogue
		// starts, and publishes the same card.
		again := newMktEnv(t, s)
		assert.Equal(t, res.body, again.do("GET", "/v1/rate-card", "", nil).body)
	})
}

func TestMarketAdminFloorCut(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		path := "/v1/admin/categories/productivity/floors"
		cut := `{"platform":"win","floor_cents":250,"reason":"spring promotion"}`

		res := e.do("POST", path, "", cut)
		assert.Equal(t, http.StatusUnauthorized, res.status)
		app := e.register(snip())
		res = e.do("POST", path, app.APIKey, cut)
		assert.Equal(t, http.StatusUnauthorized, res.status, "an API key is not the admin token")

		res = e.do("POST", path, adminToken, cut)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `{"key":"productivity","label":"Productivity","floors":{"mac":400,"win":250}}`, res.body)
		assert.Contains(t, e.do("GET", "/v1/rate-card", "", nil).body,
			`{"key":"productivity","label":"Productivity","floor_cents_min":250,"floor_cents_max":400}`)

		// Equal: 200, nothing changes.
		res = e.do("POST", path, adminToken, cut)
		assert.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `{"key":"productivity","label":"Productivity","floors":{"mac":400,"win":250}}`, res.body)

		// Up, even back to where it was: 409.
		res = e.do("POST", path, adminToken, `{"platform":"win","floor_cents":300,"reason":"undo"}`)
		assert.Equal(t, http.StatusConflict, res.status)
		assert.Equal(t, "floor_cannot_rise", res.code(t))

		for _, c := range []struct {
			path, body string
			status     int
			code       string
		}{
			{"/v1/admin/categories/gardening/floors", cut, 404, "not_found"},
			{path, `{"platform":"linux","floor_cents":100,"reason":"r"}`, 422, "invalid_platform"},
			{path, `{"platform":"mac","floor_cents":0,"reason":"r"}`, 422, "invalid_amount"},
			{path, `{"platform":"mac","floor_cents":100}`, 422, "missing_field"},
			{path, `{"platform":"mac","floor_cents":"100","reason":"r"}`, 422, "invalid_type"},
			{path, `{"platform":"mac","floor_cents":100,"reason":"r","category":"x"}`, 422, "unknown_field"},
		} {
			res := e.do("POST", c.path, adminToken, c.body)
			assert.Equal(t, c.status, res.status, c.body)
			assert.Equal(t, c.code, res.code(t), c.body)
		}

		// The cut is in the floor history and in the operators' audit log.
		entries, err := e.apps.Audit(context.Background(), apps.AuditQuery{Limit: 10})
		require.NoError(t, err)
		var cuts []string
		for _, a := range entries.Entries {
			if a.Action == "market.floor_cut" {
				var d map[string]any
				require.NoError(t, json.Unmarshal(a.Detail, &d))
				cuts = append(cuts, fmt.Sprint(a.Actor, " ", a.Subject, " ", d))
			}
		}
		assert.Equal(t, []string{`admin category:productivity map[from:300 platform:win reason:spring promotion to:250]`}, cuts)

		// Campaigns see the cut floor; a restart with the shipped catalogue
		// (win productivity 300, above the cut) refuses to start.
		_, err = assembly.New(assembly.Config{Mode: "test", Now: e.clock.Now}, s)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "floor_cannot_rise")
	})
}

func TestMarketCreateCampaign(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		mac := e.register(snip())
		win := e.register(appRequest("Paint", xpromo.PlatformWin))

		// Floor = the highest floor of the categories on the app's platform:
		// finance on mac is 600.
		res := e.do("POST", "/v1/campaigns", mac.APIKey, fmt.Sprintf(`{"app_id":%q,"categories":["productivity","finance"],"daily_budget_cents":5000}`, mac.AppID))
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var c xpromo.Campaign
		res.decode(t, &c)
		assert.True(t, strings.HasPrefix(c.CampaignID, "cmp_"), c.CampaignID)
		assert.Equal(t, fmt.Sprintf(`{"campaign_id":%q,"daily_budget_cents":5000,"status":"throttled","status_reason":"app_pending","floor_cents":600,"max_bid_cents":null,`+
			`"app_id":%q,"categories":["productivity","finance"],"spent_today_cents":0,"created_at":"2026-11-21T12:00:00Z","updated_at":"2026-11-21T12:00:00Z"}`, c.CampaignID, mac.AppID), res.body,
			"a pending app's campaign says it waits for the gate")

		// On win, productivity (300) beats games (150); a bid at the floor.
		c = e.createCampaign(win, fmt.Sprintf(`{"app_id":%q,"categories":["games","productivity"],"daily_budget_cents":1000,"max_bid_cents":300}`, win.AppID))
		at := e.clock.Now().UTC()
		assert.Equal(t, xpromo.Campaign{CampaignID: c.CampaignID, DailyBudgetCents: 1000, Status: "throttled", StatusReason: new("app_pending"), FloorCents: 300, MaxBidCents: new(int64(300)),
			AppID: win.AppID, Categories: []string{"games", "productivity"}, CreatedAt: at, UpdatedAt: at}, c)

		// The floor follows cuts.
		res = e.do("POST", "/v1/admin/categories/finance/floors", adminToken, `{"platform":"mac","floor_cents":550,"reason":"r"}`)
		require.Equal(t, http.StatusOK, res.status, res.body)
		c = e.createCampaign(mac, fmt.Sprintf(`{"app_id":%q,"categories":["finance"],"daily_budget_cents":1000,"max_bid_cents":550}`, mac.AppID))
		assert.Equal(t, int64(550), c.FloorCents)
	})
}

func TestMarketCampaignValidation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		a := e.register(snip())
		b := e.register(appRequest("Paint", xpromo.PlatformWin))
		body := func(fields string) string { return fmt.Sprintf(`{"app_id":%q,%s}`, a.AppID, fields) }
		for _, c := range []struct {
			name, body string
			status     int
			code       string
		}{
			{"budget under 1000", body(`"categories":["games"],"daily_budget_cents":999`), 422, "below_minimum"},
			{"bid under the floor", body(`"categories":["games","finance"],"daily_budget_cents":1000,"max_bid_cents":599`), 422, "bid_below_floor"},
			{"zero bid", body(`"categories":["games"],"daily_budget_cents":1000,"max_bid_cents":0`), 422, "bid_below_floor"},
			{"unknown category", body(`"categories":["finance","gardening"],"daily_budget_cents":1000`), 422, "unknown_category"},
			{"no category", body(`"categories":[],"daily_budget_cents":1000`), 422, "invalid_category"},
			{"category twice", body(`"categories":["games","games"],"daily_budget_cents":1000`), 422, "invalid_category"},
			{"unknown field", body(`"categories":["games"],"daily_budget_cents":1000,"name":"x"`), 422, "unknown_field"},
			{"budget as a string", body(`"categories":["games"],"daily_budget_cents":"5000"`), 422, "invalid_type"},
			{"fractional budget", body(`"categories":["games"],"daily_budget_cents":1000.5`), 422, "invalid_type"},
			{"categories as a string", body(`"categories":"games","daily_budget_cents":1000`), 422, "invalid_type"},
			{"null bid", body(`"categories":["games"],"daily_budget_cents":1000,"max_bid_cents":null`), 422, "invalid_type"},
			{"bid as a string", body(`"categories":["games"],"daily_budget_cents":1000,"max_bid_cents":"300"`), 422, "invalid_type"},
			{"fractional bid", body(`"categories":["games"],"daily_budget_cents":1000,"max_bid_cents":300.5`), 422, "invalid_type"},
			{"no budget", body(`"categories":["games"]`), 422, "missing_field"},
			{"no categories", body(`"daily_budget_cents":1000`), 422, "missing_field"},
			{"no app", `{"categories":["games"],"daily_budget_cents":1000}`, 422, "missing_field"},
			{"huge budget", body(`"categories":["games"],"daily_budget_cents":100000000000`), 422, "invalid_amount"},
			{"malformed", `{"app_id":`, 400, "malformed_json"},
			{"another app's id", fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000}`, b.AppID), 404, "not_found"},
		} {
			res := e.do("POST", "/v1/campaigns", a.APIKey, c.body)
			assert.Equal(t, c.status, res.status, "%s: %s", c.name, res.body)
			assert.Equal(t, c.code, res.code(t), c.name)
		}

		// Another app's id answers exactly as a missing one.
		other := e.do("POST", "/v1/campaigns", a.APIKey, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":1000}`, b.AppID))
		missing := e.do("POST", "/v1/campaigns", a.APIKey, `{"app_id":"app_missing","categories":["games"],"daily_budget_cents":1000}`)
		assert.Equal(t, missing.status, other.status)
		assert.Equal(t, missing.body, strings.ReplaceAll(other.body, b.AppID, "app_missing"))

		res := e.do("POST", "/v1/campaigns", "", body(`"categories":["games"],"daily_budget_cents":1000`))
		assert.Equal(t, http.StatusUnauthorized, res.status)
	})
}

func TestMarketPauseResume(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		a := e.register(snip())
		b := e.register(appRequest("Paint", xpromo.PlatformWin))
		c := e.createCampaign(a, fmt.Sprintf(`{"app_id":%q,"categories":["finance"],"daily_budget_cents":2000}`, a.AppID))
		require.Equal(t, int64(600), c.FloorCents)
		campaign := func(status string) string {
			reason := "null"
			switch status {
			case "paused", "active":
			default: // throttled:reason
				status, reason, _ = strings.Cut(status, ":")
				reason = `"` + reason + `"`
			}
			return fmt.Sprintf(`{"campaign_id":%q,"daily_budget_cents":2000,"status":%q,"status_reason":%s,"floor_cents":600,"max_bid_cents":null,`+
				`"app_id":%q,"categories":["finance"],"spent_today_cents":0,"created_at":"2026-11-21T12:00:00Z","updated_at":"2026-11-21T12:00:00Z"}`, c.CampaignID, status, reason, a.AppID)
		}
		call := func(app xpromo.RegisterAppResponse, action string) response {
			return e.do("POST", "/v1/campaigns/"+c.CampaignID+"/"+action, app.APIKey, nil)
		}
		expect := func(app xpromo.RegisterAppResponse, action string, status string) {
			t.Helper()
			res := call(app, action)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.Equal(t, campaign(status), res.body, action)
		}

		expect(a, "pause", "paused")
		expect(a, "pause", "paused") // a no-op, still 200
		expect(a, "resume", "throttled:app_pending")
		expect(a, "resume", "throttled:app_pending") // the app is pending

		// Another app's campaign answers exactly as a missing one.
		for _, action := range []string{"pause", "resume"} {
			other := call(b, action)
			missing := e.do("POST", "/v1/campaigns/cmp_missing/"+action, b.APIKey, nil)
			assert.Equal(t, http.StatusNotFound, other.status)
			assert.Equal(t, "not_found", other.code(t))
			assert.Equal(t, missing.status, other.status)
			assert.Equal(t, missing.body, other.body, "byte-identical: the id is not echoed")
		}
		assert.Equal(t, http.StatusUnauthorized, e.do("POST", "/v1/campaigns/"+c.CampaignID+"/pause", "", nil).status)
		expect(a, "pause", "paused") // b's attempts changed nothing
		expect(a, "resume", "throttled:app_pending")

		// Approved, not live: delivery within the throttled cap.
		res := e.do("POST", "/v1/admin/apps/"+a.AppID+"/approve", adminToken, `{"reason":"r"}`)
		require.Equal(t, http.StatusOK, res.status, res.body)
		expect(a, "resume", "throttled:app_not_live")

		// Live but unfunded, then one cent short of the floor: throttled.
		e.goLive(a.AppID)
		expect(a, "resume", "throttled:wallet_below_floor")
		e.topUp(a.AppID, 599, e.clock.Now())
		expect(a, "resume", "throttled:wallet_below_floor")
		// The wallet covers the floor: active.
		e.topUp(a.AppID, 1, e.clock.Now())
		expect(a, "resume", "active")
		expect(a, "resume", "active")
		expect(a, "pause", "paused")
		expect(a, "resume", "active")
	})
}

// Stats and network stats on a ledger with real holds, releases and clears.
func TestMarketStats(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		a := e.register(snip())
		b := e.register(appRequest("Paint", xpromo.PlatformWin))
		pub := e.register(appRequest("Pub", xpromo.PlatformMac))
		empty := e.register(appRequest("Quiet", xpromo.PlatformWin))
		e.createCampaign(a, fmt.Sprintf(`{"app_id":%q,"categories":["games"],"daily_budget_cents":2000}`, a.AppID))
		e.createCampaign(a, fmt.Sprintf(`{"app_id":%q,"categories":["finance","utilities"],"daily_budget_cents":2000}`, a.AppID))

		now := e.clock.Now()
		day := 24 * time.Hour
		e.topUp(a.AppID, 50000, now.Add(-200*day))
		e.topUp(b.AppID, 50000, now.Add(-200*day))
		type event struct {
			at time.Time
			op ledger.Operation
		}
		var events []event
		hold := func(adv string, n int, amount int64, age time.Duration, resolution string) {
			h := ledger.Hold{ID: fmt.Sprintf("hold_%s_%d", adv, n), Advertiser: adv, Publisher: pub.AppID, Amount: amount, ChainID: fmt.Sprintf("ch_%s_%d", adv, n)}
			op, err := ledger.EscrowHold("hold:"+h.ID, h)
			require.NoError(t, err)
			events = append(events, event{now.Add(-age), op})
			switch resolution {
			case "charge":
				op, err = ledger.Clear("clear:"+h.ID, h, ledger.EarnCash)
			case "release":
				op, err = ledger.EscrowRelease("release:"+h.ID, h)
			default:
				return
			}
			require.NoError(t, err)
			// Chains resolve 48 hours or more after the install.
			at := now.Add(-age + 49*time.Hour)
			if at.After(now) {
				at = now
			}
			events = append(events, event{at, op})
		}
		hold(a.AppID, 1, 650, 2*day, "charge")
		hold(a.AppID, 2, 700, 10*day, "charge")
		hold(a.AppID, 3, 600, 1*day, "release")
		hold(a.AppID, 4, 600, 1*day, "")
		hold(a.AppID, 5, 800, 40*day, "charge")
		hold(a.AppID, 6, 900, 100*day, "charge")
		hold(b.AppID, 1, 500, 5*day, "release")
		hold(b.AppID, 2, 520, 5*day, "charge")
		slices.SortStableFunc(events, func(x, y event) int { return x.at.Compare(y.at) })
		for _, ev := range events {
			e.postAt(ev.at, ev.op)
		}

		stats := func(app xpromo.RegisterAppResponse, query string) response {
			return e.do("GET", "/v1/apps/"+app.AppID+"/stats"+query, app.APIKey, nil)
		}
		for _, c := range []struct{ query, want string }{
			{"?period=last_7_days", `{"impressions":0,"clicks":0,"installs":3,"cleared":1,"retention_48h":0.5,"fraud_rejected":{},"floor_cents":600,"avg_clearing_price_cents":650}`},
			{"", `{"impressions":0,"clicks":0,"installs":4,"cleared":2,"retention_48h":0.6666666666666666,"fraud_rejected":{},"floor_cents":600,"avg_clearing_price_cents":675}`},
			{"?period=last_30_days", `{"impressions":0,"clicks":0,"installs":4,"cleared":2,"retention_48h":0.6666666666666666,"fraud_rejected":{},"floor_cents":600,"avg_clearing_price_cents":675}`},
			{"?period=last_90_days", `{"impressions":0,"clicks":0,"installs":5,"cleared":3,"retention_48h":0.75,"fraud_rejected":{},"floor_cents":600,"avg_clearing_price_cents":717}`},
		} {
			res := stats(a, c.query)
			require.Equal(t, http.StatusOK, res.status, res.body)
			assert.Equal(t, c.want, res.body, c.query)
		}
		// An app without campaigns has floor 0; the average is still its
		// cleared installs' price.
		res := stats(b, "")
		assert.Equal(t, `{"impressions":0,"clicks":0,"installs":2,"cleared":1,"retention_48h":0.5,"fraud_rejected":{},"floor_cents":0,"avg_clearing_price_cents":520}`, res.body)
		// Nothing cleared: the average is the floor.
		res = stats(empty, "?period=last_7_days")
		assert.Equal(t, `{"impressions":0,"clicks":0,"installs":0,"cleared":0,"retention_48h":0,"fraud_rejected":{},"floor_cents":0,"avg_clearing_price_cents":0}`, res.body)
		// Stats describe the advertiser: the publisher's own stats are empty.
		res = stats(pub, "")
		assert.Equal(t, `{"impressions":0,"clicks":0,"installs":0,"cleared":0,"retention_48h":0,"fraud_rejected":{},"floor_cents":0,"avg_clearing_price_cents":0}`, res.body)

		for _, q := range []string{"?period=last_week", "?period=", "?period=LAST_7_DAYS"} {
			res := stats(a, q)
			assert.Equal(t, http.StatusUnprocessableEntity, res.status, q)
			assert.Equal(t, "invalid_period", res.code(t), q)
		}
		// Another app's stats: 404, as a missing app's.
		other := e.do("GET", "/v1/apps/"+b.AppID+"/stats", a.APIKey, nil)
		missing := e.do("GET", "/v1/apps/app_missing/stats", a.APIKey, nil)
		assert.Equal(t, http.StatusNotFound, other.status)
		assert.Equal(t, missing.body, strings.ReplaceAll(other.body, b.AppID, "app_missing"))

		// The network over 30 days: a1, a2, a3, b1, b2 resolved; a1, a2, b2
		// charged.
		res = e.do("GET", "/v1/network-stats", "", nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `{"period":"last_30_days","clearing_rate":0.6,"fraud_pct":0,"avg_cpi_by_category":{}}`, res.body)

		// Network stats are recomputed at most once a minute.
		h := ledger.Hold{ID: "hold_late", Advertiser: b.AppID, Publisher: pub.AppID, Amount: 500}
		op, err := ledger.EscrowHold("hold:late", h)
		require.NoError(t, err)
		rel, err := ledger.EscrowRelease("release:late", h)
		require.NoError(t, err)
		e.postAt(now, op, rel)
		assert.Contains(t, e.do("GET", "/v1/network-stats", "", nil).body, `"clearing_rate":0.6,`)
		e.clock.Advance(time.Minute)
		assert.Contains(t, e.do("GET", "/v1/network-stats", "", nil).body, `"clearing_rate":0.5,`)
	})
}

func TestMarketNetworkStatsEmpty(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newMktEnv(t, s)
		res := e.do("GET", "/v1/network-stats", "", nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, `{"period":"last_30_days","clearing_rate":0,"fraud_pct":0,"avg_cpi_by_category":{}}`, res.body)
	})
}

// The operator's catalogue file replaces the shipped one; a broken file stops
// the server from starting.
func TestMarketCategoriesFile(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		dir := t.TempDir()
		path := filepath.Join(dir, "categories.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"categories":[
			{"key":"games","label":"Games","floors":{"mac":180,"win":150}},
			{"key":"cad","label":"CAD","floors":{"mac":900,"win":800}}]}`), 0o644))
		srv, err := assembly.New(assembly.Config{Mode: "test", Now: time.Now, CategoriesFile: path}, s)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/rate-card", nil))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var card xpromo.RateCard
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &card))
		assert.Equal(t, []xpromo.RateCardCategory{
			{Key: "cad", Label: "CAD", FloorCentsMin: 800, FloorCentsMax: 900},
			{Key: "games", Label: "Games", FloorCentsMin: 150, FloorCentsMax: 180},
		}, card.Categories)

		bad := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte(`{"categories":[{"key":"games","label":"Games","floors":{"mac":180}}]}`), 0o644))
		_, err = assembly.New(assembly.Config{Mode: "test", Now: time.Now, CategoriesFile: bad}, s)
		assert.ErrorContains(t, err, `category "games" has no win floor`)
		_, err = assembly.New(assembly.Config{Mode: "test", Now: time.Now, CategoriesFile: filepath.Join(dir, "missing.json")}, s)
		assert.Error(t, err)
	})
}
