package conformance

import (
	"net/http"
)

// Payout: transfers of the withdrawable balance; its 409 codes (seed-api
// "POST /apps/{app_id}/payout"; decisions §3, §7).
func payoutChecks() []Check {
	return []Check{
		{"nothing withdrawable answers 409 below_minimum", checkPayoutNothing},
		{"top-ups are not withdrawable", checkPayoutTopUpsNotWithdrawable},
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
