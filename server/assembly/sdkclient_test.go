package assembly_test

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

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
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
		a := start(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
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
	a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
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
	a := start(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
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
	a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 2, WriteLimit: 2})
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

// authSpy records the Authorization header of every request to /v1/sdk/.
type authSpy struct {
	base http.RoundTripper
	mu   sync.Mutex
	sdk  map[string][]string // path → the Authorization headers sent
}

func (s *authSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/v1/sdk/") {
		s.mu.Lock()
		if s.sdk == nil {
			s.sdk = map[string][]string{}
		}
		s.sdk[r.URL.Path] = append(s.sdk[r.URL.Path], r.Header.Get("Authorization"))
		s.mu.Unlock()
	}
	return s.base.RoundTrip(r)
}

// TestSDKClientAttribution drives attribution through the Go client's typed
// methods against the real server, on both stores, every exchange checked
// against openapi.json: SDK keys registered, listed and revoked; a fill, a
// signed click and a countersigned install through the SDK* methods (which
// send no credential, even from a client holding an API key and the admin
// token); the chain read by its apps only; the test clock advanced 48 hours,
// a heartbeat, and the sweep clearing the install.
func TestSDKClientAttribution(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		chk := openapitest.New(t)
		a := start(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		ctx := context.Background()
		spy := &authSpy{base: chk.Transport(http.DefaultTransport)}
		c := xpromo.NewClient(a.url,
			xpromo.WithHTTPClient(&http.Client{Transport: spy}),
			xpromo.WithAdminToken(adminToken),
			xpromo.WithRetryWait(time.Millisecond, 10*time.Millisecond),
		)

		// The test clock.
		clk, err := c.AdminGetClock(ctx)
		require.NoError(t, err)
		assert.True(t, clk.TestMode)
		assert.Zero(t, clk.OffsetSeconds)
		t0 := clk.Now
		_, err = c.With(xpromo.WithAdminToken("wrong")).AdminGetClock(ctx)
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)
		_, err = c.AdminAdvanceClock(ctx, 0)
		sdkErr(t, err, 422, "invalid_duration")

		// Two approved apps: a publisher selling productivity, an advertiser
		// buying it.
		pubReg := sdkRegistration("Publisher", "com.example.pub")
		pubReg.Category = "productivity"
		pub, err := c.RegisterApp(ctx, pubReg)
		require.NoError(t, err)
		adv, err := c.RegisterApp(ctx, sdkRegistration("Advertiser", "com.example.adv"))
		require.NoError(t, err)
		third, err := c.RegisterApp(ctx, sdkRegistration("Third", "com.example.third"))
		require.NoError(t, err)
		for _, id := range []string{pub.AppID, adv.AppID} {
			_, err = c.AdminApproveApp(ctx, id, "vetted")
			require.NoError(t, err)
		}
		pubC := c.With(xpromo.WithAPIKey(pub.APIKey))
		advC := c.With(xpromo.WithAPIKey(adv.APIKey))
		thirdC := c.With(xpromo.WithAPIKey(third.APIKey))

		// SDK keys: registered (201, then 200 for the same key), refused
		// when malformed or for another app, listed, revoked.
		pubKey, err := token.GenerateKey(nil)
		require.NoError(t, err)
		advKey, err := token.GenerateKey(nil)
		require.NoError(t, err)
		spare, err := token.GenerateKey(nil)
		require.NoError(t, err)
		var resp xpromo.Response
		k, err := pubC.RegisterSDKKey(ctx, pub.AppID, &xpromo.RegisterSDKKeyRequest{PublicKey: token.EncodePublicKey(pubKey.Public)}, xpromo.WithResponse(&resp))
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, pubKey.ID, k.KeyID)
		assert.Nil(t, k.RevokedAt)
		k, err = pubC.RegisterSDKKey(ctx, pub.AppID, &xpromo.RegisterSDKKeyRequest{PublicKey: token.EncodePublicKey(pubKey.Public)}, xpromo.WithResponse(&resp))
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "the same key again")
		assert.Equal(t, pubKey.ID, k.KeyID)
		_, err = pubC.RegisterSDKKey(ctx, pub.AppID, &xpromo.RegisterSDKKeyRequest{PublicKey: "not-a-key"})
		sdkErr(t, err, 422, "invalid_public_key")
		_, err = advC.RegisterSDKKey(ctx, pub.AppID, &xpromo.RegisterSDKKeyRequest{PublicKey: token.EncodePublicKey(advKey.Public)})
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		for _, kp := range []token.KeyPair{advKey, spare} {
			_, err = advC.RegisterSDKKey(ctx, adv.AppID, &xpromo.RegisterSDKKeyRequest{PublicKey: token.EncodePublicKey(kp.Public)})
			require.NoError(t, err)
		}
		revoked, err := advC.RevokeSDKKey(ctx, adv.AppID, spare.ID)
		require.NoError(t, err)
		assert.Equal(t, spare.ID, revoked.KeyID)
		require.NotNil(t, revoked.RevokedAt)
		_, err = pubC.RevokeSDKKey(ctx, adv.AppID, advKey.ID)
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		list, err := advC.ListSDKKeys(ctx, adv.AppID)
		require.NoError(t, err)
		require.Len(t, list.Keys, 2)
		active := map[string]bool{}
		for _, k := range list.Keys {
			active[k.KeyID] = k.RevokedAt == nil
		}
		assert.Equal(t, map[string]bool{advKey.ID: true, spare.ID: false}, active)

		// The advertiser pays for a campaign.
		top, err := advC.TopUp(ctx, adv.AppID, &xpromo.TopUpParams{AmountCents: 20_000})
		require.NoError(t, err)
		_, err = c.CompleteTestCheckout(ctx, top.CheckoutURL)
		require.NoError(t, err)
		_, err = advC.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: adv.AppID, Categories: []string{"productivity"}, DailyBudgetCents: 5000})
		require.NoError(t, err)

		// The publisher's SDK fills a slot and reports the click. pubC holds
		// an API key and the admin token: neither is sent.
		// Every fill is signed with the publisher's SDK key: an unsigned one,
		// or one for an app the key is not registered to, is refused.
		_, err = pubC.SDKFill(ctx, &xpromo.FillRequest{AppID: pub.AppID, Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac})
		sdkErr(t, err, 422, "missing_field")
		other := &xpromo.FillRequest{AppID: "app_missing", Slot: xpromo.SlotAboutWindow, Platform: xpromo.PlatformMac}
		require.NoError(t, other.Sign(pubKey, t0))
		_, err = pubC.SDKFill(ctx, other)
		sdkErr(t, err, 403, string(xpromo.FraudBadSignature))
		req := &xpromo.FillRequest{AppID: pub.AppID, Slot: xpromo.SlotOnboardingComplete, Platform: xpromo.PlatformMac, DeviceID: "device-1"}
		require.NoError(t, req.Sign(pubKey, t0))
		fill, err := pubC.SDKFill(ctx, req)
		require.NoError(t, err)
		require.True(t, fill.Filled, "%+v", fill)
		require.NotNil(t, fill.Offer)
		assert.Equal(t, adv.AppID, fill.Creative.AdvertiserAppID)
		assert.Equal(t, pub.AppID, fill.Offer.Publisher)
		assert.Nil(t, fill.NoFillReason)

		_, err = pubC.SDKClick(ctx, &xpromo.ClickRequest{Token: "not.a.token"})
		sdkErr(t, err, 403, string(xpromo.FraudBadSignature))
		tok, err := token.SignClick(pubKey.Private, pubKey.ID, token.NewClickClaims(*fill.Offer, t0))
		require.NoError(t, err)
		clickKey := xpromo.WithIdempotencyKey("click_" + token.TokenHashString(tok))
		click, err := pubC.SDKClick(ctx, &xpromo.ClickRequest{Token: tok}, clickKey)
		require.NoError(t, err)
		assert.Equal(t, t0.Truncate(time.Second).Add(15*time.Minute), click.ExpiresAt.UTC())
		again, err := pubC.SDKClick(ctx, &xpromo.ClickRequest{Token: tok}, clickKey, xpromo.WithResponse(&resp))
		require.NoError(t, err)
		assert.True(t, resp.Replayed, "the event's idempotency key replays the first answer")
		assert.Equal(t, click.ChainID, again.ChainID)

		// A minute later the advertiser's SDK claims the install.
		clk, err = c.AdminAdvanceClock(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(60), clk.OffsetSeconds)
		assert.True(t, clk.Now.Equal(t0.Add(time.Minute)), "%s, want %s", clk.Now, t0.Add(time.Minute))
		cs, err := token.Countersign(advKey.Private, advKey.ID, tok, "device-1", clk.Now, adv.AppID)
		require.NoError(t, err)
		inst, err := advC.SDKInstall(ctx, &xpromo.InstallRequest{Token: tok, Countersignature: cs})
		require.NoError(t, err)
		assert.Equal(t, click.ChainID, inst.ChainID)
		assert.Equal(t, xpromo.ChainInstalled, inst.State)

		// The chain is its two apps' only.
		ch, err := pubC.GetChain(ctx, click.ChainID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.ChainInstalled, ch.State)
		assert.Equal(t, tok, ch.ClickToken)
		require.NotNil(t, ch.Countersignature)
		assert.Equal(t, cs, *ch.Countersignature)
		assert.Equal(t, pub.AppID, ch.PublisherAppID)
		assert.Equal(t, adv.AppID, ch.AdvertiserAppID)
		_, err = thirdC.GetChain(ctx, click.ChainID)
		sdkErr(t, err, 404, xpromo.CodeNotFound)
		_, err = c.GetChain(ctx, click.ChainID) // no API key
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)

		// 48 hours later a heartbeat activates the chain; the sweep clears it.
		clk, err = c.AdminAdvanceClock(ctx, 48*time.Hour)
		require.NoError(t, err)
		_, err = advC.SDKHeartbeat(ctx, &xpromo.HeartbeatRequest{Heartbeat: "not.a.heartbeat"})
		sdkErr(t, err, 403, string(xpromo.FraudBadSignature))
		hb, err := token.SignHeartbeat(advKey.Private, advKey.ID, token.HeartbeatClaims{
			AppID: adv.AppID, DeviceID: "device-1", TokenHash: token.TokenHashString(tok), Seq: 1, SentAt: clk.Now.Unix(),
		})
		require.NoError(t, err)
		beat, err := advC.SDKHeartbeat(ctx, &xpromo.HeartbeatRequest{Heartbeat: hb})
		require.NoError(t, err)
		assert.Equal(t, click.ChainID, beat.ChainID)
		assert.Equal(t, xpromo.ChainActivated48h, beat.State)
		_, err = advC.With(xpromo.WithAdminToken("")).AdminSweep(ctx) // an API key is no admin token
		sdkErr(t, err, 401, xpromo.CodeUnauthorized)
		swept, err := c.AdminSweep(ctx)
		require.NoError(t, err)
		assert.Equal(t, xpromo.SweepResult{Cleared: 1}, *swept)
		ch, err = advC.GetChain(ctx, click.ChainID)
		require.NoError(t, err)
		assert.Equal(t, xpromo.ChainCleared, ch.State)
		assert.NotNil(t, ch.SettledAt)
		lines, err := pubC.GetLedger(ctx, pub.AppID, nil)
		require.NoError(t, err)
		require.Len(t, lines.Lines, 1)
		assert.Equal(t, xpromo.LineEarn, lines.Lines[0].Type)
		require.NotNil(t, lines.Lines[0].EventChainID)
		assert.Equal(t, click.ChainID, *lines.Lines[0].EventChainID, "the earn line names the chain")

		// Not one SDK call carried a credential.
		spy.mu.Lock()
		defer spy.mu.Unlock()
		for _, p := range []string{"/v1/sdk/fill", "/v1/sdk/click", "/v1/sdk/install", "/v1/sdk/heartbeat"} {
			require.NotEmpty(t, spy.sdk[p], "no call to %s", p)
			for _, auth := range spy.sdk[p] {
				assert.Empty(t, auth, "%s sent Authorization", p)
			}
		}
	})
}
