package assembly_test

import (
	"context"
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

// install plays a paid install up to the claim: the publisher's slot is
// filled, the user clicks, and a minute later the advertiser's SDK claims
// the install from device. It returns the click token (for heartbeats).
func (a *api) install(pub, adv sdkApp, device string) string {
	a.t.Helper()
	fill := decode[xpromo.FillResponse](a.t, a.expect(200, a.do("POST", "/v1/sdk/fill", "", a.fillRequest(pub, xpromo.SlotOnboardingComplete))))
	require.True(a.t, fill.Filled, "%+v", fill)
	tok, err := token.SignClick(pub.sdk.Private, pub.sdk.ID, token.NewClickClaims(*fill.Offer, a.serverNow()))
	require.NoError(a.t, err)
	a.expect(200, a.do("POST", "/v1/sdk/click", "", xpromo.ClickRequest{Token: tok}))
	a.advance(time.Minute)
	cs, err := token.Countersign(adv.sdk.Private, adv.sdk.ID, tok, device, a.serverNow(), adv.id)
	require.NoError(a.t, err)
	inst := decode[xpromo.InstallResponse](a.t, a.expect(200, a.do("POST", "/v1/sdk/install", "", xpromo.InstallRequest{Token: tok, Countersignature: cs})))
	require.Equal(a.t, xpromo.ChainInstalled, inst.State)
	return tok
}

// heartbeat sends the advertiser's heartbeat for an install (the chain
// activates when it comes 48 hours or more after the install).
func (a *api) heartbeat(adv sdkApp, tok, device string) {
	a.t.Helper()
	hb, err := token.SignHeartbeat(adv.sdk.Private, adv.sdk.ID, token.HeartbeatClaims{AppID: adv.id, DeviceID: device, TokenHash: token.TokenHashString(tok), Seq: 1, SentAt: a.serverNow().Unix()})
	require.NoError(a.t, err)
	beat := decode[xpromo.HeartbeatResponse](a.t, a.expect(200, a.do("POST", "/v1/sdk/heartbeat", "", xpromo.HeartbeatRequest{Heartbeat: hb})))
	require.Equal(a.t, xpromo.ChainActivated48h, beat.State)
}

func (a *api) earnMode(app sdkApp) xpromo.EarnModeState {
	a.t.Helper()
	return decode[xpromo.EarnModeState](a.t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/earn-mode", app.key, nil)))
}

func (a *api) setEarnMode(app sdkApp, mode string, headers ...string) reply {
	a.t.Helper()
	return a.do("POST", "/v1/apps/"+app.id+"/earn-mode", app.key, map[string]any{"earn_mode": mode}, headers...)
}

// TestEarnMode is decisions §3's earn mode through the HTTP API, on both
// stores: a publisher earns one install in cash, switches to credits while a
// second install waits for its clearing, and that one pays ×1.2 in credits.
// The cash line stays cash, the credits never become withdrawable (a payout
// sees only the cash, before and after switching back), a suspended app
// cannot switch, and the ledger verifies.
func TestEarnMode(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		registered := a.serverNow()
		pub := a.register("EarnPub", "com.example.earnpub", "productivity")
		adv := a.register("EarnAdv", "com.example.earnadv", "")
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"}, "daily_budget_cents": 5000}))
		const price = 400 // productivity's mac floor
		cashEarn := int64(price - price*30/100)
		creditsEarn := int64((price - price*30/100) * 12 / 10)

		// A new app earns in cash, since its registration.
		st := a.earnMode(pub)
		assert.Equal(t, xpromo.EarnModeCash, st.EarnMode)
		assert.Equal(t, pub.id, st.AppID)
		assert.WithinDuration(t, registered, st.EffectiveAt, time.Second)

		// Chain 1 clears in cash.
		tok1 := a.install(pub, adv, "device-1")
		// Chain 2 is installed while the app is in cash mode...
		tok2 := a.install(pub, adv, "device-2")
		a.advance(48 * time.Hour)
		a.heartbeat(adv, tok1, "device-1")
		assert.Equal(t, xpromo.SweepResult{Cleared: 1}, decode[xpromo.SweepResult](t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil))))

		// ...then the app switches to credits, with an Idempotency-Key: the
		// retry replays the answer.
		switchedAt := a.serverNow()
		first := a.expect(200, a.setEarnMode(pub, "credits", "Idempotency-Key", "earn-switch-1"))
		st = decode[xpromo.EarnModeState](t, first)
		assert.Equal(t, xpromo.EarnModeCredits, st.EarnMode)
		assert.True(t, switchedAt.Equal(st.EffectiveAt), "effective_at %v, want the server's clock %v", st.EffectiveAt, switchedAt)
		retry := a.expect(200, a.setEarnMode(pub, "credits", "Idempotency-Key", "earn-switch-1"))
		assert.Equal(t, "true", retry.Header.Get("Idempotent-Replayed"))
		assert.JSONEq(t, string(first.Body), string(retry.Body))
		// Choosing the mode it has changes nothing, not even effective_at.
		a.advance(time.Minute)
		again := decode[xpromo.EarnModeState](t, a.expect(200, a.setEarnMode(pub, "credits")))
		assert.Equal(t, st, again)
		assert.Equal(t, st, a.earnMode(pub))

		// Chain 2 clears now: the mode at clearing time applies, ×1.2.
		a.heartbeat(adv, tok2, "device-2")
		assert.Equal(t, xpromo.SweepResult{Cleared: 1}, decode[xpromo.SweepResult](t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil))))
		lines := wlines(a.wallet(pub))
		require.Len(t, lines, 2)
		assert.Equal(t, xpromo.LineEarn, lines[0].Type)
		assert.Equal(t, cashEarn, lines[0].Amount)
		assert.Equal(t, xpromo.LineEarn, lines[1].Type)
		assert.Equal(t, creditsEarn, lines[1].Amount)
		assert.Equal(t, cashEarn+creditsEarn, lines[1].BalanceAfter)

		// The ledger lines carry the mode they cleared in.
		var modes []ledger.EarnMode
		require.NoError(t, s.Snapshot(context.Background(), func(r ledger.Reader) error {
			ls, err := r.Lines(context.Background(), ledger.Wallet(pub.id), ledger.LineQuery{})
			for _, l := range ls {
				modes = append(modes, l.EarnMode)
			}
			return err
		}))
		assert.Equal(t, []ledger.EarnMode{ledger.EarnCash, ledger.EarnCredits}, modes)

		// Only the cash earnings are withdrawable: a payout sees EUR 2.80 of
		// a 6.16 balance, before and after switching back to cash.
		withdrawable := "the withdrawable balance is EUR 2.80;"
		r := a.expect(409, a.do("POST", "/v1/apps/"+pub.id+"/payout", pub.key, nil))
		assert.Equal(t, "below_minimum", r.code(t))
		assert.Contains(t, string(r.Body), withdrawable)
		a.advance(time.Minute)
		back := decode[xpromo.EarnModeState](t, a.expect(200, a.setEarnMode(pub, "cash")))
		assert.Equal(t, xpromo.EarnModeCash, back.EarnMode)
		assert.True(t, back.EffectiveAt.After(st.EffectiveAt))
		r = a.expect(409, a.do("POST", "/v1/apps/"+pub.id+"/payout", pub.key, nil))
		assert.Contains(t, string(r.Body), withdrawable)

		// Refusals: an unknown mode, another app's path, a suspended app.
		assert.Equal(t, "invalid_earn_mode", a.expect(422, a.setEarnMode(pub, "gold")).code(t))
		assert.Equal(t, "missing_field", a.expect(422, a.do("POST", "/v1/apps/"+pub.id+"/earn-mode", pub.key, map[string]any{})).code(t))
		assert.Equal(t, "not_found", a.expect(404, a.do("GET", "/v1/apps/"+pub.id+"/earn-mode", adv.key, nil)).code(t))
		assert.Equal(t, "not_found", a.expect(404, a.do("POST", "/v1/apps/"+pub.id+"/earn-mode", adv.key, map[string]any{"earn_mode": "credits"})).code(t))
		a.expect(200, a.do("POST", "/v1/admin/apps/"+pub.id+"/suspend", adminToken, map[string]any{"reason": "test"}))
		assert.Equal(t, "earn_mode_not_allowed", a.expect(409, a.setEarnMode(pub, "credits")).code(t))
		assert.Equal(t, back, a.earnMode(pub), "a suspended app still reads its mode")

		rep, err := ledger.Verify(context.Background(), s)
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Violations)
	})
}
