package attribution_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
)

// countersignAny signs an install countersignature for any app, which
// token.Countersign refuses to do for an app that is not the click's aud:
// what a misbehaving SDK would send.
func countersignAny(t *testing.T, kp token.KeyPair, tok, device string, at time.Time, app string) string {
	t.Helper()
	header, err := json.Marshal(token.Header{Alg: token.AlgEd25519, Kid: kp.ID, Typ: token.TypInstall})
	require.NoError(t, err)
	claims, err := json.Marshal(token.InstallClaims{TokenHash: token.TokenHashString(tok), DeviceID: device, ClaimedAt: at.Unix(), AppID: app})
	require.NoError(t, err)
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(kp.Private, []byte(input)))
}

// chainOf is the rejected chain a refusal's message names.
func chainOf(msg string) string {
	_, id, _ := strings.Cut(msg, "(recorded as rejected chain ")
	return strings.TrimSuffix(id, ")")
}

// TestFraudRules shows each fraud code: the claim is refused with it (403),
// and it is counted in the advertiser's Stats.fraud_rejected. A refusal
// before the claim is authenticated leaves the chain claimable; a fraud
// rule on an authenticated claim rejects the chain itself.
func TestFraudRules(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		from := w.now()
		p := w.pair("productivity", 0)
		const price = 400
		fresh := func() string { return w.clickOffer(p, w.offer(p, "productivity", price), residential) }
		wantCounts := map[string]int64{}
		expect := func(code string, err error) {
			t.Helper()
			assertFraud(t, err, code)
			wantCounts[code]++
		}
		// claimAs countersigns tok with kp as app and posts it from ip.
		claimAs := func(tok string, kp token.KeyPair, app, device string, after time.Duration, ip netip.Addr) (attribution.Chain, error) {
			t.Helper()
			w.clock.Advance(after)
			cs := w.countersign(kp, tok, device, w.now(), app)
			ch, _, err := w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: ip})
			return ch, err
		}

		t.Run("fraud_bad_signature", func(t *testing.T) {
			// A key nobody registered.
			stranger := newKey(t)
			_, _, err := w.attr.Click(w.ctx, w.sign(stranger, w.offer(p, "productivity", price), w.now()), residential)
			expect(attribution.FraudBadSignature, err)
			// The advertiser's key signing the publisher's click.
			_, _, err = w.attr.Click(w.ctx, w.sign(p.advKey, w.offer(p, "productivity", price), w.now()), residential)
			expect(attribution.FraudBadSignature, err)
			// An offer whose price was raised after the server sealed it.
			o := w.offer(p, "productivity", price)
			o.PriceCents = 9_999
			_, _, err = w.attr.Click(w.ctx, w.sign(p.pubKey, o, w.now()), residential)
			assertFraud(t, err, attribution.FraudBadSignature) // names no offer of the server: not recorded
			// A token that is not a token.
			_, _, err = w.attr.Click(w.ctx, "eyJhbGciOiJub25lIn0.e30.", residential)
			assertFraud(t, err, attribution.FraudBadSignature)
			// An install claim whose click token was signed by a stranger:
			// refused, and the real chain of that offer stays claimable.
			o = w.offer(p, "productivity", price)
			forged := w.sign(stranger, o, w.now())
			_, err = claimAs(forged, p.advKey, p.adv, "dev-sig", 30*time.Second, residential)
			expect(attribution.FraudBadSignature, err)
			real := w.sign(p.pubKey, o, w.now().Add(-30*time.Second))
			ch, err := claimAs(real, p.advKey, p.adv, "dev-sig", 0, residential)
			require.NoError(t, err)
			assert.Equal(t, attribution.StateInstalled, ch.State)
		})

		t.Run("fraud_bad_countersignature", func(t *testing.T) {
			tok := fresh()
			// Signed by the publisher's key in the advertiser's name.
			_, err := claimAs(tok, p.pubKey, p.adv, "dev-cs", 30*time.Second, residential)
			expect(attribution.FraudBadCountersignature, err)
			first := err.(*apperr.Error).Message
			// A countersignature of another click token, then garbage: refused
			// alike, and answered with the first record of this offer and
			// reason (what a stranger holding a click token can write is one
			// row per reason, not one per request).
			other := fresh()
			cs := w.countersign(p.advKey, other, "dev-cs", w.now(), p.adv)
			_, _, err = w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: residential})
			assertFraud(t, err, attribution.FraudBadCountersignature)
			for range 3 {
				_, _, err = w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: "x.y.z", IP: residential})
				assertFraud(t, err, attribution.FraudBadCountersignature)
				assert.NotEmpty(t, chainOf(first))
				assert.Equal(t, chainOf(first), chainOf(err.(*apperr.Error).Message), "the first record answers")
			}
			// The chain was not burnt: the real claim goes through.
			_, err = claimAs(tok, p.advKey, p.adv, "dev-cs", 0, residential)
			require.NoError(t, err)
		})

		t.Run("fraud_app_mismatch", func(t *testing.T) {
			third := w.app("Third", xpromo.PlatformMac, "")
			thirdKey := w.key(third)
			tok := fresh()
			w.clock.Advance(30 * time.Second)
			cs := countersignAny(t, thirdKey, tok, "dev-mm", w.now(), third)
			_, _, err := w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: residential})
			expect(attribution.FraudAppMismatch, err)
			_, err = claimAs(tok, p.advKey, p.adv, "dev-mm", 0, residential)
			require.NoError(t, err, "the advertiser's own claim still works")
		})

		t.Run("fraud_token_expired", func(t *testing.T) {
			tok := fresh()
			_, err := claimAs(tok, p.advKey, p.adv, "dev-exp", 20*time.Minute, residential)
			expect(attribution.FraudTokenExpired, err)
		})

		t.Run("fraud_token_reused", func(t *testing.T) {
			tok := fresh()
			first, err := claimAs(tok, p.advKey, p.adv, "dev-reuse-1", 30*time.Second, residential)
			require.NoError(t, err)
			_, err = claimAs(tok, p.advKey, p.adv, "dev-reuse-2", time.Second, residential)
			expect(attribution.FraudTokenReused, err)
			assert.Equal(t, attribution.StateInstalled, w.chain(first.ID).State, "the first claim stands")
			// Another token for the same offer (clicked again) is a reuse too.
			o := w.offer(p, "productivity", price)
			w.clickOffer(p, o, residential)
			_, _, err = w.attr.Click(w.ctx, w.sign(p.pubKey, o, w.now().Add(time.Second)), residential)
			expect(attribution.FraudTokenReused, err)
		})

		t.Run("fraud_ctit_too_short", func(t *testing.T) {
			tok := fresh()
			ch, err := claimAs(tok, p.advKey, p.adv, "dev-ctit", 9*time.Second, residential)
			expect(attribution.FraudCTITTooShort, err)
			assert.Empty(t, ch.ID)
			// The authenticated claim consumed the chain: it is rejected, and
			// a later claim of the token is a reuse.
			_, err = claimAs(tok, p.advKey, p.adv, "dev-ctit-2", 30*time.Second, residential)
			expect(attribution.FraudTokenReused, err)
			tok = fresh()
			_, err = claimAs(tok, p.advKey, p.adv, "dev-ctit-3", 10*time.Second, residential)
			require.NoError(t, err, "10 seconds is enough")
		})

		t.Run("fraud_datacenter_asn", func(t *testing.T) {
			for i, ip := range []string{"203.0.113.9", "3.5.140.2", "2001:db8:1::7", "192.0.2.200"} {
				_, err := claimAs(fresh(), p.advKey, p.adv, "dev-dc-"+string(rune('a'+i)), 30*time.Second, netip.MustParseAddr(ip))
				expect(attribution.FraudDatacenterASN, err)
			}
			// A click reported from a datacenter taints its install.
			tok := w.clickOffer(p, w.offer(p, "productivity", price), netip.MustParseAddr("203.0.113.50"))
			_, err := claimAs(tok, p.advKey, p.adv, "dev-dc-e", 30*time.Second, residential)
			expect(attribution.FraudDatacenterASN, err)
			// Broadband outside the cloud range is fine.
			_, err = claimAs(fresh(), p.advKey, p.adv, "dev-dc-f", 30*time.Second, netip.MustParseAddr("192.0.2.10"))
			require.NoError(t, err)
		})

		t.Run("fraud_device_reused", func(t *testing.T) {
			_, err := claimAs(fresh(), p.advKey, p.adv, "dev-twice", 30*time.Second, residential)
			require.NoError(t, err)
			_, err = claimAs(fresh(), p.advKey, p.adv, "dev-twice", 30*time.Second, residential)
			expect(attribution.FraudDeviceReused, err)
		})

		t.Run("fraud_install_velocity", func(t *testing.T) {
			// One device, three advertisers within 24 hours: the third is
			// over the limit of 3 (this device already has none).
			var pairs []pair
			for range 4 {
				pairs = append(pairs, w.pair("games", 0))
			}
			for i, q := range pairs {
				tok := w.clickOffer(q, w.offer(q, "games", 200), residential)
				_, err := claimAs(tok, q.advKey, q.adv, "dev-busy", 30*time.Second, residential)
				if i < attribution.DefaultDeviceInstalls {
					require.NoError(t, err, "install %d", i+1)
				} else {
					assertFraud(t, err, attribution.FraudInstallVelocity)
				}
			}
			// One address, many devices: past the limit of 20 per hour.
			w.clock.Advance(2 * time.Hour)
			ip := netip.MustParseAddr("81.2.69.160")
			for i := range attribution.DefaultIPInstalls + 1 {
				_, err := claimAs(fresh(), p.advKey, p.adv, "dev-ip-"+strings.Repeat("x", i+1), 11*time.Second, ip)
				if i < attribution.DefaultIPInstalls {
					require.NoError(t, err, "install %d", i+1)
				} else {
					expect(attribution.FraudInstallVelocity, err)
				}
			}
		})

		t.Run("fraud_self_promotion", func(t *testing.T) {
			// Two registrations of one bundle id.
			pub := w.appWithBundle("Twin", xpromo.PlatformMac, "utilities", "com.example.twin")
			adv := w.appWithBundle("Twin", xpromo.PlatformMac, "", "com.example.twin")
			q := pair{pub: pub, adv: adv, pubKey: w.key(pub), advKey: w.key(adv)}
			w.topUp(adv, 10_000)
			q.campaign = w.campaign(adv, "utilities", 5_000, 0)
			tok := w.clickOffer(q, w.offer(q, "utilities", 300), residential)
			_, err := claimAs(tok, q.advKey, q.adv, "dev-twin", 30*time.Second, residential)
			assertFraud(t, err, attribution.FraudSelfPromotion)
			// An app promoting itself (an offer the auction never makes, sealed
			// by the server's key here).
			self := pair{pub: p.adv, adv: p.adv, pubKey: p.advKey, advKey: p.advKey, campaign: p.campaign}
			tok = w.clickOffer(self, w.offer(self, "productivity", price), residential)
			_, err = claimAs(tok, p.advKey, p.adv, "dev-self", 30*time.Second, residential)
			expect(attribution.FraudSelfPromotion, err)
		})

		// Each code is counted for the advertiser; the refusals whose offer
		// did not verify are not attributed to it.
		st, err := w.attr.AppStats(w.ctx, p.adv, from, w.now())
		require.NoError(t, err)
		for _, code := range attribution.FraudCodes {
			assert.Equal(t, wantCounts[code], st.FraudRejected[code], code)
			assert.NotZero(t, st.FraudRejected[code], "every code is shown: %s", code)
		}

		// Each recorded refusal told the advertiser with fraud.flagged, in
		// the transaction of its chain.rejected: one of each per chain.
		flagged, rejected, flaggedChains := map[string]int64{}, map[string]bool{}, map[string]int{}
		for _, e := range w.outbox(p.adv) {
			switch e.Type {
			case xpromo.EventChainRejected:
				var d xpromo.ChainEventData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				rejected[d.Chain.ChainID] = true
			case xpromo.EventFraudFlagged:
				var d xpromo.FraudEventData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				require.NotNil(t, d.Chain.Reason)
				assert.Equal(t, d.Reason, *d.Chain.Reason)
				assert.Equal(t, xpromo.ChainRejected, d.Chain.State)
				flagged[string(d.Reason)]++
				flaggedChains[d.Chain.ChainID]++
			}
		}
		for id, n := range flaggedChains {
			assert.Equal(t, 1, n, "chain %s flagged once", id)
			assert.True(t, rejected[id], "chain %s flagged and rejected", id)
		}
		assert.Equal(t, wantCounts, flagged, "fraud.flagged by reason")
		w.verify()
	})
}

// TestPaymentRejections: an install the campaign's budget or the
// advertiser's wallet cannot take rejects the chain with budget_exhausted
// or insufficient_funds (409), which are not fraud.
func TestPaymentRejections(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		low := w.campaign(p.adv, "productivity", 1000, 0)
		q := p
		q.campaign = low
		// 1000 cents a day at 400 each: two installs, not three.
		for i := range 3 {
			tok := w.clickOffer(q, w.offer(q, "productivity", 400), residential)
			ch, err := w.claim(q, tok, "dev-budget-"+string(rune('a'+i)), 30*time.Second, residential)
			if i < 2 {
				require.NoError(t, err)
				continue
			}
			require.Error(t, err)
			assert.Equal(t, apperr.BudgetExhausted, apperr.Code(err))
			assert.Equal(t, 409, apperr.HTTPStatus(err))
			assert.Empty(t, ch.ID)
		}
		// The next UTC day has a fresh budget.
		w.clock.Advance(24 * time.Hour)
		tok := w.clickOffer(q, w.offer(q, "productivity", 400), residential)
		_, err := w.claim(q, tok, "dev-budget-d", 30*time.Second, residential)
		require.NoError(t, err)

		// A wallet that cannot cover the price.
		poor := w.app("Poor", xpromo.PlatformMac, "")
		r := pair{pub: p.pub, adv: poor, pubKey: p.pubKey, advKey: w.key(poor)}
		w.topUp(poor, 5_000)
		r.campaign = w.campaign(poor, "productivity", 100_000, 0)
		tok = w.clickOffer(r, w.offer(r, "productivity", 6_000), residential)
		_, err = w.claim(r, tok, "dev-poor", 30*time.Second, residential)
		assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err))
		assert.Equal(t, []ledger.LineType{ledger.TypeTopup}, types(w.wallet(poor)), "nothing was held")

		st, err := w.attr.AppStats(w.ctx, p.adv, time.Time{}, w.now())
		require.NoError(t, err)
		assert.Empty(t, st.FraudRejected, "payment rejections are not fraud")
		for _, app := range []string{p.pub, p.adv, poor} {
			k := kinds(w.outbox(app))
			assert.NotZero(t, k[xpromo.EventChainRejected], app)
			assert.Zero(t, k[xpromo.EventFraudFlagged], "payment rejections flag no fraud: %s", app)
		}
		w.verify()
	})
}

func types(ls []ledger.Line) []ledger.LineType {
	out := make([]ledger.LineType, len(ls))
	for i, l := range ls {
		out[i] = l.Type
	}
	return out
}

// TestReplayConcurrent: one click token claimed at once from 50 goroutines
// is accepted exactly once, on both stores; the 49 others are
// fraud_token_reused (distinct countersignatures), or replays of the
// winning claim (the same countersignature), and one escrow hold exists.
func TestReplayConcurrent(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		const n = 50
		for _, same := range []bool{false, true} {
			// The click is not reported: the claims race to create the chain
			// too.
			tok := w.sign(p.pubKey, w.offer(p, "productivity", 400), w.now())
			w.clock.Advance(time.Minute)
			claims := make([]string, n)
			for i := range claims {
				device := "dev-race"
				if !same {
					device += "-" + strings.Repeat("i", i+1)
				}
				claims[i] = w.countersign(p.advKey, tok, device, w.now(), p.adv)
			}
			var wg sync.WaitGroup
			chains := make([]attribution.Chain, n)
			replayed := make([]bool, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					chains[i], replayed[i], errs[i] = w.attr.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: claims[i], IP: residential})
				})
			}
			wg.Wait()
			accepted, reused, replays := 0, 0, 0
			var chainID string
			for i := range n {
				switch {
				case errs[i] == nil && !replayed[i]:
					accepted++
					chainID = chains[i].ID
				case errs[i] == nil:
					replays++
				case apperr.Code(errs[i]) == attribution.FraudTokenReused:
					reused++
				default:
					t.Errorf("claim %d: %v", i, errs[i])
				}
			}
			require.Equal(t, 1, accepted, "same=%v", same)
			if same {
				assert.Equal(t, n-1, replays)
				for i := range n {
					assert.Equal(t, chainID, chains[i].ID)
				}
			} else {
				assert.Equal(t, n-1, reused)
			}
		}
		holds := 0
		for _, l := range w.wallet(p.adv) {
			if l.Type == ledger.TypeEscrowHold {
				holds++
			}
		}
		assert.Equal(t, 2, holds, "one hold per token")
		w.verify()
	})
}
