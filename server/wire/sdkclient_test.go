package wire_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/wire"
)

// sdkRegistration is a valid registration of an app named name.
func sdkRegistration(name, bundle string) *xpromo.RegisterAppRequest {
	return &xpromo.RegisterAppRequest{
		Name: name, Platform: xpromo.PlatformMac, BundleID: bundle, Domain: "example.com",
		DownloadURL: "https://example.com/" + name + ".dmg", ContactEmail: "team@example.com",
	}
}

// sdkErr asserts that err is an *xpromo.Error with status and code.
func sdkErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *xpromo.Error
	require.True(t, errors.As(err, &e), "want *xpromo.Error %d %s, got %v", status, code, err)
	assert.Equal(t, status, e.Status, "%v", e)
	assert.Equal(t, code, e.Code, "%v", e)
	assert.NotEmpty(t, e.RequestID, "the server's request id is carried")
}

// TestSDKClient drives every operation of the API through the Go client
// (sdk/xpromo) against the real server, on both stores. Every exchange also
// goes through the openapi.json checker, so the client's requests are
// checked against the document as well.
func TestSDKClient(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		a := start(t, chk, s, wire.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		ctx := context.Background()
		c := xpromo.NewClient(a.url,
			xpromo.WithHTTPClient(&http.Client{Transport: chk.Transport(http.DefaultTransport)}),
			xpromo.WithAdminToken(adminToken),
			xpromo.WithRetryWait(time.Millisecond, 10*time.Millisecond),
			xpromo.WithUserAgent("xpromo-sdkclient-test"),
		)

		// Public reads.
		card, err := c.GetRateCard(ctx)
		require.NoError(t, err)
		assert.Equal(t, "EUR", card.Currency)
		assert.Equal(t, 0.3, card.TakeRate)
		require.NotEmpty(t, card.Categories)
		_, err = c.GetNetworkStats(ctx)
		require.NoError(t, err)
		guide, err := c.GetIntegrationGuide(ctx)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(strings.TrimSpace(guide), "#"), "markdown: %.80s", guide)
		desc, err := c.GetX402Descriptor(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, desc.X402Version)
		doc, err := c.GetOpenAPIDocument(ctx)
		require.NoError(t, err)
		assert.Contains(t, string(doc), `"openapi"`)

		// Registration.
		adv, err := c.RegisterApp(ctx, sdkRegistration("Advertiser", "com.example.adv"))
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusPending, adv.Status)
		pub, err := c.RegisterApp(ctx, sdkRegistration("Publisher", "com.example.pub"))
		require.NoError(t, err)
		bad := sdkRegistration("X", "com.example.x")
		bad.Platform = "linux"
		_, err = c.RegisterApp(ctx, bad)
		sdkErr(t, err, 422, xpromo.CodeInvalidPlatform)

		advC := c.With(xpromo.WithAPIKey(adv.APIKey))
		pubC := c.With(xpromo.WithAPIKey(pub.APIKey))

		// Score and job; auth and scope.
		score, err := advC.GetScore(ctx, adv.AppID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusPending, score.Status)
		job, err := advC.GetJob(ctx, adv.AppID, adv.ScoringJobID)
		require.NoError(t, err)
		assert.Equal(t, adv.ScoringJobID, job.JobID)
		assert.Equal(t, xpromo.JobScoring, job.Kind)
		_, err = c.GetScore(ctx, adv.AppID) // no key
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)
		_, err = pubC.GetScore(ctx, adv.AppID) // another app's id
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		_, err = pubC.GetLedger(ctx, adv.AppID, nil)
		sdkErr(t, err, 404, xpromo.CodeNotFound)

		// The operators' surface.
		_, err = c.With(xpromo.WithAdminToken("wrong")).AdminApproveApp(ctx, adv.AppID, "")
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)
		_, err = advC.With(xpromo.WithAdminToken("")).AdminGetApp(ctx, adv.AppID) // an API key is no admin token
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)
		app, err := c.AdminApproveApp(ctx, adv.AppID, "reviewed")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusApproved, app.Status)
		_, err = c.AdminSuspendApp(ctx, pub.AppID, "x") // still pending
		sdkErr(t, err, 409, "invalid_transition")
		_, err = c.AdminApproveApp(ctx, pub.AppID, "")
		require.NoError(t, err)
		app, err = c.AdminSuspendApp(ctx, pub.AppID, "complaints")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusSuspended, app.Status)
		app, err = c.AdminReinstateApp(ctx, pub.AppID, "resolved")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusApproved, app.Status)
		third, err := c.RegisterApp(ctx, sdkRegistration("Third", "com.example.third"))
		require.NoError(t, err)
		app, err = c.AdminRejectApp(ctx, third.AppID, "gate_unsigned_binary")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusRejected, app.Status)
		app, err = c.AdminReviewApp(ctx, third.AppID, "")
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusPending, app.Status)
		app, err = c.AdminGetApp(ctx, pub.AppID)
		require.NoError(t, err)
		var history []xpromo.AppStatus
		for _, h := range app.StatusHistory {
			history = append(history, h.To)
		}
		assert.Equal(t, []xpromo.AppStatus{xpromo.AppStatusPending, xpromo.AppStatusApproved, xpromo.AppStatusSuspended, xpromo.AppStatusApproved}, history)
		audit, err := c.AdminAudit(ctx, 2)
		require.NoError(t, err)
		require.Len(t, audit.Entries, 2)
		assert.Equal(t, "app.review", audit.Entries[0].Action, "newest first")
		acct, err := c.AdminSetPayoutAccount(ctx, pub.AppID, "acct_1TestPublisher")
		require.NoError(t, err)
		assert.Equal(t, "acct_1TestPublisher", acct.AccountID)
		score, err = advC.GetScore(ctx, adv.AppID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.AppStatusApproved, score.Status)

		// Top-up: refusal, x402 challenge (an answer, not an error),
		// checkout completed in test mode, idempotent replay.
		_, err = advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 4999})
		sdkErr(t, err, 422, xpromo.CodeBelowMinimum)
		x, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 10000, PreferX402: true})
		require.NoError(t, err)
		require.True(t, x.PaymentRequired())
		assert.Equal(t, xpromo.X402Version, x.Challenge.X402Version)
		require.NotEmpty(t, x.Challenge.Accepts)
		assert.Equal(t, "exact", x.Challenge.Accepts[0].Scheme)
		top, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 5000}, xpromo.WithIdempotencyKey("sdk-topup-1"))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(top.CheckoutURL, a.url+"/test/checkout/"), top.CheckoutURL)
		var replay xpromo.Response
		again, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 5000}, xpromo.WithIdempotencyKey("sdk-topup-1"), xpromo.WithResponse(&replay))
		require.NoError(t, err)
		assert.Equal(t, top.CheckoutURL, again.CheckoutURL)
		assert.True(t, replay.Replayed, "the same key answers the stored response")
		_, err = advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 6000}, xpromo.WithIdempotencyKey("sdk-topup-1"))
		sdkErr(t, err, 422, xpromo.CodeIdempotencyKeyReused)
		sess, err := c.CompleteTestCheckout(ctx, top.CheckoutURL)
		require.NoError(t, err)
		assert.Equal(t, "completed", sess.Status)
		assert.Equal(t, int64(5000), sess.AmountCents)
		assert.Equal(t, adv.AppID, sess.AppID)
		_, err = c.CompleteTestCheckout(ctx, top.CheckoutURL) // completing twice credits once
		require.NoError(t, err)

		page, err := advC.GetLedger(ctx, adv.AppID, nil)
		require.NoError(t, err)
		require.Len(t, page.Lines, 1, "the checkout credited the wallet once")
		assert.Equal(t, xpromo.LineTopup, page.Lines[0].Type)
		assert.Equal(t, int64(5000), page.Lines[0].AmountCents)
		assert.Equal(t, int64(5000), page.Lines[0].BalanceAfter)
		assert.Nil(t, page.NextCursor)

		// Operator adjustments: a credit, and a debit that would go below zero.
		adj, err := c.AdminAdjustWallet(ctx, adv.AppID, xpromo.Adjustment{AmountCents: 1200, Note: "refund of ticket 4711"}, xpromo.WithIdempotencyKey("ticket-4711"))
		require.NoError(t, err)
		assert.Equal(t, xpromo.LineAdjustment, adj.Type)
		assert.Equal(t, int64(6200), adj.BalanceAfter)
		require.NotNil(t, adj.Note)
		assert.Equal(t, "refund of ticket 4711", *adj.Note)
		_, err = c.AdminAdjustWallet(ctx, adv.AppID, xpromo.Adjustment{AmountCents: -1_000_000, Note: "too much"})
		sdkErr(t, err, 409, "insufficient_funds")

		// Campaigns.
		_, err = advC.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: adv.AppID, Categories: []string{"productivity"}, DailyBudgetCents: 999})
		sdkErr(t, err, 422, xpromo.CodeBelowMinimum)
		one := int64(1)
		_, err = advC.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: adv.AppID, Categories: []string{"productivity"}, DailyBudgetCents: 5000, MaxBidCents: &one})
		sdkErr(t, err, 422, xpromo.CodeBidBelowFloor)
		_, err = pubC.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: adv.AppID, Categories: []string{"productivity"}, DailyBudgetCents: 5000})
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		cmp, err := advC.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: adv.AppID, Categories: []string{"productivity"}, DailyBudgetCents: 5000})
		require.NoError(t, err)
		assert.Equal(t, xpromo.CampaignStatusThrottled, cmp.Status)
		assert.Nil(t, cmp.MaxBidCents)
		assert.Positive(t, cmp.FloorCents)
		cmp, err = advC.PauseCampaign(ctx, cmp.CampaignID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.CampaignStatusPaused, cmp.Status)
		_, err = pubC.ResumeCampaign(ctx, cmp.CampaignID)
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		cmp, err = advC.ResumeCampaign(ctx, cmp.CampaignID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.CampaignStatusThrottled, cmp.Status, "the app is not live yet")

		// Stats.
		stats, err := advC.GetStats(ctx, adv.AppID, &xpromo.StatsParams{Period: xpromo.PeriodLast7Days})
		require.NoError(t, err)
		assert.Zero(t, stats.Installs)
		assert.NotNil(t, stats.FraudRejected)
		_, err = advC.GetStats(ctx, adv.AppID, nil)
		require.NoError(t, err)
		_, err = advC.GetStats(ctx, adv.AppID, &xpromo.StatsParams{Period: "forever"})
		sdkErr(t, err, 422, "invalid_period")

		// Payouts: top-ups are not withdrawable; a cleared install's cash
		// earnings are (attribution is not built yet: the ledger posts it).
		_, err = advC.RequestPayout(ctx, adv.AppID)
		sdkErr(t, err, 409, xpromo.CodeBelowMinimum)
		l := &ledger.Ledger{Store: s, Now: a.clock.Now}
		hold := ledger.Hold{ID: "ch_sdk", Advertiser: adv.AppID, Publisher: pub.AppID, Amount: 5000, ChainID: "ch_sdk"}
		for _, build := range []func() (ledger.Operation, error){
			func() (ledger.Operation, error) { return ledger.EscrowHold("hold:ch_sdk", hold) },
			func() (ledger.Operation, error) { return ledger.Clear("clear:ch_sdk", hold, ledger.EarnCash) },
		} {
			op, err := build()
			require.NoError(t, err)
			_, err = l.Post(ctx, op)
			require.NoError(t, err)
		}
		_, err = pubC.RequestPayout(ctx, pub.AppID)
		sdkErr(t, err, 409, xpromo.CodeBelowMinimum) // 3500 earned: under EUR 50

		// The iterator walks every page and sees what one big page holds.
		all, err := advC.GetLedger(ctx, adv.AppID, &xpromo.LedgerParams{Limit: xpromo.MaxLedgerLimit})
		require.NoError(t, err)
		require.Greater(t, len(all.Lines), 2)
		var walked []xpromo.LedgerLine
		for line, err := range advC.LedgerLines(ctx, adv.AppID, &xpromo.LedgerParams{Limit: 1, From: xpromo.DateOf(a.clock.Now())}) {
			require.NoError(t, err)
			walked = append(walked, line)
		}
		assert.Equal(t, all.Lines, walked)
		_, err = advC.GetLedger(ctx, adv.AppID, &xpromo.LedgerParams{From: "yesterday"})
		sdkErr(t, err, 422, "invalid_date")

		// Floors only go down.
		floors, err := c.AdminCutFloor(ctx, "productivity", xpromo.FloorCut{Platform: xpromo.PlatformMac, FloorCents: 1, Reason: "promotion"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), floors.Floors.Mac)
		_, err = c.AdminCutFloor(ctx, "productivity", xpromo.FloorCut{Platform: xpromo.PlatformMac, FloorCents: 2, Reason: "oops"})
		sdkErr(t, err, 409, "floor_cannot_rise")

		// Key rotation: the new key works.
		rot, err := advC.RotateKey(ctx, adv.AppID)
		require.NoError(t, err)
		assert.True(t, rot.PreviousKeyExpiresAt.After(a.clock.Now()))
		_, err = advC.With(xpromo.WithAPIKey(rot.APIKey)).GetScore(ctx, adv.AppID)
		require.NoError(t, err)
	})
}

// TestSDKClientPayout: a withdrawable balance of at least EUR 50 is paid
// out through the client.
func TestSDKClientPayout(t *testing.T) {
	s := storagetest.SQLite(t)
	a := start(t, openapitest.New(t), s, wire.Config{ReadLimit: 10_000, WriteLimit: 10_000})
	ctx := context.Background()
	c := xpromo.NewClient(a.url, xpromo.WithAdminToken(adminToken))
	adv, err := c.RegisterApp(ctx, sdkRegistration("Advertiser", "com.example.adv"))
	require.NoError(t, err)
	pub, err := c.RegisterApp(ctx, sdkRegistration("Publisher", "com.example.pub"))
	require.NoError(t, err)
	advC := c.With(xpromo.WithAPIKey(adv.APIKey))
	pubC := c.With(xpromo.WithAPIKey(pub.APIKey))
	top, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 20000})
	require.NoError(t, err)
	_, err = c.CompleteTestCheckout(ctx, top.CheckoutURL)
	require.NoError(t, err)

	l := &ledger.Ledger{Store: s, Now: a.clock.Now}
	hold := ledger.Hold{ID: "ch_payout", Advertiser: adv.AppID, Publisher: pub.AppID, Amount: 10000, ChainID: "ch_payout"}
	for _, build := range []func() (ledger.Operation, error){
		func() (ledger.Operation, error) { return ledger.EscrowHold("hold:ch_payout", hold) },
		func() (ledger.Operation, error) { return ledger.Clear("clear:ch_payout", hold, ledger.EarnCash) },
	} {
		op, err := build()
		require.NoError(t, err)
		_, err = l.Post(ctx, op)
		require.NoError(t, err)
	}
	p, err := pubC.RequestPayout(ctx, pub.AppID)
	require.NoError(t, err)
	assert.Equal(t, int64(7000), p.AmountCents, "10000 less the 0.3 take rate")
	assert.NotEmpty(t, p.TransferID)

	var types []xpromo.LineType
	for line, err := range pubC.LedgerLines(ctx, pub.AppID, &xpromo.LedgerParams{Limit: 1}) {
		require.NoError(t, err)
		types = append(types, line.Type)
	}
	assert.Equal(t, []xpromo.LineType{xpromo.LineEarn, xpromo.LinePayout}, types)
}

// lossyTransport delivers the first request matching lose to the server,
// then throws the answer away and reports a broken connection, as when a
// network drops a response.
type lossyTransport struct {
	base http.RoundTripper
	lose func(*http.Request) bool
	mu   sync.Mutex
	lost []*http.Request
}

func (t *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && len(t.lost) == 0 && t.lose(r) {
		t.lost = append(t.lost, r)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (simulated)")
	}
	return resp, err
}

// TestSDKClientRetryIsIdempotent: a POST whose answer is lost is retried
// with the same Idempotency-Key, and the real server runs it once.
func TestSDKClientRetryIsIdempotent(t *testing.T) {
	s := storagetest.SQLite(t)
	chk := openapitest.New(t)
	a := start(t, chk, s, wire.Config{ReadLimit: 10_000, WriteLimit: 10_000})
	ctx := context.Background()
	lossy := &lossyTransport{base: chk.Transport(http.DefaultTransport), lose: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/top-up")
	}}
	c := xpromo.NewClient(a.url, xpromo.WithHTTPClient(&http.Client{Transport: lossy}), xpromo.WithRetryWait(time.Millisecond, time.Millisecond))
	adv, err := c.RegisterApp(ctx, sdkRegistration("Advertiser", "com.example.adv"))
	require.NoError(t, err)
	advC := c.With(xpromo.WithAPIKey(adv.APIKey))

	var resp xpromo.Response
	top, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 5000}, xpromo.WithResponse(&resp))
	require.NoError(t, err)
	require.Len(t, lossy.lost, 1, "the first answer was lost")
	assert.Equal(t, lossy.lost[0].Header.Get("Idempotency-Key"), resp.IdempotencyKey, "the retry reused the key")
	assert.True(t, resp.Replayed, "the server answered the retry from the first run")
	_, err = c.CompleteTestCheckout(ctx, top.CheckoutURL)
	require.NoError(t, err)
	var lines []xpromo.LedgerLine
	for line, err := range advC.LedgerLines(ctx, adv.AppID, nil) {
		require.NoError(t, err)
		lines = append(lines, line)
	}
	require.Len(t, lines, 1, "one top-up")
	assert.Equal(t, int64(5000), lines[0].BalanceAfter)
}

// TestSDKClientRateLimited: the real server's 429 reaches the caller as an
// *Error with retry_after when the wait is longer than the client may wait.
func TestSDKClientRateLimited(t *testing.T) {
	s := storagetest.SQLite(t)
	a := start(t, openapitest.New(t), s, wire.Config{ReadLimit: 2, WriteLimit: 2})
	c := xpromo.NewClient(a.url, xpromo.WithMaxRetryAfter(0))
	for range 2 {
		_, err := c.GetRateCard(context.Background())
		require.NoError(t, err)
	}
	var resp xpromo.Response
	_, err := c.GetRateCard(context.Background(), xpromo.WithResponse(&resp))
	sdkErr(t, err, 429, xpromo.CodeRateLimited)
	var e *xpromo.Error
	require.True(t, errors.As(err, &e))
	require.NotNil(t, e.RetryAfter)
	assert.True(t, e.RetryAfter.After(a.clock.Now()))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
}
