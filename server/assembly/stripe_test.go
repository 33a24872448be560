package assembly_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v85"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/gatetest"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/outbound"
	"github.com/xpromo/xpromo/server/payments/stripe"
	"github.com/xpromo/xpromo/server/payments/stripe/stripetest"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const liveWhsec = "whsec_live_e2e"

// A live-mode server whose Stripe is stripe-mock plays top-up → (signed
// webhook) → campaign → paid install → connected account → payout.
func TestLiveModeWithStripeMock(t *testing.T) {
	mock := stripetest.StartMock(t)
	// A floor at which two installs (one per UTC day, within the EUR 50
	// a day of an app not live yet) earn a withdrawable EUR 56.
	categories := filepath.Join(t.TempDir(), "categories.json")
	require.NoError(t, os.WriteFile(categories, []byte(`{"categories": [{"key": "productivity", "label": "Productivity", "floors": {"mac": 4000, "win": 4000}}]}`), 0o600))
	s := storagetest.SQLite(t)
	gateRoots, _ := gatetest.Certs().Root.WritePEM(t.TempDir())
	a := &api{t: t, http: openapitest.New(t).Client(), store: s, clock: clocktest.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	client := outbound.New(outbound.Options{TestOnlyAllowLoopback: true})
	rec := &checkoutRecorder{next: client.Transport}
	client.Transport = rec
	srv, err := assembly.New(assembly.Config{
		Mode: httpapi.ModeLive, BaseURL: ts.URL, Now: a.clock.Now, AdminToken: adminToken,
		ReadLimit: 10_000, WriteLimit: 10_000,
		OfferSecret: strings.Repeat("s", 32), X402Network: "base", X402PayTo: "0x1111111111111111111111111111111111111111", X402Facilitator: "https://x402.example",
		StripeSecretKey: "sk_test_e2e", StripeAPIURL: mock, StripeWebhookSecrets: []string{"whsec_old", liveWhsec},
		CategoriesFile: categories, StripeConnectCountry: "DE", StripeMaxNetworkRetries: stripego.Int64(0),
		StripeHTTPClient: client,
		// Live mode runs the gate's real checks and needs their settings;
		// no gate job runs in this test (the operator approves).
		Gate: assembly.GateConfig{RootsFile: gateRoots, ClamdAddress: "tcp://127.0.0.1:1",
			SMTP: contact.SMTPConfig{Host: "127.0.0.1", From: "xpromo <verify@xpromo.dev>"}},
	}, s)
	require.NoError(t, err)
	handler, a.srv, a.url = srv, srv, ts.URL

	pub := a.register("Pub", "com.example.pub", "productivity")
	adv := a.register("Adv", "com.example.adv", "")
	assert.True(t, strings.HasPrefix(adv.key, "xp_live_"))

	// Top-up: Stripe's Checkout page; nothing credited until the webhook.
	top := a.expect(200, a.do("POST", "/v1/apps/"+adv.id+"/top-up", adv.key, map[string]any{"amount_cents": 20_000})).json(t)
	assert.True(t, strings.HasPrefix(top["checkout_url"].(string), "https://"), top["checkout_url"])
	assert.Empty(t, a.wallet(adv))
	// The session as the server stored it: Stripe's id (stripe-mock's
	// fixture) and the server's, which the webhook names.
	sessID, ref := rec.clientReference, rec.sessionID
	require.True(t, strings.HasPrefix(sessID, "cs_"), sessID)
	require.NotEmpty(t, ref)
	paid := map[string]any{"id": ref, "object": "checkout.session", "client_reference_id": sessID, "status": "complete",
		"payment_status": "paid", "amount_total": 20_000, "currency": "eur", "payment_intent": "pi_e2e"}
	send := func(id, typ string, obj map[string]any, secret string) int {
		body, header := stripetest.SignedEvent(t, id, typ, obj, secret, a.clock.Now())
		req, err := http.NewRequest("POST", ts.URL+"/v1/stripe/webhook", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", header)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	webhook := func(id string, secret string) int { return send(id, stripe.EventCheckoutCompleted, paid, secret) }
	assert.Equal(t, 400, webhook("evt_forged", "whsec_wrong"))
	assert.Equal(t, 200, webhook("evt_1", liveWhsec))
	assert.Equal(t, 200, webhook("evt_1", liveWhsec))
	assert.Equal(t, []wline{{xpromo.LineTopup, 20_000, 20_000, "", ""}}, wlines(a.wallet(adv)))
	// The test checkout page does not exist in live mode.
	a.expect(403, a.do("POST", "/test/checkout/"+sessID, "", nil, "Accept", "application/json"))

	// A campaign buys a paid install from the publisher.
	a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"},
		"daily_budget_cents": 10_000}))
	for _, device := range []string{"device-1", "device-2"} {
		fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
		require.True(t, fill.Filled, "%+v", fill)
		tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*fill.Offer, a.clock.Now()))
		require.NoError(t, err)
		a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok}))
		a.clock.Advance(time.Minute)
		cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, device, a.clock.Now(), adv.id)
		require.NoError(t, err)
		a.expect(200, a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs}))
		a.clock.Advance(48 * time.Hour)
		hb, err := token.SignHeartbeat(adv.sdk.Private, adv.sdk.ID, token.HeartbeatClaims{AppID: adv.id, DeviceID: device, TokenHash: token.TokenHashString(tok), Seq: 1, SentAt: a.clock.Now().Unix()})
		require.NoError(t, err)
		a.expect(200, a.do("POST", "/v1/sdk/heartbeat", "", xpromo.HeartbeatRequest{Heartbeat: hb}))
		a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil))
	}
	earned := wlines(a.wallet(pub))
	require.Len(t, earned, 2)
	withdrawable := earned[0].Amount + earned[1].Amount
	require.GreaterOrEqual(t, withdrawable, int64(5000))

	// Payout: no connected account yet; onboarding links one (Stripe
	// Express); then the payout is a Stripe transfer.
	assert.Equal(t, "payout_account_missing", a.expect(409, a.do("POST", "/v1/apps/"+pub.id+"/payout", pub.key, nil)).code(t))
	assert.Equal(t, "payout_account_missing", a.expect(409, a.do("GET", "/v1/apps/"+pub.id+"/payout-account", pub.key, nil)).code(t))
	onb := decode[xpromo.PayoutOnboarding](t, a.expect(200, a.do("POST", "/v1/apps/"+pub.id+"/payout-account/onboarding", pub.key, nil)))
	assert.True(t, strings.HasPrefix(onb.AccountID, "acct_"), onb.AccountID)
	assert.True(t, strings.HasPrefix(onb.OnboardingURL, "https://"), onb.OnboardingURL)
	st := decode[xpromo.PayoutAccountStatus](t, a.expect(200, a.do("GET", "/v1/apps/"+pub.id+"/payout-account", pub.key, nil)))
	assert.Equal(t, onb.AccountID, st.AccountID)
	p := decode[xpromo.PayoutResponse](t, a.expect(200, a.do("POST", "/v1/apps/"+pub.id+"/payout", pub.key, nil, "Idempotency-Key", "payout-1")))
	assert.True(t, strings.HasPrefix(p.TransferID, "tr_"), p.TransferID)
	assert.Equal(t, withdrawable, p.AmountCents)
	again := decode[xpromo.PayoutResponse](t, a.expect(200, a.do("POST", "/v1/apps/"+pub.id+"/payout", pub.key, nil, "Idempotency-Key", "payout-1")))
	assert.Equal(t, p, again, "the retry answers from the payout")
	lines := wlines(a.wallet(pub))
	require.Len(t, lines, 3)
	assert.Equal(t, wline{xpromo.LinePayout, -withdrawable, 0, "", ""}, lines[2])

	// The advertiser's card payment is disputed and lost after its credits
	// were spent: the wallet goes below zero, and the campaign stops.
	spent := wlines(a.wallet(adv))
	before := spent[len(spent)-1].BalanceAfter
	dispute := map[string]any{"id": "dp_e2e", "object": "dispute", "amount": 20_000, "currency": "eur", "charge": "ch_e2e",
		"payment_intent": "pi_e2e", "status": "needs_response", "reason": "fraudulent"}
	a.clock.Advance(time.Minute)
	pre := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
	require.True(t, pre.Filled, "the campaign delivers before the dispute: %+v", pre)
	assert.Equal(t, 200, send("evt_dp", stripe.EventDisputeFundsWithdrawn, dispute, liveWhsec))
	assert.Equal(t, 200, send("evt_dp", stripe.EventDisputeFundsWithdrawn, dispute, liveWhsec))
	after := wlines(a.wallet(adv))
	require.Len(t, after, len(spent)+1, "debited once")
	assert.Equal(t, wline{xpromo.LineAdjustment, -20_000, before - 20_000, "", ""}, after[len(after)-1])
	require.Less(t, before-20_000, int64(0))
	// Delivery sees the wallet within its refresh: nothing is filled for it
	// any more (an install claimed in between would be refused
	// insufficient_funds by its escrow hold).
	a.clock.Advance(time.Minute)
	fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
	assert.False(t, fill.Filled, "a negative wallet buys nothing: %+v", fill)
	rep, err := ledger.Verify(t.Context(), s)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%v", rep.Violations)
}

// checkoutRecorder notes the checkout session the server creates at Stripe:
// the server's id it sends (client_reference_id) and Stripe's id.
type checkoutRecorder struct {
	next                       http.RoundTripper
	clientReference, sessionID string
}

func (c *checkoutRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
		return c.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	c.clientReference = form.Get("client_reference_id")
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var cs struct{ ID string }
	if json.Unmarshal(raw, &cs) == nil {
		c.sessionID = cs.ID
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}
