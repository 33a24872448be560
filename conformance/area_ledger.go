package conformance

import (
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Ledger: ordering, running balance, date filters, pagination (seed-api
// "LedgerLine", "GET /apps/{app_id}/ledger"; decisions §3).
func ledgerChecks() []Check {
	return []Check{
		{"a new wallet's ledger is empty", checkLedgerEmpty},
		{"lines come in order with a running balance_after and never change", checkLedgerOrder},
		{"from and to filter by UTC date, to inclusive", checkLedgerDates},
		{"limit and cursor page through the lines", checkLedgerPages},
		{"bad parameters answer 422 with their codes", checkLedgerParams},
	}
}

func checkLedgerEmpty(c *C) {
	a := c.NewApp()
	page, err := a.Client.GetLedger(c.Ctx(), a.ID, nil)
	c.NoError(err, "ledger")
	body := c.Last().JSON(c)
	if lines, ok := body["lines"].([]any); !ok || len(lines) != 0 {
		c.Errorf("a new wallet's ledger: lines %v, want []", body["lines"])
	}
	if page.NextCursor != nil {
		c.Errorf("an empty ledger has a next_cursor %q", *page.NextCursor)
	}
}

// fundedApp is an app whose wallet was topped up with amounts, in order.
func fundedApp(c *C, amounts ...int64) *App {
	c.Helper()
	a := c.NewApp()
	for _, amt := range amounts {
		c.Fund(a, amt)
	}
	return a
}

func checkLedgerOrder(c *C) {
	amounts := []int64{5000, 6100, 7200}
	a := fundedApp(c, amounts...)
	lines := c.Lines(a, nil)
	raw := c.Last().JSON(c)
	if ls, ok := raw["lines"].([]any); ok && len(ls) > 0 {
		if m, ok := ls[0].(map[string]any); ok {
			requireKeys(c, "LedgerLine", m, "id", "ts", "type", "amount_cents", "counterparty_app_id", "event_chain_id", "balance_after", "note")
		}
	}
	if len(lines) != len(amounts) {
		c.Fatalf("after %d paid top-ups the ledger has %d lines, want %d: %+v", len(amounts), len(lines), len(amounts), lines)
	}
	balance := int64(0)
	ids := map[string]bool{}
	for i, l := range lines {
		balance += amounts[i]
		if l.Type != xpromo.LineTopup || l.AmountCents != amounts[i] || l.BalanceAfter != balance {
			c.Errorf("line %d: %s %d, balance_after %d; want topup %d, balance_after %d", i, l.Type, l.AmountCents, l.BalanceAfter, amounts[i], balance)
		}
		if l.ID == "" || ids[l.ID] {
			c.Errorf("line %d: id %q is empty or repeated", i, l.ID)
		}
		ids[l.ID] = true
		if i > 0 && l.Ts.Before(lines[i-1].Ts) {
			c.Errorf("line %d (%s) is earlier than line %d (%s): lines are in ledger order", i, l.Ts, i-1, lines[i-1].Ts)
		}
		if l.CounterpartyAppID != nil || l.EventChainID != nil {
			c.Errorf("a top-up line has counterparty %v, event chain %v; want null", l.CounterpartyAppID, l.EventChainID)
		}
	}
	// Append-only: another top-up appends; the earlier lines are unchanged.
	c.Fund(a, 5500)
	after := c.Lines(a, nil)
	if len(after) != len(lines)+1 || !reflect.DeepEqual(after[:len(lines)], lines) {
		c.Errorf("another top-up changed earlier lines or did not append one:\n  before: %+v\n  after:  %+v", lines, after)
	} else if last := after[len(lines)]; last.BalanceAfter != balance+5500 {
		c.Errorf("the appended line has balance_after %d, want %d", last.BalanceAfter, balance+5500)
	}
}

func checkLedgerDates(c *C) {
	a := fundedApp(c, 5000, 5000)
	lines := c.Lines(a, nil)
	if len(lines) != 2 {
		c.Fatalf("ledger has %d lines, want 2", len(lines))
	}
	first, last := lines[0].Ts.UTC(), lines[1].Ts.UTC()
	day := func(t time.Time) string { return xpromo.DateOf(t) }
	for _, tc := range []struct {
		what     string
		from, to string
		want     int
	}{
		{"from the first line's date", day(first), "", 2},
		{"to the last line's date (inclusive)", "", day(last), 2},
		{"from and to the same day", day(first), day(last), countFrom(lines, first, last)},
		{"from the day after", day(last.AddDate(0, 0, 1)), "", 0},
		{"to the day before", "", day(first.AddDate(0, 0, -1)), 0},
		{"a wide range", day(first.AddDate(0, -1, 0)), day(last.AddDate(0, 1, 0)), 2},
	} {
		got := c.Lines(a, &xpromo.LedgerParams{From: tc.from, To: tc.to})
		if len(got) != tc.want {
			c.Errorf("ledger %s (from=%q to=%q): %d lines, want %d", tc.what, tc.from, tc.to, len(got), tc.want)
		}
	}
}

// countFrom counts lines whose UTC date is within [from's, to's].
func countFrom(lines []xpromo.LedgerLine, from, to time.Time) int {
	n := 0
	for _, l := range lines {
		d := xpromo.DateOf(l.Ts)
		if d >= xpromo.DateOf(from) && d <= xpromo.DateOf(to) {
			n++
		}
	}
	return n
}

func checkLedgerPages(c *C) {
	a := fundedApp(c, 5000, 5100, 5200)
	all := c.Lines(a, nil)
	if len(all) != 3 {
		c.Fatalf("ledger has %d lines, want 3", len(all))
	}
	for _, limit := range []int{1, 2, 3, 1000} {
		var got []xpromo.LedgerLine
		params := &xpromo.LedgerParams{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > 5 {
				c.Fatalf("limit %d: more pages than lines", limit)
			}
			page, err := a.Client.GetLedger(c.Ctx(), a.ID, params)
			c.NoError(err, "ledger page")
			if len(page.Lines) > limit {
				c.Errorf("limit %d: a page of %d lines", limit, len(page.Lines))
			}
			got = append(got, page.Lines...)
			if page.NextCursor == nil {
				break
			}
			if len(page.Lines) == 0 {
				c.Fatalf("limit %d: an empty page with a next_cursor", limit)
			}
			params.Cursor = *page.NextCursor
		}
		if !reflect.DeepEqual(got, all) {
			c.Errorf("limit %d: the pages hold %+v, want %+v", limit, got, all)
		}
	}
	// A full last page: next_cursor only when more lines exist.
	page, err := a.Client.GetLedger(c.Ctx(), a.ID, &xpromo.LedgerParams{Limit: 3})
	c.NoError(err, "ledger, limit 3")
	if page.NextCursor != nil {
		c.Errorf("limit 3 over 3 lines: next_cursor %q, want none", *page.NextCursor)
	}
}

func checkLedgerParams(c *C) {
	a := fundedApp(c, 5000)
	// A cursor issued for another app's ledger.
	other := fundedApp(c, 5000, 5000)
	page, err := other.Client.GetLedger(c.Ctx(), other.ID, &xpromo.LedgerParams{Limit: 1})
	c.NoError(err, "ledger")
	if page.NextCursor == nil {
		c.Fatalf("limit 1 over 2 lines answered no next_cursor")
	}
	othersCursor := *page.NextCursor
	base := "/v1/apps/" + a.ID + "/ledger?"
	for _, tc := range []struct {
		query, code string
	}{
		{"from=2026-02-30", "invalid_date"},
		{"from=20260101", "invalid_date"},
		{"to=yesterday", "invalid_date"},
		{"from=2026-03-02&to=2026-03-01", "invalid_date_range"},
		{"limit=0", "invalid_limit"},
		{"limit=1001", "invalid_limit"},
		{"limit=ten", "invalid_limit"},
		{"cursor=not-a-cursor", "invalid_cursor"},
		{"cursor=" + url.QueryEscape(othersCursor), "invalid_cursor"},
	} {
		err := a.Client.Do(c.Ctx(), http.MethodGet, base+tc.query, nil, nil)
		c.ExpectError(err, 422, tc.code, "GET ledger?"+tc.query)
	}
	_, err = a.Client.GetLedger(c.Ctx(), a.ID, &xpromo.LedgerParams{Limit: 1000})
	c.NoError(err, "limit 1000")
}
