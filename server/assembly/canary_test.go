package assembly_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// restart builds another server on the store of a, with cfg, its clock
// starting where a's server clock is: the operator changed a setting and
// restarted.
func (a *api) restart(chk *openapitest.Checker, cfg assembly.Config) (*api, *assembly.Server) {
	a.t.Helper()
	b := &api{t: a.t, http: chk.Client(), store: a.store, clock: clocktest.New(a.serverNow())}
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	a.t.Cleanup(ts.Close)
	cfg.BaseURL, cfg.Now, cfg.AdminToken, cfg.Mode = ts.URL, b.clock.Now, adminToken, httpapi.ModeTest
	srv, err := assembly.Build(cfg, a.store)
	require.NoError(a.t, err)
	handler, b.srv, b.url = srv.HTTP, srv.HTTP, ts.URL
	return b, srv
}

// TestCanaryCheck is the canary check end to end (issue 15, docs/apps.md
// "Canary check"), on both stores: with every fill a canary, the real SDK
// (sdk/slots) never shows or clicks one, and its app's canary record
// passes; a click spammer that signs a click for every offer it receives
// (with sdk/attribution directly) clicks canaries, gets the answers of
// ordinary refused tokens, is suspended by the lifecycle review
// (canary_failed, actor fraud) and its cleared earnings are clawed back.
// The ledger verifies.
func TestCanaryCheck(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ctx := context.Background()
		chk := openapitest.New(t)
		const category, price = "productivity", int64(400)
		earn := price - price*30/100

		// Before canaries: the farm earns two cleared installs.
		a, _ := startBuilt(t, chk, s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		adv := a.register("Snip", "com.example.snip", "")
		honest := a.register("Clipboard", "com.example.clipboard", category)
		farm := a.register("Farm", "com.example.farm", category)
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{category}, "daily_budget_cents": 5000}))
		tok1, tok2 := a.install(farm, adv, "dev-1"), a.install(farm, adv, "dev-2")
		a.advance(48 * time.Hour)
		a.heartbeat(adv, tok1, "dev-1")
		a.heartbeat(adv, tok2, "dev-2")
		assert.Equal(t, xpromo.SweepResult{Cleared: 2}, a.sweep())
		require.Equal(t, 2*earn, balance(a.wallet(farm)))
		advBefore := balance(a.wallet(adv))

		// Restarted with --canary-rate 1: every fill is a canary.
		b, srv := a.restart(chk, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000, CanaryRate: 1})
		review := func() lifecycle.Result {
			t.Helper()
			res, err := srv.Lifecycle.Review(ctx)
			require.NoError(t, err)
			return res
		}

		// The honest app's SDK: nothing is ever rendered or clicked.
		dir := t.TempDir()
		agent, err := slots.New(slots.Config{
			BaseURL: b.url, AppID: honest.id, Key: honest.sdk, DataDir: filepath.Join(dir, "data"),
			Platform: xpromo.PlatformMac, InboxDir: "-", DownloadDirs: []string{dir},
			InstalledPath: filepath.Join(dir, "Clipboard.app"), Now: b.serverNow,
		})
		require.NoError(t, err)
		t.Cleanup(func() { agent.Close() })
		rendered := 0
		render := slots.RenderFunc(func(ctx context.Context, ad slots.Ad) (slots.Outcome, error) {
			rendered++
			return slots.Clicked, nil
		})
		const fills = 8
		noFills := 0
		for range fills {
			res, err := agent.Show(ctx, xpromo.SlotSettingsIdle, render)
			require.Error(t, err, "a canary is never shown")
			assert.Nil(t, res.Placement)
			var nf *slots.NoFillError
			if errors.As(err, &nf) {
				assert.Contains(t, []xpromo.NoFillReason{slots.NoFillOfferLapsed, slots.NoFillOfferMismatch}, nf.Reason)
				noFills++
			}
		}
		assert.Zero(t, rendered)
		assert.Equal(t, fills, noFills, "both variants are an ordinary no fill to the app")

		// The farm signs a click for every offer it receives.
		codes := map[string]int{}
		for range fills {
			fill := decode[xpromo.FillResponse](t, b.expect(200, b.do("POST", "/v1/sdk/fill", "", b.fillRequest(farm, xpromo.SlotOnboardingComplete))))
			require.True(t, fill.Filled)
			tok, err := token.SignClick(farm.sdk.Private, farm.sdk.ID, token.NewClickClaims(*fill.Offer, b.serverNow()))
			require.NoError(t, err)
			codes[b.expect(403, b.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok})).code(t)]++
		}
		for code := range codes {
			assert.Contains(t, []string{"fraud_token_expired", "fraud_bad_signature"}, code, "the answers of ordinary refused tokens")
		}
		require.NoError(t, srv.Attribution.FlushFills(ctx))

		// The records: the honest app passes the check, the farm fails it.
		var honestRec, farmRec scoring.Canaries
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
			if honestRec, err = tx.CanaryRecord(ctx, honest.id); err != nil {
				return err
			}
			farmRec, err = tx.CanaryRecord(ctx, farm.id)
			return err
		}))
		assert.Equal(t, scoring.Canaries{Served: fills}, honestRec)
		assert.Equal(t, scoring.Canaries{Served: fills, Clicked: fills}, farmRec)
		bh, _ := scoring.Behavior(scoring.Trade{}, 0, honestRec, scoring.DefaultCanaryMinServed)
		assert.True(t, bh.Canary)
		bf, reasons := scoring.Behavior(scoring.Trade{}, 0, farmRec, scoring.DefaultCanaryMinServed)
		assert.False(t, bf.Canary)
		assert.Contains(t, reasons, scoring.ReasonCanaryFailed)

		// The review suspends the farm for fraud and claws back its
		// cleared chains; the honest app stays.
		res := review()
		assert.Equal(t, []string{farm.id}, res.Suspended)
		assert.Equal(t, 2, res.ClawedBack)
		assert.Equal(t, 2*price, res.Refunded)
		assert.Equal(t, xpromo.AppStatusSuspended, b.status(farm))
		last := b.lastChange(farm)
		assert.Equal(t, []any{xpromo.AppStatusSuspended, lifecycle.ReasonCanaryFailed, "fraud"}, []any{last.To, last.Reason, last.Actor})
		score := decode[xpromo.Score](t, b.expect(200, b.do("GET", "/v1/apps/"+farm.id+"/score", farm.key, nil)))
		assert.Contains(t, score.Reasons, lifecycle.ReasonCanaryFailed)
		assert.Equal(t, xpromo.AppStatusApproved, b.status(honest))
		assert.Zero(t, balance(b.wallet(farm)), "the farm's earnings went back")
		assert.Equal(t, advBefore+2*price, balance(b.wallet(adv)), "the advertiser was refunded")
		assert.Len(t, b.clawbackEvents(farm), 2)
		// Again: nothing more.
		assert.Equal(t, lifecycle.Result{}, review())

		rep, err := ledger.Verify(ctx, s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}
