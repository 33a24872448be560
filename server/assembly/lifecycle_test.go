package assembly_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// startBuilt is start, keeping the assembled server (its lifecycle review
// is called directly, as the background loop calls it).
func startBuilt(t *testing.T, chk *openapitest.Checker, s storage.Store, cfg assembly.Config) (*api, *assembly.Server) {
	t.Helper()
	a := &api{t: t, http: chk.Client(), store: s, clock: clocktest.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg.BaseURL, cfg.Now, cfg.AdminToken, cfg.Mode = ts.URL, a.clock.Now, adminToken, httpapi.ModeTest
	srv, err := assembly.Build(cfg, s)
	require.NoError(t, err)
	handler, a.srv, a.url = srv.HTTP, srv.HTTP, ts.URL
	return a, srv
}

// fraudClaim plays a click that the advertiser's SDK claims at once: both
// signatures verify, and the rule refuses it (fraud_ctit_too_short).
func (a *api) fraudClaim(pub, adv sdkApp, device string) {
	a.t.Helper()
	fill := decode[xpromo.FillResponse](a.t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
	require.True(a.t, fill.Filled, "%+v", fill)
	now := a.serverNow()
	tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*fill.Offer, now))
	require.NoError(a.t, err)
	a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok}))
	cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, device, now, adv.id)
	require.NoError(a.t, err)
	assert.Equal(a.t, "fraud_ctit_too_short", a.expect(403, a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs})).code(a.t))
}

func (a *api) sweep() xpromo.SweepResult {
	a.t.Helper()
	return decode[xpromo.SweepResult](a.t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil)))
}

func (a *api) status(app sdkApp) xpromo.AppStatus {
	a.t.Helper()
	return decode[xpromo.Score](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/score", app.key, nil))).Status
}

// thresholds reads GET /v1/apps/{id}/thresholds, by threshold name.
func (a *api) thresholds(app sdkApp) map[xpromo.ThresholdName]xpromo.Threshold {
	a.t.Helper()
	th := decode[xpromo.Thresholds](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/thresholds", app.key, nil)))
	require.Equal(a.t, app.id, th.AppID)
	out := map[xpromo.ThresholdName]xpromo.Threshold{}
	for _, x := range th.Thresholds {
		out[x.Name] = x
	}
	require.Len(a.t, out, 6)
	return out
}

// figure is what a threshold shows: value, sample and state.
type figure struct {
	Value  float64
	Sample int64
	State  xpromo.ThresholdState
}

func figureOf(x xpromo.Threshold) figure {
	f := figure{Value: x.Value, State: x.State}
	if x.Sample != nil {
		f.Sample = *x.Sample
	}
	return f
}

func (a *api) lastChange(app sdkApp) xpromo.StatusChange {
	a.t.Helper()
	v := decode[xpromo.AdminApp](a.t, a.expect(200, a.do("GET", "/v1/admin/apps/"+app.id, adminToken, nil)))
	require.NotEmpty(a.t, v.StatusHistory)
	return v.StatusHistory[len(v.StatusHistory)-1]
}

// clawbackEvents are the app's fraud.flagged events announcing clawbacks,
// by chain id.
func (a *api) clawbackEvents(app sdkApp) []string {
	a.t.Helper()
	page := decode[xpromo.EventPage](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/events?type=fraud.flagged&limit=100", app.key, nil)))
	var out []string
	for _, e := range page.Events {
		var d xpromo.FraudEventData
		require.NoError(a.t, json.Unmarshal(e.Data, &d))
		if d.Reason == xpromo.FraudClawedBack {
			require.NotNil(a.t, d.PreviousState)
			assert.Equal(a.t, xpromo.ChainCleared, *d.PreviousState)
			out = append(out, d.Chain.ChainID)
		}
	}
	slices.Sort(out)
	return out
}

func balance(ls []xpromo.LedgerLine) int64 {
	if len(ls) == 0 {
		return 0
	}
	return ls[len(ls)-1].BalanceAfter
}

func linesOf(ls []xpromo.LedgerLine, typ xpromo.LineType) []wline {
	var out []wline
	for _, l := range wlines(ls) {
		if l.Type == typ {
			out = append(out, wline{Type: l.Type, Amount: l.Amount, Counterparty: l.Counterparty, Chain: l.Chain})
		}
	}
	return out
}

// vetted registers an app the README's way (reserved example.com names,
// a contact that answers) and lets the vetting gate approve it: the job
// runner runs the gate against the test-mode sandbox, whose inbox follows
// the challenge link. Then the app registers its SDK key.
func (a *api) vetted(name, bundle, category string) sdkApp {
	a.t.Helper()
	reg := registration(name, bundle)
	if category != "" {
		reg["category"] = category
	}
	r := a.expect(201, a.do("POST", "/v1/apps", "", reg)).json(a.t)
	app := sdkApp{id: r["app_id"].(string), key: r["api_key"].(string)}
	assert.Equal(a.t, xpromo.AppStatusPending, a.status(app))
	require.Eventually(a.t, func() bool { return a.status(app) == xpromo.AppStatusApproved }, 30*time.Second, 10*time.Millisecond, "the gate approves %s", name)
	last := a.lastChange(app)
	assert.Equal(a.t, []any{xpromo.AppStatusPending, xpromo.AppStatusApproved, "gate"}, []any{*last.From, last.To, last.Actor})
	kp, err := token.GenerateKey(nil)
	require.NoError(a.t, err)
	app.sdk = kp
	a.expect(201, a.do("POST", "/v1/apps/"+app.id+"/sdk-keys", app.key, map[string]any{"public_key": token.EncodePublicKey(kp.Public)}))
	return app
}

// runJobs runs the server's job loop (the vetting gate, scoring) until the
// test ends.
func runJobs(t *testing.T, srv *assembly.Server) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.RunJobs(ctx) }()
	t.Cleanup(func() { stop(); <-done })
}

// TestLifecycleSimulation is the network moving by itself (issue 15), on
// both stores, on the test clock, through the real SDK flows: four apps go
// pending → approved (by the vetting gate, against the test-mode sandbox)
// → throttled (first trade); the advertiser goes live once its bought
// installs clear with good retention; an app whose contact never answers
// stays pending and gets no fill. One publisher then sends installs that
// the fraud rules refuse; the lifecycle review suspends it
// (fraud_rate_exceeded), claws back each of its chains cleared in the window
// exactly once (publisher's earnings back, advertiser refunded); its install
// that activates after the suspension is refunded by the sweep, never paid.
// Another publisher's installs churn (most are never used past 48 hours):
// the review suspends it (churn_exceeded) and claws back the one that
// cleared. Running the review again changes nothing. Upheld complaints
// suspend the honest publisher (no clawback); once they leave the complaints
// window a clean review reinstates it; an operator's suspension for "fraud"
// stops its fills at once and claws back like the review's. The ledger
// verifies at the end.
func TestLifecycleSimulation(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		const complaintsWindow = 10 * 24 * time.Hour
		rules := lifecycle.Rules{FraudMinClaims: 5, FraudMaxRate: 0.5, ChurnMinDecided: 4, ChurnMinRetention: 0.5,
			MaxUpheldComplaints: 2, ComplaintsWindow: complaintsWindow, LiveMinCleared: 3}
		a, srv := startBuilt(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000, JobInterval: 5 * time.Millisecond, Lifecycle: rules})
		runJobs(t, srv)
		ctx := context.Background()
		review := func() lifecycle.Result {
			t.Helper()
			res, err := srv.Lifecycle.Review(ctx)
			require.NoError(t, err)
			return res
		}
		const category, price = "productivity", int64(400) // the category's mac floor
		earn := price - price*30/100

		// pending → approved, by the gate.
		adv := a.vetted("Snip", "com.example.snip", "")
		good := a.vetted("Clipboard", "com.example.clipboard", category)
		bad := a.vetted("Farm", "com.example.farm", category)
		churn := a.vetted("Churn", "com.example.churn", category)
		for _, app := range []sdkApp{adv, good, bad, churn} {
			assert.Equal(t, xpromo.AppStatusApproved, a.status(app))
		}
		// A contact that never answers: the gate leaves the app pending,
		// and a pending app gets no fill.
		unv := registration("Quiet", "com.example.quiet")
		unv["contact_email"] = "unverified@example.com"
		r := a.expect(201, a.do("POST", "/v1/apps", "", unv)).json(t)
		quiet := sdkApp{id: r["app_id"].(string), key: r["api_key"].(string)}
		require.Eventually(t, func() bool {
			sc := decode[xpromo.Score](t, a.expect(200, a.do("GET", "/v1/apps/"+quiet.id+"/score", quiet.key, nil)))
			return slices.Contains(sc.Reasons, "gate_contact_unverified")
		}, 30*time.Second, 10*time.Millisecond)
		assert.Equal(t, xpromo.AppStatusPending, a.status(quiet))
		kp, err := token.GenerateKey(nil)
		require.NoError(t, err)
		quiet.sdk = kp
		a.expect(201, a.do("POST", "/v1/apps/"+quiet.id+"/sdk-keys", quiet.key, map[string]any{"public_key": token.EncodePublicKey(kp.Public)}))

		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{category}, "daily_budget_cents": 5000}))
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(quiet))

		// Day 0: one install through the honest publisher, two through the
		// farm; all are kept 48 hours and clear. First trade: throttled;
		// three cleared with retention 1: the advertiser is live.
		tokGood := a.install(good, adv, "dev-1")
		tokBad2 := a.install(bad, adv, "dev-2")
		tokBad3 := a.install(bad, adv, "dev-3")
		for _, app := range []sdkApp{adv, good, bad} {
			assert.Equal(t, xpromo.AppStatusThrottled, a.status(app))
		}
		// Someone who saw the honest publisher's click token replays it
		// from six devices: each claim is refused (fraud_token_reused) and
		// recorded, but none verified, so none counts against the
		// publisher: a replay cannot get an app suspended.
		for i := range 6 {
			cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tokGood, "replay-"+string(rune('a'+i)), a.serverNow(), adv.id)
			require.NoError(t, err)
			assert.Equal(t, "fraud_token_reused", a.expect(403, a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tokGood, Countersignature: cs})).code(t))
		}

		a.advance(48 * time.Hour)
		a.heartbeat(adv, tokGood, "dev-1")
		a.heartbeat(adv, tokBad2, "dev-2")
		a.heartbeat(adv, tokBad3, "dev-3")
		assert.Equal(t, xpromo.SweepResult{Cleared: 3}, a.sweep())
		assert.Equal(t, xpromo.AppStatusLive, a.status(adv))
		last := a.lastChange(adv)
		assert.Equal(t, []any{xpromo.AppStatusThrottled, xpromo.AppStatusLive, "cleared_with_good_retention", "market"}, []any{*last.From, last.To, last.Reason, last.Actor})
		// The thresholds read shows the go-live bar the clearing just
		// applied: 3 charged of 3 resolved, both halves met.
		th := a.thresholds(adv)
		assert.Equal(t, figure{Value: 3, State: xpromo.ThresholdMet}, figureOf(th[xpromo.ThresholdLiveCleared]))
		assert.Equal(t, figure{Value: 1, Sample: 3, State: xpromo.ThresholdMet}, figureOf(th[xpromo.ThresholdLiveRetention]))
		assert.Equal(t, 3.0, th[xpromo.ThresholdLiveCleared].Bar)
		assert.Equal(t, int64(30*24), *th[xpromo.ThresholdLiveCleared].WindowHours)
		badChains := []string{}
		for _, l := range linesOf(a.wallet(bad), xpromo.LineEarn) {
			badChains = append(badChains, l.Chain)
		}
		require.Len(t, badChains, 2)
		slices.Sort(badChains)

		// Nothing crosses a bar yet.
		assert.Equal(t, lifecycle.Result{}, review())
		assert.Equal(t, xpromo.AppStatusThrottled, a.status(good))

		// Day 2: four installs through the churning publisher (only the
		// first will be used past 48 hours); one more honest-looking install
		// through the farm, then three claims the fraud rules refuse. The
		// farm's claims: 3 accepted, 3 refused for fraud: a rate of 0.5 on
		// 6 ≥ 5 claims.
		var tokChurn []string
		for _, d := range []string{"dev-c1", "dev-c2", "dev-c3", "dev-c4"} {
			tokChurn = append(tokChurn, a.install(churn, adv, d))
		}
		assert.Equal(t, xpromo.AppStatusThrottled, a.status(churn))
		tokBad4 := a.install(bad, adv, "dev-4")
		for _, d := range []string{"dev-5", "dev-6", "dev-7"} {
			a.fraudClaim(bad, adv, d)
		}
		// Before the review, the thresholds read shows the bar the farm
		// crosses (3 of 6 verified claims, at the 0.5 bar, on at least 5),
		// and the honest publisher's one claim too few to judge.
		th = a.thresholds(bad)
		assert.Equal(t, figure{Value: 0.5, Sample: 6, State: xpromo.ThresholdBreached}, figureOf(th[xpromo.ThresholdFraudRate]))
		assert.Equal(t, []any{0.5, int64(5), "at_least", lifecycle.ReasonFraudRate}, []any{th[xpromo.ThresholdFraudRate].Bar,
			*th[xpromo.ThresholdFraudRate].MinSample, th[xpromo.ThresholdFraudRate].Comparison, th[xpromo.ThresholdFraudRate].Reason})
		assert.Equal(t, figure{State: xpromo.ThresholdWithin}, figureOf(th[xpromo.ThresholdCanaryClicks]))
		assert.Nil(t, th[xpromo.ThresholdCanaryClicks].Since, "never reinstated: canaries count since ever")
		assert.Equal(t, figure{Sample: 1, State: xpromo.ThresholdTooFew}, figureOf(a.thresholds(good)[xpromo.ThresholdFraudRate]))
		res := review()
		assert.Equal(t, []string{bad.id}, res.Suspended)
		assert.Equal(t, 2, res.ClawedBack)
		assert.Equal(t, 2*price, res.Refunded)
		assert.Zero(t, res.Failed)
		assert.Equal(t, xpromo.AppStatusSuspended, a.status(bad))
		last = a.lastChange(bad)
		assert.Equal(t, []any{xpromo.AppStatusThrottled, xpromo.AppStatusSuspended, lifecycle.ReasonFraudRate, "fraud"}, []any{*last.From, last.To, last.Reason, last.Actor})
		score := decode[xpromo.Score](t, a.expect(200, a.do("GET", "/v1/apps/"+bad.id+"/score", bad.key, nil)))
		assert.Contains(t, score.Reasons, lifecycle.ReasonFraudRate, "the score says why")
		scores := decode[xpromo.EventPage](t, a.expect(200, a.do("GET", "/v1/apps/"+bad.id+"/events?type=score.updated&limit=100", bad.key, nil))).Events
		require.NotEmpty(t, scores)
		var upd xpromo.ScoreEventData
		require.NoError(t, json.Unmarshal(scores[len(scores)-1].Data, &upd))
		assert.Equal(t, xpromo.AppStatusSuspended, upd.Score.Status, "score.updated announced the suspension")

		// The money: the farm gave back both earnings (its wallet is 0), the
		// advertiser got both prices back as adjustments.
		badLines := a.wallet(bad)
		assert.Equal(t, []wline{
			{Type: xpromo.LineClawback, Amount: -earn, Counterparty: adv.id, Chain: badChains[0]},
			{Type: xpromo.LineClawback, Amount: -earn, Counterparty: adv.id, Chain: badChains[1]},
		}, sortedByChain(linesOf(badLines, xpromo.LineClawback)))
		assert.Zero(t, balance(badLines))
		assert.Equal(t, []wline{
			{Type: xpromo.LineAdjustment, Amount: price, Counterparty: bad.id, Chain: badChains[0]},
			{Type: xpromo.LineAdjustment, Amount: price, Counterparty: bad.id, Chain: badChains[1]},
		}, sortedByChain(linesOf(a.wallet(adv), xpromo.LineAdjustment)))
		// fraud.flagged to both apps, per chain.
		assert.Equal(t, badChains, a.clawbackEvents(bad))
		assert.Equal(t, badChains, a.clawbackEvents(adv))
		// A suspended publisher gets no fill; it cannot withdraw.
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(bad))
		assert.Equal(t, "payout_not_allowed", a.do("POST", "/v1/apps/"+bad.id+"/payout", bad.key, nil).code(t))

		// Running the review again changes nothing more.
		assert.Equal(t, lifecycle.Result{}, review())
		assert.Len(t, a.wallet(bad), len(badLines))

		// Day 4: the farm's last install is kept, but its publisher is
		// suspended for fraud: the sweep refunds it (publisher_suspended)
		// instead of paying it, and there is nothing to claw back. The
		// churning publisher's first install clears.
		a.advance(48 * time.Hour)
		a.heartbeat(adv, tokBad4, "dev-4")
		a.heartbeat(adv, tokChurn[0], "dev-c1")
		assert.Equal(t, xpromo.SweepResult{Cleared: 1, Refunded: 1}, a.sweep())
		refunded := a.refundedChains(bad)
		require.Len(t, refunded[xpromo.PublisherSuspended], 1, "%v", refunded)
		ch := decode[xpromo.Chain](t, a.expect(200, a.do("GET", "/v1/chains/"+refunded[xpromo.PublisherSuspended][0], adv.key, nil)))
		assert.Equal(t, xpromo.ChainRefunded, ch.State)
		require.NotNil(t, ch.Reason)
		assert.Equal(t, xpromo.PublisherSuspended, *ch.Reason)
		assert.Equal(t, lifecycle.Result{}, review(), "one cleared install of four sent is not decided churn yet")
		badLines = a.wallet(bad)
		assert.Len(t, linesOf(badLines, xpromo.LineEarn), 2, "the farm was not paid for it")
		assert.Zero(t, balance(badLines))

		// Day 5: the churning publisher's other three installs were never
		// used past 48 hours: refunded. Retention 1 of 4 decided, under
		// 0.5: suspended for churn (actor fraud), its cleared install
		// clawed back and the advertiser refunded.
		a.advance(24 * time.Hour)
		assert.Equal(t, xpromo.SweepResult{Refunded: 3}, a.sweep())
		// Retained 1 of 4 decided: below the 0.5 bar.
		assert.Equal(t, figure{Value: 0.25, Sample: 4, State: xpromo.ThresholdBreached}, figureOf(a.thresholds(churn)[xpromo.ThresholdChurnRetention]))
		res = review()
		assert.Equal(t, []string{churn.id}, res.Suspended)
		assert.Equal(t, 1, res.ClawedBack)
		assert.Equal(t, price, res.Refunded)
		last = a.lastChange(churn)
		assert.Equal(t, []any{xpromo.AppStatusThrottled, xpromo.AppStatusSuspended, lifecycle.ReasonChurn, "fraud"}, []any{*last.From, last.To, last.Reason, last.Actor})
		churnLines := a.wallet(churn)
		churnEarn := linesOf(churnLines, xpromo.LineEarn)
		require.Len(t, churnEarn, 1)
		assert.Equal(t, []wline{{Type: xpromo.LineClawback, Amount: -earn, Counterparty: adv.id, Chain: churnEarn[0].Chain}}, linesOf(churnLines, xpromo.LineClawback))
		assert.Zero(t, balance(churnLines))
		assert.Equal(t, []string{churnEarn[0].Chain}, a.clawbackEvents(churn))
		assert.Len(t, a.clawbackEvents(adv), 3)
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(churn))
		assert.Equal(t, lifecycle.Result{}, review())

		// The honest publisher: two complaints upheld suspend it
		// (complaints_upheld, actor system), with no clawback.
		for range 2 {
			c := decode[xpromo.Complaint](t, a.expect(201, a.do("POST", "/v1/apps/"+adv.id+"/complaints", adv.key, map[string]any{"app_id": good.id, "reason": "misleading_ad"})))
			a.expect(200, a.do("POST", "/v1/admin/complaints/"+c.ComplaintID+"/resolve", adminToken, map[string]any{"resolution": "upheld"}))
		}
		assert.Equal(t, figure{Value: 2, State: xpromo.ThresholdBreached}, figureOf(a.thresholds(good)[xpromo.ThresholdUpheldComplaints]))
		res = review()
		assert.Equal(t, []string{good.id}, res.Suspended)
		assert.Zero(t, res.ClawedBack)
		last = a.lastChange(good)
		assert.Equal(t, lifecycle.ReasonComplaints, last.Reason)
		assert.Equal(t, "system", last.Actor)
		assert.Empty(t, linesOf(a.wallet(good), xpromo.LineClawback))
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(good))

		// A clean review: while the complaints are in the window the review
		// leaves it suspended; once they have left it, the review
		// reinstates it (clean_review, actor system) and its fills resume
		// at once. The fraud-class suspensions stay.
		a.advance(complaintsWindow - time.Hour)
		assert.Equal(t, lifecycle.Result{}, review())
		assert.Equal(t, xpromo.AppStatusSuspended, a.status(good))
		a.advance(time.Hour + time.Minute)
		assert.Equal(t, lifecycle.Result{Reinstated: []string{good.id}}, review())
		assert.Equal(t, xpromo.AppStatusThrottled, a.status(good))
		// A clean slate: the suspension bars count from the reinstatement.
		th = a.thresholds(good)
		assert.Equal(t, figure{State: xpromo.ThresholdWithin}, figureOf(th[xpromo.ThresholdUpheldComplaints]))
		require.NotNil(t, th[xpromo.ThresholdCanaryClicks].Since)
		assert.Equal(t, a.lastChange(good).At.UTC(), th[xpromo.ThresholdCanaryClicks].Since.UTC())
		assert.Equal(t, *th[xpromo.ThresholdCanaryClicks].Since, *th[xpromo.ThresholdFraudRate].Since)
		last = a.lastChange(good)
		assert.Equal(t, []any{xpromo.AppStatusSuspended, xpromo.AppStatusThrottled, lifecycle.ReasonCleanReview, "system"}, []any{*last.From, last.To, last.Reason, last.Actor})
		assert.NotContains(t, decode[xpromo.Score](t, a.expect(200, a.do("GET", "/v1/apps/"+good.id+"/score", good.key, nil))).Reasons, lifecycle.ReasonComplaints)
		fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(good, xpromo.SlotOnboardingComplete))))
		assert.True(t, fill.Filled, "%+v", fill)
		assert.Equal(t, lifecycle.Result{}, review())
		for _, app := range []sdkApp{bad, churn} {
			assert.Equal(t, xpromo.AppStatusSuspended, a.status(app))
		}

		// An operator suspends it for fraud: its very next fill is refused,
		// and the review claws back its cleared chain, once, even with two
		// reviews at the same time (two servers).
		a.advance(time.Minute)
		a.expect(200, a.do("POST", "/v1/admin/apps/"+good.id+"/suspend", adminToken, map[string]any{"reason": "fraud"}))
		assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(good))
		var wg sync.WaitGroup
		results := make([]lifecycle.Result, 2)
		errs := make([]error, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = srv.Lifecycle.Review(ctx)
			}()
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		assert.Equal(t, 1, results[0].ClawedBack+results[1].ClawedBack)
		assert.Empty(t, append(results[0].Suspended, results[1].Suspended...))
		assert.Equal(t, lifecycle.Result{}, review())
		goodLines := a.wallet(good)
		assert.Equal(t, []wline{{Type: xpromo.LineClawback, Amount: -earn, Counterparty: adv.id, Chain: linesOf(goodLines, xpromo.LineEarn)[0].Chain}}, linesOf(goodLines, xpromo.LineClawback))
		assert.Zero(t, balance(goodLines))

		// The advertiser: 20 000 topped up, 9 installs held: 4 charged and
		// clawed back, 5 refunded by the sweep; the live app was never
		// touched.
		assert.Equal(t, int64(20_000), balance(a.wallet(adv)))
		assert.Equal(t, xpromo.AppStatusLive, a.status(adv))

		// The clawback records are append-only, as the ledger is.
		ex := s.(interface {
			Exec(context.Context, string) error
		})
		for _, stmt := range []string{`UPDATE chain_clawbacks SET reason = 'x'`, `DELETE FROM chain_clawbacks`} {
			assert.Error(t, ex.Exec(ctx, stmt), stmt)
		}

		rep, err := ledger.Verify(ctx, s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}

// refundedChains are the chains the app's chain.state_changed events
// announce as refunded, by reason.
func (a *api) refundedChains(app sdkApp) map[xpromo.ChainReason][]string {
	a.t.Helper()
	page := decode[xpromo.EventPage](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/events?type=chain.state_changed&limit=100", app.key, nil)))
	out := map[xpromo.ChainReason][]string{}
	for _, e := range page.Events {
		var d xpromo.ChainEventData
		require.NoError(a.t, json.Unmarshal(e.Data, &d))
		if d.Chain.State == xpromo.ChainRefunded {
			require.NotNil(a.t, d.Chain.Reason)
			out[*d.Chain.Reason] = append(out[*d.Chain.Reason], d.Chain.ChainID)
		}
	}
	return out
}

// noFill asks a fill for app and returns why it was not filled.
func (a *api) noFill(app sdkApp) xpromo.NoFillReason {
	a.t.Helper()
	fill := decode[xpromo.FillResponse](a.t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(app, xpromo.SlotOnboardingComplete))))
	require.False(a.t, fill.Filled, "%+v", fill)
	require.NotNil(a.t, fill.NoFillReason)
	return *fill.NoFillReason
}

// TestLifecycleClawbackCrash: a review cut short — one clawback committed
// but its answer lost, the next one never committed — is finished by the
// next review, and no chain is clawed back twice (both stores).
func TestLifecycleClawbackCrash(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a, srv := startBuilt(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		ctx := context.Background()
		adv := a.register("Snip", "com.example.snip", "")
		pub := a.register("Farm", "com.example.farm", "productivity")
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"}, "daily_budget_cents": 5000}))
		// The farm earns in credits; it switches back to cash before it is
		// suspended: the clawbacks take back what the clearings paid,
		// in credits (⌊280 × 1.2⌋ = 336 each).
		a.expect(200, a.setEarnMode(pub, "credits"))
		devices := []string{"dev-1", "dev-2", "dev-3", "dev-4"}
		var toks []string
		for _, d := range devices {
			toks = append(toks, a.install(pub, adv, d))
		}
		a.advance(48 * time.Hour)
		for i, d := range devices {
			a.heartbeat(adv, toks[i], d)
		}
		assert.Equal(t, xpromo.SweepResult{Cleared: 4}, a.sweep())
		a.expect(200, a.setEarnMode(pub, "cash"))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+pub.id+"/suspend", adminToken, map[string]any{"reason": "fraud"}))

		// The review's transactions: the 1st commits; the 2nd commits and
		// its answer is lost (the connection died after COMMIT); the 3rd
		// never commits (the process died); the 4th commits.
		crashed := *srv.Lifecycle
		calls := 0
		crashed.Update = func(ctx context.Context, fn func(context.Context, lifecycle.Tx) error) error {
			calls++
			switch calls {
			case 2:
				if err := srv.Lifecycle.Update(ctx, fn); err != nil {
					return err
				}
				return errors.New("connection lost after COMMIT")
			case 3:
				return errors.New("process died before COMMIT")
			}
			return srv.Lifecycle.Update(ctx, fn)
		}
		res, err := crashed.Review(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, res.ClawedBack)
		assert.Equal(t, 2, res.Failed)
		assert.Len(t, linesOf(a.wallet(pub), xpromo.LineClawback), 3, "the lost answer's clawback committed")

		// The next review finishes: only the chain never clawed back.
		res, err = srv.Lifecycle.Review(ctx)
		require.NoError(t, err)
		assert.Equal(t, lifecycle.Result{ClawedBack: 1, Refunded: 400}, res)
		res, err = srv.Lifecycle.Review(ctx)
		require.NoError(t, err)
		assert.Equal(t, lifecycle.Result{}, res)

		pubLines := a.wallet(pub)
		claws := linesOf(pubLines, xpromo.LineClawback)
		require.Len(t, claws, 4)
		chains := map[string]bool{}
		for _, l := range claws {
			chains[l.Chain] = true
			assert.Equal(t, int64(-336), l.Amount)
		}
		assert.Len(t, chains, 4, "each chain once")
		assert.Zero(t, balance(pubLines))
		assert.Len(t, a.clawbackEvents(adv), 4)
		assert.Equal(t, int64(20_000), balance(a.wallet(adv)))
		rep, err := ledger.Verify(ctx, s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}

func sortedByChain(ls []wline) []wline {
	slices.SortFunc(ls, func(x, y wline) int {
		switch {
		case x.Chain < y.Chain:
			return -1
		case x.Chain > y.Chain:
			return 1
		}
		return 0
	})
	return ls
}

// TestSweepRefundsSuspendedPublisher: the sweep never pays a publisher
// suspended for fraud. Its activated chains are refunded to the advertiser
// (refunded, publisher_suspended) in the sweep's one transaction, so there
// is nothing for the review to claw back; a sweep whose answer was lost
// after its commit, run again, changes nothing. A publisher suspended for
// another reason is still paid (both stores).
func TestSweepRefundsSuspendedPublisher(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a, srv := startBuilt(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		ctx := context.Background()
		const price = int64(400)
		adv := a.register("Snip", "com.example.snip", "")
		farm := a.register("Farm", "com.example.farm", "productivity")
		other := a.register("Other", "com.example.other", "productivity")
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"}, "daily_budget_cents": 5000}))
		tok1 := a.install(farm, adv, "dev-1")
		tok2 := a.install(farm, adv, "dev-2")
		tok3 := a.install(other, adv, "dev-3")
		a.advance(48 * time.Hour)
		a.heartbeat(adv, tok1, "dev-1")
		a.heartbeat(adv, tok2, "dev-2")
		a.heartbeat(adv, tok3, "dev-3")
		a.expect(200, a.do("POST", "/v1/admin/apps/"+farm.id+"/suspend", adminToken, map[string]any{"reason": "fraud"}))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+other.id+"/suspend", adminToken, map[string]any{"reason": "unpaid invoices"}))

		// The sweep commits, and its answer is lost.
		crashed := &attribution.Service{
			View: srv.Attribution.View, Now: srv.Attribution.Now, Auction: srv.Attribution.Auction,
			Update: func(ctx context.Context, fn func(context.Context, attribution.Tx) error) error {
				if err := srv.Attribution.Update(ctx, fn); err != nil {
					return err
				}
				return errors.New("connection lost after COMMIT")
			},
		}
		_, err := crashed.Sweep(ctx)
		require.Error(t, err)
		// Run again: nothing is due any more.
		assert.Equal(t, xpromo.SweepResult{}, a.sweep())

		refunded := a.refundedChains(farm)
		assert.Len(t, refunded[xpromo.PublisherSuspended], 2, "%v", refunded)
		for _, id := range refunded[xpromo.PublisherSuspended] {
			ch := decode[xpromo.Chain](t, a.expect(200, a.do("GET", "/v1/chains/"+id, adv.key, nil)))
			assert.Equal(t, xpromo.ChainRefunded, ch.State)
			require.NotNil(t, ch.Reason)
			assert.Equal(t, xpromo.PublisherSuspended, *ch.Reason)
		}
		assert.Empty(t, a.wallet(farm), "the farm was never paid")
		assert.Equal(t, []wline{{Type: xpromo.LineEarn, Amount: price - price*30/100, Counterparty: adv.id}}, clearChain(linesOf(a.wallet(other), xpromo.LineEarn)),
			"a suspension that is not for fraud does not stop the clearing")
		advLines := a.wallet(adv)
		assert.Len(t, linesOf(advLines, xpromo.LineEscrowRelease), 3, "two refunds, one clearing")
		assert.Len(t, linesOf(advLines, xpromo.LineCharge), 1)
		assert.Equal(t, 20_000-price, balance(advLines))
		// The farm's refunds do not lower the advertiser's retention: one
		// charged of one resolved, the two publisher_suspended left out.
		st := decode[xpromo.Stats](t, a.expect(200, a.do("GET", "/v1/apps/"+adv.id+"/stats", adv.key, nil)))
		assert.Equal(t, []any{int64(3), int64(1), 1.0}, []any{st.Installs, st.Cleared, st.Retention48h})

		// Nothing cleared for the farm: the review has nothing to claw back.
		res, err := srv.Lifecycle.Review(ctx)
		require.NoError(t, err)
		assert.Equal(t, lifecycle.Result{}, res)
		assert.Equal(t, xpromo.SweepResult{}, a.sweep())
		assert.Len(t, a.wallet(adv), len(advLines))

		rep, err := ledger.Verify(ctx, s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}

// TestAdminSuspendStopsFillsAtOnce: an operator's suspend is seen by this
// instance's fills and delivery at once, as the review's is — the very next
// fill for the app is publisher_not_eligible and its campaign is no longer
// delivered — and a reinstatement brings both back at once; with an
// Idempotency-Key (the request commits as one unit) too (both stores).
func TestAdminSuspendStopsFillsAtOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a, _ := startBuilt(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		adv := a.register("Snip", "com.example.snip", "productivity")
		pub := a.register("Clipboard", "com.example.clipboard", "productivity")
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"}, "daily_budget_cents": 5000}))
		// Warm the caches: the app's record and delivery.
		assert.Equal(t, xpromo.NoFillNoCampaign, a.noFill(adv), "its own campaign is not offered to it")
		fill := decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
		require.True(t, fill.Filled, "%+v", fill)

		for i, key := range []string{"", "snip-1"} {
			header := func(action string) []string {
				if key == "" {
					return nil
				}
				return []string{"Idempotency-Key", action + "-" + key}
			}
			a.expect(200, a.do("POST", "/v1/admin/apps/"+adv.id+"/suspend", adminToken, map[string]any{"reason": "spam"}, header("suspend")...))
			assert.Equal(t, xpromo.NoFillPublisherNotEligible, a.noFill(adv), "run %d", i)
			assert.Equal(t, xpromo.NoFillNoCampaign, a.noFill(pub), "run %d: the suspended app's campaign is not delivered", i)

			a.expect(200, a.do("POST", "/v1/admin/apps/"+adv.id+"/reinstate", adminToken, nil, header("reinstate")...))
			assert.Equal(t, xpromo.NoFillNoCampaign, a.noFill(adv), "run %d", i)
			fill = decode[xpromo.FillResponse](t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
			assert.True(t, fill.Filled, "run %d: %+v", i, fill)
		}
	})
}

// clearChain drops the chain ids (made at random) of ledger lines.
func clearChain(ls []wline) []wline {
	for i := range ls {
		ls[i].Chain = ""
	}
	return ls
}
