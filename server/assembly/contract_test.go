package assembly_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	guidepkg "github.com/xpromo/xpromo/server/guide"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const adminToken = "contract-test-admin-token-0123456789abcdef"

// api is a running server and a client whose every exchange is validated
// against openapi.json.
type api struct {
	t     *testing.T
	url   string
	http  *http.Client
	srv   *httpapi.Server
	store storage.Store
	clock *clocktest.Clock // the injected clock of the server under test
}

func start(t *testing.T, chk *openapitest.Checker, s storage.Store, cfg assembly.Config) *api {
	t.Helper()
	a := &api{t: t, http: chk.Client(), store: s, clock: clocktest.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg.BaseURL, cfg.Now, cfg.AdminToken, cfg.Mode = ts.URL, a.clock.Now, adminToken, httpapi.ModeTest
	srv, err := assembly.New(cfg, s)
	require.NoError(t, err)
	handler, a.srv, a.url = srv, srv, ts.URL
	return a
}

// reply is a response with its body read.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

func (r reply) code(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// do sends a request; body may be nil, a string (sent as is) or a value
// (sent as JSON). headers are name, value pairs.
func (a *api) do(method, p, key string, body any, headers ...string) reply {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(a.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.url+p, rd)
	require.NoError(a.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.http.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return reply{resp.StatusCode, resp.Header, raw}
}

func (a *api) expect(status int, r reply) reply {
	a.t.Helper()
	require.Equal(a.t, status, r.Status, "body: %s", r.Body)
	return r
}

func registration(name, bundle string) map[string]any {
	return map[string]any{
		"name": name, "platform": "mac", "bundle_id": bundle, "domain": "example.com",
		"download_url": "https://example.com/" + name + ".dmg", "contact_email": "team@example.com",
	}
}

// TestContract drives every operation of openapi.json on both stores; every
// request and response is validated against the document (an undocumented
// status fails), every documented operation must be exercised, and the
// router must serve exactly the document's paths.
func TestContract(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		inbox := gatetest.SMTP(t)
		a := start(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000, Gate: contractGateConfig(inbox)})

		// Public reads and the document itself.
		doc := a.expect(200, a.do("GET", "/openapi.json", "", nil))
		assert.Equal(t, openapi.Document, doc.Body, "the document is served unchanged")
		card := a.expect(200, a.do("GET", "/v1/rate-card", "", nil)).json(t)
		assert.Equal(t, "EUR", card["currency"])
		a.expect(200, a.do("GET", "/v1/network-stats", "", nil))
		guide := a.expect(200, a.do("GET", "/v1/integration-guide", "", nil))
		assert.True(t, strings.HasPrefix(guide.Header.Get("Content-Type"), "text/markdown"))
		assert.Equal(t, guidepkg.Vectors, a.expect(200, a.do("GET", "/v1/integration-guide/vectors.json", "", nil)).Body)
		assert.Equal(t, guidepkg.Protocol, a.expect(200, a.do("GET", "/v1/integration-guide/protocol.md", "", nil)).Body)
		a.expect(200, a.do("GET", "/.well-known/x402", "", nil))

		// Registration and its validation.
		adv := a.expect(201, a.do("POST", "/v1/apps", "", registration("Advertiser", "com.example.adv"))).json(t)
		pub := a.expect(201, a.do("POST", "/v1/apps", "", registration("Publisher", "com.example.pub"))).json(t)
		advID, advKey := adv["app_id"].(string), adv["api_key"].(string)
		pubID, pubKey := pub["app_id"].(string), pub["api_key"].(string)
		assert.Equal(t, "pending", adv["status"])
		assert.True(t, strings.HasPrefix(advKey, "xp_test_"))
		bad := registration("X", "com.example.x")
		bad["platform"] = "linux"
		assert.Equal(t, "invalid_platform", a.expect(422, a.do("POST", "/v1/apps", "", bad)).code(t))
		bad = registration("X", "com.example.x")
		bad["colour"] = "blue"
		assert.Equal(t, "unknown_field", a.expect(422, a.do("POST", "/v1/apps", "", bad)).code(t))
		assert.Equal(t, "malformed_json", a.expect(400, a.do("POST", "/v1/apps", "", `{"name":`)).code(t))
		assert.Equal(t, "unsupported_media_type", a.expect(415, a.do("POST", "/v1/apps", "", `{}`, "Content-Type", "text/plain")).code(t))

		// Score, jobs, auth and scope.
		score := a.expect(200, a.do("GET", "/v1/apps/"+advID+"/score", advKey, nil)).json(t)
		assert.Equal(t, "pending", score["status"])
		a.expect(200, a.do("GET", "/v1/apps/"+advID+"/jobs/"+adv["scoring_job_id"].(string), advKey, nil))
		cross := a.expect(404, a.do("GET", "/v1/apps/"+advID+"/score", pubKey, nil))
		missing := a.expect(404, a.do("GET", "/v1/apps/app_missing/score", pubKey, nil))
		assert.Equal(t, missing.Body, cross.Body, "another app's id answers exactly like a missing one")
		noKey := a.expect(401, a.do("GET", "/v1/apps/"+advID+"/score", "", nil))
		assert.Contains(t, noKey.Header.Get("WWW-Authenticate"), "Bearer")
		a.expect(401, a.do("GET", "/v1/apps/"+advID+"/score", "xp_test_notakey", nil))

		// The app's own record, and its appcast URL set and removed again.
		own := a.expect(200, a.do("GET", "/v1/apps/"+advID, advKey, nil)).json(t)
		assert.Equal(t, advID, own["app_id"])
		a.expect(404, a.do("GET", "/v1/apps/"+advID, pubKey, nil))
		assert.Equal(t, "field_not_changeable", a.expect(422, a.do("PATCH", "/v1/apps/"+pubID, pubKey, map[string]any{"domain": "example.org"})).code(t))
		assert.Equal(t, "invalid_appcast_url", a.expect(422, a.do("PATCH", "/v1/apps/"+pubID, pubKey, map[string]any{"appcast_url": "ftp://example.com/a.xml"})).code(t))
		a.expect(404, a.do("PATCH", "/v1/apps/"+advID, pubKey, map[string]any{"appcast_url": nil}))
		changed := a.expect(200, a.do("PATCH", "/v1/apps/"+pubID, pubKey, map[string]any{"appcast_url": "https://appcast.example.com/com.example.pub.xml"})).json(t)
		assert.NotNil(t, changed["scoring_job_id"])
		assert.Nil(t, a.expect(200, a.do("PATCH", "/v1/apps/"+pubID, pubKey, map[string]any{"appcast_url": nil})).json(t)["appcast_url"])

		// The operators' surface.
		a.expect(401, a.do("POST", "/v1/admin/apps/"+advID+"/approve", "wrong", map[string]any{}))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+advID+"/approve", adminToken, map[string]any{"reason": "reviewed"}))
		a.expect(409, a.do("POST", "/v1/admin/apps/"+pubID+"/suspend", adminToken, map[string]any{"reason": "x"})) // pending
		a.expect(200, a.do("POST", "/v1/admin/apps/"+pubID+"/approve", adminToken, map[string]any{}))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+pubID+"/suspend", adminToken, map[string]any{"reason": "complaints"}))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+pubID+"/reinstate", adminToken, map[string]any{"reason": "resolved"}))
		third := a.expect(201, a.do("POST", "/v1/apps", "", registration("Third", "com.example.third"))).json(t)
		a.expect(200, a.do("POST", "/v1/admin/apps/"+third["app_id"].(string)+"/reject", adminToken, map[string]any{"reason": "gate_unsigned_binary"}))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+third["app_id"].(string)+"/review", adminToken, map[string]any{}))
		a.expect(200, a.do("GET", "/v1/admin/apps/"+advID, adminToken, nil))
		a.expect(200, a.do("GET", "/v1/admin/audit", adminToken, nil))
		a.expect(200, a.do("PUT", "/v1/admin/apps/"+pubID+"/payout-account", adminToken, map[string]any{"account_id": "acct_1TestPublisher"}))
		adj := a.expect(201, a.do("POST", "/v1/admin/apps/"+pubID+"/adjustments", adminToken, map[string]any{"amount_cents": 250, "note": "goodwill credit"})).json(t)
		assert.Equal(t, "adjustment", adj["type"])
		assert.Equal(t, "insufficient_funds", a.expect(409, a.do("POST", "/v1/admin/apps/"+pubID+"/adjustments", adminToken, map[string]any{"amount_cents": -251, "note": "too much"})).code(t))
		assert.Equal(t, "missing_field", a.expect(422, a.do("POST", "/v1/admin/apps/"+pubID+"/adjustments", adminToken, map[string]any{"amount_cents": 5})).code(t))
		a.expect(201, a.do("POST", "/v1/admin/apps/"+pubID+"/adjustments", adminToken, map[string]any{"amount_cents": -250, "note": "goodwill credit reversed"}))
		score = a.expect(200, a.do("GET", "/v1/apps/"+advID+"/score", advKey, nil)).json(t)
		assert.Equal(t, "approved", score["status"])

		// Top-up: validation, checkout, x402 challenge, idempotent replay.
		assert.Equal(t, "below_minimum", a.expect(422, a.do("POST", "/v1/apps/"+advID+"/top-up", advKey, map[string]any{"amount_cents": 4999})).code(t))
		a.expect(402, a.do("POST", "/v1/apps/"+advID+"/top-up", advKey, map[string]any{"amount_cents": 10000}, "Prefer", "payment=x402"))
		top := a.expect(200, a.do("POST", "/v1/apps/"+advID+"/top-up", advKey, map[string]any{"amount_cents": 20000}, "Idempotency-Key", "topup-1"))
		again := a.expect(200, a.do("POST", "/v1/apps/"+advID+"/top-up", advKey, map[string]any{"amount_cents": 20000}, "Idempotency-Key", "topup-1"))
		assert.Equal(t, top.Body, again.Body, "a replay answers the first response")
		assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		assert.Equal(t, "idempotency_key_reused", a.expect(422, a.do("POST", "/v1/apps/"+advID+"/top-up", advKey, map[string]any{"amount_cents": 30000}, "Idempotency-Key", "topup-1")).code(t))
		checkout := top.json(t)["checkout_url"].(string)
		require.True(t, strings.HasPrefix(checkout, a.url+"/test/checkout/"), checkout)
		page := a.expect(200, a.do("GET", strings.TrimPrefix(checkout, a.url), "", nil))
		assert.Contains(t, string(page.Body), "200.00")
		a.expect(200, a.do("POST", strings.TrimPrefix(checkout, a.url), "", nil, "Accept", "application/json"))
		a.expect(200, a.do("POST", strings.TrimPrefix(checkout, a.url), "", nil, "Accept", "application/json")) // once only
		a.expect(404, a.do("GET", "/test/checkout/cs_missing", "", nil))

		lines := a.expect(200, a.do("GET", "/v1/apps/"+advID+"/ledger", advKey, nil)).json(t)["lines"].([]any)
		require.Len(t, lines, 1, "the checkout credited the wallet once")
		assert.Equal(t, map[string]any{"type": "topup", "amount_cents": 20000.0, "balance_after": 20000.0},
			pick(lines[0].(map[string]any), "type", "amount_cents", "balance_after"))

		// Campaigns.
		campaign := map[string]any{"app_id": advID, "categories": []string{"productivity"}, "daily_budget_cents": 5000}
		assert.Equal(t, "unknown_category", a.expect(422, a.do("POST", "/v1/campaigns", advKey, merge(campaign, "categories", []string{"knitting"}))).code(t))
		assert.Equal(t, "below_minimum", a.expect(422, a.do("POST", "/v1/campaigns", advKey, merge(campaign, "daily_budget_cents", 999))).code(t))
		assert.Equal(t, "bid_below_floor", a.expect(422, a.do("POST", "/v1/campaigns", advKey, merge(campaign, "max_bid_cents", 1))).code(t))
		a.expect(404, a.do("POST", "/v1/campaigns", pubKey, campaign)) // another app's app_id
		cmp := a.expect(201, a.do("POST", "/v1/campaigns", advKey, campaign)).json(t)
		assert.Equal(t, "throttled", cmp["status"])
		cmpID := cmp["campaign_id"].(string)
		assert.Equal(t, "paused", a.expect(200, a.do("POST", "/v1/campaigns/"+cmpID+"/pause", advKey, nil)).json(t)["status"])
		a.expect(404, a.do("POST", "/v1/campaigns/"+cmpID+"/resume", pubKey, nil))
		assert.Equal(t, "throttled", a.expect(200, a.do("POST", "/v1/campaigns/"+cmpID+"/resume", advKey, nil)).json(t)["status"], "the app is not live yet")
		// Reading and changing campaigns.
		read := a.expect(200, a.do("GET", "/v1/campaigns/"+cmpID, advKey, nil)).json(t)
		assert.Equal(t, []any{"productivity"}, read["categories"])
		a.expect(404, a.do("GET", "/v1/campaigns/"+cmpID, pubKey, nil))
		list := a.expect(200, a.do("GET", "/v1/campaigns?status=throttled&limit=10", advKey, nil)).json(t)
		assert.Len(t, list["campaigns"], 1)
		assert.Equal(t, "invalid_campaign_status", a.expect(422, a.do("GET", "/v1/campaigns?status=running", advKey, nil)).code(t))
		assert.Equal(t, "invalid_cursor", a.expect(422, a.do("GET", "/v1/campaigns?cursor=x", advKey, nil)).code(t))
		patched := a.expect(200, a.do("PATCH", "/v1/campaigns/"+cmpID, advKey, map[string]any{"daily_budget_cents": 8000, "max_bid_cents": 700})).json(t)
		assert.Equal(t, map[string]any{"daily_budget_cents": 8000.0, "max_bid_cents": 700.0}, pick(patched, "daily_budget_cents", "max_bid_cents"))
		assert.Nil(t, a.expect(200, a.do("PATCH", "/v1/campaigns/"+cmpID, advKey, map[string]any{"max_bid_cents": nil})).json(t)["max_bid_cents"])
		assert.Equal(t, "missing_field", a.expect(422, a.do("PATCH", "/v1/campaigns/"+cmpID, advKey, map[string]any{})).code(t))
		assert.Equal(t, "bid_below_floor", a.expect(422, a.do("PATCH", "/v1/campaigns/"+cmpID, advKey, map[string]any{"max_bid_cents": 1})).code(t))
		assert.Equal(t, "unknown_field", a.expect(422, a.do("PATCH", "/v1/campaigns/"+cmpID, advKey, map[string]any{"status": "active"})).code(t))
		a.expect(404, a.do("PATCH", "/v1/campaigns/"+cmpID, pubKey, map[string]any{"daily_budget_cents": 8000}))

		// Stats.
		a.expect(200, a.do("GET", "/v1/apps/"+advID+"/stats?period=last_7_days", advKey, nil))
		assert.Equal(t, "invalid_period", a.expect(422, a.do("GET", "/v1/apps/"+advID+"/stats?period=forever", advKey, nil)).code(t))
		a.expect(200, a.do("GET", "/v1/stats/daily?from=2026-11-01&to=2026-11-07", advKey, nil))
		assert.Equal(t, "date_range_too_long", a.expect(422, a.do("GET", "/v1/stats/daily?from=2024-11-01&to=2026-11-07", advKey, nil)).code(t))

		// A cleared install gives the publisher cash earnings to pay out.
		// Attribution (a later issue) will produce it; the ledger can today.
		l := &ledger.Ledger{Store: s, Now: a.clock.Now}
		hold := ledger.Hold{ID: "ch_contract", Advertiser: advID, Publisher: pubID, Amount: 10000, ChainID: "ch_contract"}
		for _, build := range []func() (ledger.Operation, error){
			func() (ledger.Operation, error) { return ledger.EscrowHold("hold:ch_contract", hold) },
			func() (ledger.Operation, error) { return ledger.Clear("clear:ch_contract", hold, ledger.EarnCash) },
		} {
			op, err := build()
			require.NoError(t, err)
			_, err = l.Post(context.Background(), op)
			require.NoError(t, err)
		}
		assert.Equal(t, "below_minimum", a.expect(409, a.do("POST", "/v1/apps/"+advID+"/payout", advKey, nil)).code(t), "top-ups are not withdrawable")
		// The connected account an operator set is kept; test mode's
		// provider reports it ready.
		onb := a.expect(200, a.do("POST", "/v1/apps/"+pubID+"/payout-account/onboarding", pubKey, nil)).json(t)
		assert.Equal(t, "acct_1TestPublisher", onb["account_id"])
		acct := a.expect(200, a.do("GET", "/v1/apps/"+pubID+"/payout-account", pubKey, nil)).json(t)
		assert.Equal(t, true, acct["payouts_enabled"])
		a.expect(404, a.do("GET", "/v1/apps/"+pubID+"/payout-account", advKey, nil))
		payout := a.expect(200, a.do("POST", "/v1/apps/"+pubID+"/payout", pubKey, nil)).json(t)
		assert.Equal(t, 7000.0, payout["amount_cents"])

		// Ledger pages.
		page1 := a.expect(200, a.do("GET", "/v1/apps/"+advID+"/ledger?limit=2", advKey, nil)).json(t)
		require.Len(t, page1["lines"], 2)
		cursor := page1["next_cursor"].(string)
		page2 := a.expect(200, a.do("GET", "/v1/apps/"+advID+"/ledger?limit=2&cursor="+cursor, advKey, nil)).json(t)
		assert.Len(t, page2["lines"], 2)
		assert.Equal(t, "invalid_cursor", a.expect(422, a.do("GET", "/v1/apps/"+pubID+"/ledger?cursor="+cursor, pubKey, nil)).code(t))
		assert.Equal(t, "invalid_date", a.expect(422, a.do("GET", "/v1/apps/"+advID+"/ledger?from=yesterday", advKey, nil)).code(t))

		// Floors only go down.
		a.expect(200, a.do("POST", "/v1/admin/categories/productivity/floors", adminToken, map[string]any{"platform": "mac", "floor_cents": 1, "reason": "promotion"}))
		assert.Equal(t, "floor_cannot_rise", a.expect(409, a.do("POST", "/v1/admin/categories/productivity/floors", adminToken, map[string]any{"platform": "mac", "floor_cents": 2, "reason": "oops"})).code(t))

		// Key rotation: the new key works.
		rotated := a.expect(201, a.do("POST", "/v1/apps/"+advID+"/keys/rotate", advKey, nil)).json(t)
		a.expect(200, a.do("GET", "/v1/apps/"+advID+"/score", rotated["api_key"].(string), nil))
		contractLists(t, a, pubID, pubKey, advID, rotated["api_key"].(string))
		contractDashboard(t, a, pubKey)

		contractAttribution(t, a, pubKey)
		contractWebhooks(t, a, pubID, pubKey)
		contractComplaints(t, a)
		contractGate(t, a, inbox)

		// /mcp is the MCP endpoint: JSON-RPC over the Streamable HTTP
		// transport, whose messages, statuses and media types the MCP
		// specification defines, not this REST document (whose rules, such
		// as the Error body on every 4xx, it does not follow). Its tools are
		// the document's operations; mcp_test.go checks their schemas against
		// the document and their answers against the REST answers.
		// / and /dashboard/* are the web dashboard's pages for browsers
		// (server/dashboard), not API operations.
		chk.RoutesMatch(a.srv.Router(), "/healthz", "/readyz", "/metrics", "/mcp", "/", "/dashboard/*")
		chk.RequireAllExercised()

		verify, err := ledger.Verify(context.Background(), s)
		require.NoError(t, err)
		assert.True(t, verify.OK(), "%v", verify.Violations)
	})
}

// TestContractRateLimited: the limit's 429 and headers are documented too.
func TestContractRateLimited(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		a := start(t, chk, s, assembly.Config{ReadLimit: 3, WriteLimit: 2})
		for range 3 {
			r := a.expect(200, a.do("GET", "/v1/rate-card", "", nil))
			assert.NotEmpty(t, r.Header.Get("RateLimit-Policy"))
		}
		r := a.expect(429, a.do("GET", "/v1/rate-card", "", nil))
		assert.Equal(t, "rate_limited", r.code(t))
		assert.NotEmpty(t, r.Header.Get("Retry-After"))
		assert.NotNil(t, r.json(t)["error"].(map[string]any)["retry_after"])
	})
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

func merge(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}
