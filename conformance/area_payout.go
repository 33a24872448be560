package conformance

import (
	"net/http"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Payout: transfers of the withdrawable balance; its 409 codes (seed-api
// "POST /apps/{app_id}/payout"; decisions §3, §7).
func payoutChecks() []Check {
	return []Check{
		{"nothing withdrawable answers 409 below_minimum", checkPayoutNothing},
		{"top-ups are not withdrawable", checkPayoutTopUpsNotWithdrawable},
		{"cleared cash earnings are paid out, once", checkPayoutOfEarnings},
		{"a suspended app cannot withdraw: 409 payout_not_allowed", checkPayoutSuspended},
	}
}

// checkPayoutSuspended: the app's status is checked before its balance,
// so a suspended app is refused whatever it holds, and nothing moves.
func checkPayoutSuspended(c *C) {
	admin := c.Admin()
	a := fundedApp(c, 20000)
	_, err := admin.AdminApproveApp(c.Ctx(), a.ID, "conformance")
	c.NoError(err, "approving the app")
	_, err = admin.AdminSuspendApp(c.Ctx(), a.ID, "conformance")
	c.NoError(err, "suspending the app")
	_, err = a.Client.RequestPayout(c.Ctx(), a.ID)
	c.ExpectError(err, http.StatusConflict, "payout_not_allowed", "payout of a suspended app")
	checkErrorBody(c, c.Last())
	if lines := c.Lines(a, nil); len(lines) != 1 {
		c.Errorf("a refused payout changed the ledger: %+v", lines)
	}
}

func checkPayoutNothing(c *C) {
	a := c.NewApp()
	_, err := a.Client.RequestPayout(c.Ctx(), a.ID)
	c.ExpectError(err, http.StatusConflict, "below_minimum", "payout of an empty wallet")
	checkErrorBody(c, c.Last())
}

func checkPayoutTopUpsNotWithdrawable(c *C) {
	a := fundedApp(c, 20000)
	_, err := a.Client.RequestPayout(c.Ctx(), a.ID)
	c.ExpectError(err, http.StatusConflict, "below_minimum", "payout of a wallet holding only a top-up of 20000")
	lines := c.Lines(a, nil)
	if len(lines) != 1 || lines[len(lines)-1].BalanceAfter != 20000 {
		c.Errorf("a refused payout changed the ledger: %+v", lines)
	}
}

// checkPayoutOfEarnings earns a publisher at least EUR 50 of cleared
// installs through the attribution protocol, in the category with the
// highest floor, buying from as many advertisers as their daily delivery
// caps need, then pays it out.
func checkPayoutOfEarnings(c *C) {
	c.Advance(2 * time.Hour) // fresh velocity windows
	rc := rateCard(c)
	key := rc.Categories[0].Key
	for _, cat := range rc.Categories {
		if cat.FloorCentsMax > category(c, key).FloorCentsMax {
			key = cat.Key
		}
	}
	const maxInstalls = 40
	m := c.NewMarket(key, 10000)
	advs := []*SDKApp{m.Adv}
	var installs []*Install
	var earned int64
	for earned < xpromo.MinPayoutCents {
		if len(installs) == maxInstalls {
			c.Skipf("%d cleared installs in %q earn only %d cents; the floors are too low to reach a payout", maxInstalls, key, earned)
		}
		if len(installs) > 0 && len(installs)%15 == 0 {
			c.Advance(61 * time.Minute) // the per-address install velocity window
		}
		fill, adv, last := c.TryFillFor(m.Pub, advs...)
		if fill == nil {
			if last.Filled {
				c.Fatalf("the publisher's fills went to another party's campaign")
			}
			// The advertisers reached their daily caps: one more.
			advs = append(advs, c.NewAdvertiser(key, 10000, nil))
			if len(advs) > 10 {
				c.Fatalf("10 advertisers get no fill (%v)", last.NoFillReason)
			}
			continue
		}
		in := c.InstallOffer(m.Pub, adv, fill)
		installs = append(installs, in)
		earned += earnOf(in.Offer.PriceCents)
	}
	c.Logf("%d installs in %q from %d advertisers earn %d cents", len(installs), key, len(advs), earned)
	at := c.Advance(48 * time.Hour)
	for _, in := range installs {
		hb, err := c.Heartbeat(in.Adv, in.Token, in.Device, 1, at)
		c.NoError(err, "heartbeat")
		if hb.State != xpromo.ChainActivated48h && hb.State != xpromo.ChainCleared {
			c.Fatalf("a heartbeat 48 hours after the install: %s", hb.State)
		}
	}
	c.Sweep()
	var earnLines int64
	for _, l := range c.Lines(m.Pub.App, nil) {
		if l.Type == xpromo.LineEarn {
			earnLines += l.AmountCents
		}
	}
	if earnLines != earned {
		c.Fatalf("the publisher's earn lines sum to %d, want %d for %d cleared installs", earnLines, earned, len(installs))
	}
	ctx := c.Ctx()
	p, err := m.Pub.Client.RequestPayout(ctx, m.Pub.ID)
	c.NoError(err, "payout of the cleared earnings")
	if p.AmountCents != earned || p.TransferID == "" {
		c.Errorf("payout answered %+v, want %d cents with a transfer id", p, earned)
	}
	lines := c.Lines(m.Pub.App, nil)
	last := lines[len(lines)-1]
	if last.Type != xpromo.LinePayout || last.AmountCents != -earned || last.BalanceAfter != 0 {
		c.Errorf("the publisher's last line is %+v, want payout of -%d to a balance of 0", last, earned)
	}
	_, err = m.Pub.Client.RequestPayout(ctx, m.Pub.ID)
	c.ExpectError(err, http.StatusConflict, "below_minimum", "a second payout")
}
