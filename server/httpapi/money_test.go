package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// newMoneyAPI is a server paying x402 at 1.08 USD/EUR whose clock starts at
// 21 Nov 2026 22:00 UTC.
func newMoneyAPI(t *testing.T, s storage.Store) *testServer {
	t.Helper()
	cfg := unlimited
	cfg.X402EURUSD = "1.08"
	return serve(t, s, time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC), cfg)
}

// post posts what an operation builder returns straight to the ledger, at
// the clock's time: the other domains' side (holds, clearing).
func (a *testServer) post(op ledger.Operation, err error) {
	a.t.Helper()
	require.NoError(a.t, err)
	_, err = (&ledger.Ledger{Store: a.store, Now: a.clock.Now}).Post(context.Background(), op)
	require.NoError(a.t, err)
}

// clearedInstall gives pub cash earnings: adv tops up 10000 and pays them
// for an install on chain chn_1 that clears.
func (a *testServer) clearedInstall(adv, pub string) {
	a.t.Helper()
	a.post(ledger.TopUp("topup:adv", adv, 10_000, ""))
	h := ledger.Hold{ID: "hold_1", Advertiser: adv, Publisher: pub, Amount: 10_000, ChainID: "chn_1"}
	a.post(ledger.EscrowHold("hold:chn_1", h))
	a.post(ledger.Clear("clear:chn_1", h, ledger.EarnCash))
}

// ledger reads an app's ledger page through the API.
func (a *testServer) ledger(app, key string, query ...string) xpromo.LedgerPage {
	a.t.Helper()
	path := "/v1/apps/" + app + "/ledger"
	if len(query) > 0 {
		path += "?" + strings.Join(query, "&")
	}
	res := a.do(http.MethodGet, path, key, nil)
	require.Equal(a.t, http.StatusOK, res.status, res.body)
	var p xpromo.LedgerPage
	res.decode(a.t, &p)
	return p
}

func TestMoneyTopUpValidation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		other, _ := api.newApp()
		topUp := "/v1/apps/" + app + "/top-up"
		for _, c := range []struct {
			body   any
			status int
			code   string
		}{
			{map[string]any{"amount_cents": 4999}, 422, "below_minimum"},
			{map[string]any{"amount_cents": -5}, 422, "below_minimum"},
			{map[string]any{"amount_cents": 10_000_001}, 422, "invalid_amount"},
			{map[string]any{}, 422, "missing_field"},
			{map[string]any{"amount_cents": "5000"}, 422, "invalid_type"},
			{map[string]any{"amount_cents": 5000.5}, 422, "invalid_type"},
			{map[string]any{"amount_cents": 5000, "currency": "EUR"}, 422, "unknown_field"},
			{`{"amount_cents":`, 400, "malformed_json"},
		} {
			res := api.do(http.MethodPost, topUp, key, c.body)
			assert.Equal(t, c.status, res.status, "%v: %s", c.body, res.body)
			assert.Equal(t, c.code, res.code(t), "%v", c.body)
		}
		res := api.do(http.MethodPost, "/v1/apps/"+other+"/top-up", key, map[string]any{"amount_cents": 5000})
		assert.Equal(t, 404, res.status)
		res = api.do(http.MethodPost, topUp, "", map[string]any{"amount_cents": 5000})
		assert.Equal(t, 401, res.status)
		assert.Empty(t, api.ledger(app, key).Lines)
	})
}

func TestMoneyTestCheckout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		res := api.do(http.MethodPost, "/v1/apps/"+app+"/top-up", key, map[string]any{"amount_cents": 12345})
		require.Equal(t, 200, res.status, res.body)
		var top xpromo.TopUpResponse
		res.decode(t, &top)
		require.True(t, strings.HasPrefix(top.CheckoutURL, api.url+"/test/checkout/cs_"), top.CheckoutURL)
		session := strings.TrimPrefix(top.CheckoutURL, api.url+"/test/checkout/")

		page := api.do(http.MethodGet, top.CheckoutURL, "", nil, "Accept: text/html")
		require.Equal(t, 200, page.status)
		assert.Equal(t, "text/html; charset=utf-8", page.header.Get("Content-Type"))
		html := page.body
		assert.Contains(t, html, "EUR 123.45")
		assert.Contains(t, html, app)
		assert.Contains(t, html, "TEST MODE — no money moves")
		assert.Contains(t, html, `<form method="post" action="/test/checkout/`+session+`">`)
		assert.Empty(t, api.ledger(app, key).Lines, "opening the page credits nothing")

		// curl -X POST <checkout_url>
		done := api.do(http.MethodPost, top.CheckoutURL, "", nil)
		require.Equal(t, 200, done.status, done.body)
		assert.JSONEq(t, fmt.Sprintf(`{"session_id":%q,"status":"completed","amount_cents":12345,"app_id":%q}`, session, app), done.body)
		again := api.do(http.MethodPost, top.CheckoutURL, "", nil)
		assert.Equal(t, done.body, again.body, "completing twice answers the same")
		browser := api.do(http.MethodPost, top.CheckoutURL, "", nil, "Accept: text/html,application/xhtml+xml")
		require.Equal(t, 200, browser.status)
		assert.Contains(t, browser.body, "the wallet was credited 12345 credits")

		lines := api.ledger(app, key).Lines
		require.Len(t, lines, 1)
		l := lines[0]
		assert.Equal(t, xpromo.LineType("topup"), l.Type)
		assert.Equal(t, int64(12345), l.AmountCents)
		assert.Equal(t, int64(12345), l.BalanceAfter)
		require.NotNil(t, l.Note)
		assert.Equal(t, "checkout "+session, *l.Note)
		assert.Nil(t, l.CounterpartyAppID)
		assert.Nil(t, l.EventChainID)
		assert.Equal(t, api.clock.Now(), l.Ts)

		// Another top-up left unpaid for a day expires.
		res = api.do(http.MethodPost, "/v1/apps/"+app+"/top-up", key, map[string]any{"amount_cents": 5000})
		res.decode(t, &top)
		api.clock.Advance(24 * time.Hour)
		expired := api.do(http.MethodPost, top.CheckoutURL, "", nil)
		assert.Equal(t, 409, expired.status)
		assert.Equal(t, "checkout_expired", expired.code(t))
		assert.Contains(t, api.do(http.MethodGet, top.CheckoutURL, "", nil).body, "expired unpaid")
		assert.Len(t, api.ledger(app, key).Lines, 1)

		missing := api.do(http.MethodGet, "/test/checkout/cs_nope", "", nil)
		assert.Equal(t, 404, missing.status)
		assert.Equal(t, "not_found", missing.code(t))
		assert.Equal(t, 404, api.do(http.MethodPost, "/test/checkout/cs_nope", "", nil).status)
	})
}

func TestMoneyConcurrentCheckoutCompletions(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		res := api.do(http.MethodPost, "/v1/apps/"+app+"/top-up", key, map[string]any{"amount_cents": 5000})
		var top xpromo.TopUpResponse
		res.decode(t, &top)
		const n = 20
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, top.CheckoutURL, nil)
				if r, err := http.DefaultClient.Do(req); err == nil {
					statuses[i] = r.StatusCode
					r.Body.Close()
				}
			})
		}
		wg.Wait()
		for _, st := range statuses {
			assert.Equal(t, 200, st)
		}
		lines := api.ledger(app, key).Lines
		require.Len(t, lines, 1)
		assert.Equal(t, int64(5000), lines[0].BalanceAfter)
	})
}

func TestMoneyTestCheckoutLiveMode(t *testing.T) {
	s := storagetest.SQLite(t)
	svc := &payments.Service{
		Update: storage.Updater[payments.WriteTx](s), View: storage.Viewer[payments.Tx](s), Ledger: s,
		Provider: &payments.TestProvider{}, TestMode: false, Now: time.Now,
	}
	srv := httpapi.New(httpapi.Config{Store: s, Mode: httpapi.ModeLive})
	srv.MountAPI(httpapi.Services{Payments: svc, Ledger: s})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(method, "/test/checkout/cs_any", nil))
		assertError(t, rec, http.StatusForbidden, "test_mode_only")
	}
}

func TestMoneyLiveModeRefusesToStartWithoutStripe(t *testing.T) {
	_, err := assembly.New(assembly.Config{Mode: httpapi.ModeLive}, storagetest.SQLite(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "live mode needs the Stripe secret key")
}

func TestMoneyX402(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		topUp := "/v1/apps/" + app + "/top-up"

		res := api.do(http.MethodPost, topUp, key, map[string]any{"amount_cents": 5000}, "Prefer: respond-async, payment=x402")
		require.Equal(t, http.StatusPaymentRequired, res.status, res.body)
		assert.Equal(t, "payment=x402", res.header.Get("Preference-Applied"))
		var ch xpromo.X402Challenge
		res.decode(t, &ch)
		assert.Equal(t, 1, ch.X402Version)
		assert.Equal(t, api.url+topUp, ch.Resource)
		assert.Equal(t, "X-PAYMENT header is required", ch.Error)
		require.Len(t, ch.Accepts, 1)
		a := ch.Accepts[0]
		assert.Equal(t, "exact", a.Scheme)
		assert.Equal(t, "base-sepolia", a.Network)
		assert.Equal(t, "54000000", a.MaxAmountRequired, "EUR 50 at 1.08 USD/EUR, in USDC atomic units")
		assert.Equal(t, api.url+topUp, a.Resource)
		assert.Equal(t, "0x036CbD53842c5426634e7929541eC2318f3dCF7e", a.Asset)
		assert.Equal(t, payments.ZeroAddress, a.PayTo)
		assert.Equal(t, 300, a.MaxTimeoutSeconds)
		assert.Equal(t, xpromo.X402Extra{Name: "USDC", Version: "2"}, a.Extra)
		assert.NotEmpty(t, a.Description)
		assert.Equal(t, "application/json", a.MimeType)

		// The amount is validated first.
		res = api.do(http.MethodPost, topUp, key, map[string]any{"amount_cents": 100}, "Prefer: payment=x402")
		assert.Equal(t, 422, res.status)

		// Without a payTo and a facilitator, a paid retry is refused and
		// nothing is credited (x402_test.go settles for real).
		payment := base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1,"scheme":"exact","network":"base-sepolia","payload":{"signature":"0x00","authorization":{"from":"0x1","to":"0x0","value":"54000000","validAfter":"0","validBefore":"9","nonce":"0x00"}}}`))
		res = api.do(http.MethodPost, topUp, key, map[string]any{"amount_cents": 5000}, "X-PAYMENT: "+payment)
		assert.Equal(t, http.StatusServiceUnavailable, res.status)
		assert.Equal(t, "x402_unavailable", res.code(t))

		res = api.do(http.MethodPost, topUp, key, map[string]any{"amount_cents": 5000}, "X-PAYMENT: not-a-payment")
		assert.Equal(t, 400, res.status)
		assert.Equal(t, "invalid_payment_header", res.code(t))
		assert.Empty(t, api.ledger(app, key).Lines, "nothing is credited")

		// Discovery.
		res = api.do(http.MethodGet, "/.well-known/x402", "", nil)
		require.Equal(t, 200, res.status)
		assert.JSONEq(t, fmt.Sprintf(`{"x402Version":1,"resources":[],"resourceTemplates":[%q]}`, api.url+"/v1/apps/{app_id}/top-up"), res.body)
		// With a key, resources lists the caller's own top-up URL: a URI.
		res = api.do(http.MethodGet, "/.well-known/x402", key, nil)
		require.Equal(t, 200, res.status)
		assert.JSONEq(t, fmt.Sprintf(`{"x402Version":1,"resources":[%q],"resourceTemplates":[%q]}`,
			api.url+"/v1/apps/"+app+"/top-up", api.url+"/v1/apps/{app_id}/top-up"), res.body)
	})
}

func TestMoneyLedgerPages(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s) // the clock starts at 21 Nov 22:00 UTC
		app, key := api.newApp()
		other, otherKey := api.newApp()
		for i := range 5 { // 22:00, 23:00 on the 21st; 00:00, 01:00, 02:00 on the 22nd
			api.post(ledger.TopUp(fmt.Sprintf("topup:%s:%d", app, i), app, int64(5000+i), ""))
			api.clock.Advance(time.Hour)
		}
		api.post(ledger.TopUp("topup:"+other, other, 5000, ""))

		var amounts []int64
		query := []string{"limit=2"}
		for pages := 1; ; pages++ {
			p := api.ledger(app, key, query...)
			for _, l := range p.Lines {
				amounts = append(amounts, l.AmountCents)
			}
			if p.NextCursor == nil {
				assert.Equal(t, 3, pages)
				break
			}
			require.Less(t, pages, 5)
			query = []string{"limit=2", "cursor=" + url.QueryEscape(*p.NextCursor)}
		}
		assert.Equal(t, []int64{5000, 5001, 5002, 5003, 5004}, amounts)

		day := func(q ...string) []int64 {
			out := []int64{}
			for _, l := range api.ledger(app, key, q...).Lines {
				out = append(out, l.AmountCents)
			}
			return out
		}
		assert.Equal(t, []int64{5000, 5001}, day("to=2026-11-21"))
		assert.Equal(t, []int64{5002, 5003, 5004}, day("from=2026-11-22", "to=2026-11-22"))

		cursor := *api.ledger(app, key, "limit=1").NextCursor
		for _, c := range []struct{ query, code string }{
			{"from=2026-11-31", "invalid_date"},
			{"to=21-11-2026", "invalid_date"},
			{"from=2026-11-22&to=2026-11-21", "invalid_date_range"},
			{"limit=0", "invalid_limit"},
			{"limit=1001", "invalid_limit"},
			{"limit=many", "invalid_limit"},
			{"cursor=%21%21", "invalid_cursor"},
		} {
			res := api.do(http.MethodGet, "/v1/apps/"+app+"/ledger?"+c.query, key, nil)
			assert.Equal(t, 422, res.status, c.query)
			assert.Equal(t, c.code, res.code(t), c.query)
		}
		// A cursor issued for another app is refused.
		res := api.do(http.MethodGet, "/v1/apps/"+other+"/ledger?cursor="+url.QueryEscape(cursor), otherKey, nil)
		assert.Equal(t, 422, res.status)
		assert.Equal(t, "invalid_cursor", res.code(t))
		// Another app's ledger is not found.
		assert.Equal(t, 404, api.do(http.MethodGet, "/v1/apps/"+other+"/ledger", key, nil).status)
	})
}

func TestMoneyPayout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		pub, pubKey := api.newApp()
		adv, _ := api.newApp()
		payout := "/v1/apps/" + pub + "/payout"

		api.post(ledger.TopUp("topup:pub", pub, 100_000, "")) // top-ups are not withdrawable
		res := api.do(http.MethodPost, payout, pubKey, nil)
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "below_minimum", res.code(t))

		// Real cash earnings: the advertiser's install of 10000 clears.
		api.clearedInstall(adv, pub)

		res = api.do(http.MethodPost, payout, pubKey, nil)
		require.Equal(t, 200, res.status, res.body)
		var p xpromo.PayoutResponse
		res.decode(t, &p)
		assert.Equal(t, int64(7000), p.AmountCents)
		assert.True(t, strings.HasPrefix(p.TransferID, "tr_test_"), p.TransferID)

		lines := api.ledger(pub, pubKey).Lines
		last := lines[len(lines)-1]
		assert.Equal(t, xpromo.LineType("payout"), last.Type)
		assert.Equal(t, int64(-7000), last.AmountCents)
		require.NotNil(t, last.Note)
		assert.True(t, strings.HasPrefix(*last.Note, "payout po_"), "the reservation names its payout: %s", *last.Note)
		assert.Equal(t, int64(100_000), last.BalanceAfter)
		earn := lines[len(lines)-2]
		assert.Equal(t, xpromo.LineType("earn"), earn.Type)
		require.NotNil(t, earn.CounterpartyAppID)
		assert.Equal(t, adv, *earn.CounterpartyAppID)
		require.NotNil(t, earn.EventChainID)
		assert.Equal(t, "chn_1", *earn.EventChainID)

		res = api.do(http.MethodPost, payout, pubKey, nil)
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "below_minimum", res.code(t))
		assert.Equal(t, 404, api.do(http.MethodPost, "/v1/apps/"+adv+"/payout", pubKey, nil).status)
	})
}

func TestMoneyPayoutRefusedToSuspendedAndRejectedApps(t *testing.T) {
	for _, status := range []xpromo.AppStatus{xpromo.AppStatusSuspended, xpromo.AppStatusRejected} {
		t.Run(string(status), func(t *testing.T) {
			storagetest.Each(t, func(t *testing.T, s storage.Store) {
				api := newMoneyAPI(t, s)
				pub, pubKey := api.newApp()
				adv, _ := api.newApp()
				api.clearedInstall(adv, pub)
				require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
					return tx.SetAppStatus(ctx, pub, status, api.clock.Now())
				}))
				res := api.do(http.MethodPost, "/v1/apps/"+pub+"/payout", pubKey, nil)
				assert.Equal(t, 409, res.status, res.body)
				assert.Equal(t, "payout_not_allowed", res.code(t))
				lines := api.ledger(pub, pubKey).Lines
				assert.Equal(t, int64(7000), lines[len(lines)-1].BalanceAfter, "nothing reserved")
			})
		})
	}
}

func TestMoneyPayoutInProgress(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		pub, pubKey := api.newApp()
		now := api.clock.Now()
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			_, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_1", AppID: pub, AmountCents: 5000, Destination: "acct_x",
				Status: payments.PayoutPending, CreatedAt: now, UpdatedAt: now})
			return err
		}))
		res := api.do(http.MethodPost, "/v1/apps/"+pub+"/payout", pubKey, nil)
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "payout_in_progress", res.code(t))
	})
}

func TestMoneyAdminPayoutAccount(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		path := "/v1/admin/apps/" + app + "/payout-account"
		res := api.do(http.MethodPut, path, adminToken, map[string]any{"account_id": "acct_1Nv0FGQ9RKHgCVdK"})
		require.Equal(t, 200, res.status, res.body)
		assert.JSONEq(t, fmt.Sprintf(`{"app_id":%q,"account_id":"acct_1Nv0FGQ9RKHgCVdK"}`, app), res.body)

		res = api.do(http.MethodPut, path, key, map[string]any{"account_id": "acct_1"})
		assert.Equal(t, 401, res.status, "an API key is not the admin token")
		res = api.do(http.MethodPut, path, adminToken, map[string]any{"account_id": "IBAN DE00"})
		assert.Equal(t, 422, res.status)
		assert.Equal(t, "invalid_payout_account", res.code(t))
		res = api.do(http.MethodPut, path, adminToken, map[string]any{})
		assert.Equal(t, 422, res.status)
		assert.Equal(t, "missing_field", res.code(t))
		res = api.do(http.MethodPut, "/v1/admin/apps/app_nope/payout-account", adminToken, map[string]any{"account_id": "acct_1"})
		assert.Equal(t, 404, res.status)

		// Payouts keep working with the stored account.
		api.clearedInstall("adv", app)
		res = api.do(http.MethodPost, "/v1/apps/"+app+"/payout", key, nil)
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, `"amount_cents":7000`)
	})
}

func TestMoneyAdminAdjustment(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		api := newMoneyAPI(t, s)
		app, key := api.newApp()
		path := "/v1/admin/apps/" + app + "/adjustments"

		res := api.do(http.MethodPost, path, adminToken, map[string]any{"amount_cents": 1200, "note": "refund of a disputed install"})
		require.Equal(t, 201, res.status, res.body)
		var line xpromo.LedgerLine
		res.decode(t, &line)
		assert.EqualValues(t, "adjustment", line.Type)
		assert.Equal(t, int64(1200), line.AmountCents)
		assert.Equal(t, int64(1200), line.BalanceAfter)
		require.NotNil(t, line.Note)
		assert.Equal(t, "refund of a disputed install", *line.Note)

		// A debit may take the wallet to zero, never below; nothing is posted when refused.
		res = api.do(http.MethodPost, path, adminToken, map[string]any{"amount_cents": -1201, "note": "too much"})
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "insufficient_funds", res.code(t))
		res = api.do(http.MethodPost, path, adminToken, map[string]any{"amount_cents": -1200, "note": "reversed"})
		require.Equal(t, 201, res.status, res.body)
		assert.Len(t, api.ledger(app, key).Lines, 2, "two adjustment lines, none for the refused debit")

		for _, tc := range []struct {
			body map[string]any
			code string
		}{
			{map[string]any{"note": "x"}, "missing_field"},
			{map[string]any{"amount_cents": 100}, "missing_field"},
			{map[string]any{"amount_cents": 0, "note": "x"}, "invalid_amount"},
			{map[string]any{"amount_cents": 10_000_001, "note": "x"}, "invalid_amount"},
			{map[string]any{"amount_cents": 1, "note": strings.Repeat("n", 501)}, "invalid_note"},
		} {
			res = api.do(http.MethodPost, path, adminToken, tc.body)
			assert.Equal(t, 422, res.status, "%v", tc.body)
			assert.Equal(t, tc.code, res.code(t), "%v", tc.body)
		}
		assert.Equal(t, 401, api.do(http.MethodPost, path, key, map[string]any{"amount_cents": 1, "note": "x"}).status, "an API key is not the admin token")
		assert.Equal(t, 404, api.do(http.MethodPost, "/v1/admin/apps/app_nope/adjustments", adminToken, map[string]any{"amount_cents": 1, "note": "x"}).status)

		res = api.do(http.MethodGet, "/v1/admin/audit", adminToken, nil)
		require.Equal(t, 200, res.status)
		assert.Equal(t, 2, strings.Count(res.body, `"app.adjustment"`), "each posted adjustment is audited")
	})
}
