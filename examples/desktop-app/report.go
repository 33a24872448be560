package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// printReport prints both apps' ledgers and stats, and the chain with its
// two signatures.
func printReport(w io.Writer, res *outcome) {
	names := map[string]string{res.Publisher.ID: res.Publisher.Name, res.Advertiser.ID: res.Advertiser.Name}

	fmt.Fprintf(w, "\n== Ledgers (amounts in euro cents)\n")
	for _, a := range []*app{res.Advertiser, res.Publisher} {
		fmt.Fprintf(w, "\n%s, the %s (%s):\n", a.Name, a.Role, a.ID)
		rows := [][]string{{"type", "amount", "balance_after", "counterparty", "chain"}}
		for _, l := range a.Ledger {
			cp, chain := "-", "-"
			if l.CounterpartyAppID != nil {
				cp = *l.CounterpartyAppID
				if name, ok := names[cp]; ok {
					cp = name + " " + cp
				}
			}
			if l.EventChainID != nil {
				chain = *l.EventChainID
			}
			rows = append(rows, []string{string(l.Type), fmt.Sprintf("%+d", l.AmountCents), fmt.Sprint(l.BalanceAfter), cp, chain})
		}
		printTable(w, rows, "lrrll")
	}

	if res.Webhooks != nil {
		fmt.Fprintf(w, "\n== Webhooks the receiver verified and printed, in the order they arrived\n\n")
		rows := [][]string{{"webhook-id", "type", "app", "what"}}
		for _, r := range res.Webhooks {
			rows = append(rows, []string{r.ID, string(r.Event.Type), names[r.Event.AppID], webhookSummary(r)})
		}
		printTable(w, rows, "llll")
	}

	fmt.Fprintf(w, "\n== Stats (an app's stats describe it as an advertiser; a publisher's earnings are in its ledger)\n\n")
	rows := [][]string{{"app", "impressions", "clicks", "installs", "cleared", "retention_48h", "floor_cents", "avg_clearing_price_cents", "fraud_rejected"}}
	for _, a := range []*app{res.Advertiser, res.Publisher} {
		s := a.Stats
		rows = append(rows, []string{a.Name, fmt.Sprint(s.Impressions), fmt.Sprint(s.Clicks), fmt.Sprint(s.Installs), fmt.Sprint(s.Cleared),
			fmt.Sprintf("%.2f", s.Retention48h), fmt.Sprint(s.FloorCents), fmt.Sprint(s.AvgClearingPriceCents), fraudCounts(s.FraudRejected)})
	}
	printTable(w, rows, "lrrrrrrrl")

	c := res.Chain
	fmt.Fprintf(w, "\n== The chain %s: %s\n", c.ChainID, c.State)
	fmt.Fprintf(w, "  %s (%s) showed an ad for %s (%s), campaign %s, price %d cents\n",
		res.Publisher.Name, c.PublisherAppID, res.Advertiser.Name, c.AdvertiserAppID, c.CampaignID, c.PriceCents)
	fmt.Fprintf(w, "  clicked %s, installed %s, activated %s, settled %s\n",
		stamp(&c.ClickedAt), stamp(c.InstalledAt), stamp(c.ActivatedAt), stamp(c.SettledAt))
	click, clickErr := verifyClick(res)
	fmt.Fprintf(w, "  click token, signed by %s's SDK (kid %s): %s\n", res.Publisher.Name, kidOf(click), verdict(clickErr))
	fmt.Fprintf(w, "    %s\n", shortToken(c.ClickToken))
	inst, instErr := verifyInstall(res, click)
	fmt.Fprintf(w, "  install countersignature, signed by %s's SDK (kid %s): %s\n", res.Advertiser.Name, kidOfInstall(inst), verdict(instErr))
	if c.Countersignature != nil {
		fmt.Fprintf(w, "    %s\n", shortToken(*c.Countersignature))
	}
}

// printTable prints rows in columns, indented; align has one letter per
// column, l (left) or r (right).
func printTable(w io.Writer, rows [][]string, align string) {
	widths := make([]int, len(align))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if align[i] == 'r' {
				b.WriteString(pad + c)
			} else if i < len(r)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// check is one assertion on the outcome; Err is nil when it holds.
type check struct {
	Name string
	Err  error
}

// printChecks prints the checks of o and returns how many failed.
func printChecks(w io.Writer, o *outcome, checks []check) int {
	fmt.Fprintf(w, "\n== Checks\n")
	failed := 0
	for _, c := range checks {
		if c.Err != nil {
			failed++
			fmt.Fprintf(w, "  FAIL %s: %v\n", c.Name, c.Err)
			continue
		}
		fmt.Fprintf(w, "  ok   %s\n", c.Name)
	}
	if failed == 0 {
		p := o.Chain.PriceCents
		fmt.Fprintf(w, "\nOne real install, paid 48 hours later: %s charged to %s, %s earned by %s.\n",
			euros(p), o.Advertiser.Name, euros(expectedEarn(p, o.Publisher.EarnMode)), o.Publisher.Name)
	}
	return failed
}

// line is a ledger line as the checks compare it.
type line struct {
	Type         xpromo.LineType
	Amount       int64
	Counterparty string
	Chain        string
}

func (l line) String() string {
	return fmt.Sprintf("%s %+d (counterparty %s, chain %s)", l.Type, l.Amount, l.Counterparty, l.Chain)
}

// linesOfChain returns the lines of ls that belong to chain.
func linesOfChain(ls []xpromo.LedgerLine, chain string) []line {
	var out []line
	for _, l := range ls {
		if l.EventChainID == nil || *l.EventChainID != chain {
			continue
		}
		cp := ""
		if l.CounterpartyAppID != nil {
			cp = *l.CounterpartyAppID
		}
		out = append(out, line{Type: l.Type, Amount: l.AmountCents, Counterparty: cp, Chain: chain})
	}
	return out
}

// expectedEarn is the publisher's earning of a cleared install at price:
// the price less the network's take (30 %, rounded down), times 1.2 when the
// publisher takes credits (decisions §3).
func expectedEarn(price int64, earnMode string) int64 {
	earn := price - price*30/100
	if earnMode == "credits" {
		earn = earn * 12 / 10
	}
	return earn
}

// checkOutcome checks that the story ended with a cleared install and the
// arithmetic of decisions §3 in both ledgers.
func checkOutcome(o *outcome) []check {
	c, pub, adv := o.Chain, o.Publisher, o.Advertiser
	p := c.PriceCents
	earn := expectedEarn(p, pub.EarnMode)
	var checks []check
	add := func(name string, err error) { checks = append(checks, check{Name: name, Err: err}) }

	add("the install is cleared", func() error {
		if c.State != xpromo.ChainCleared {
			return fmt.Errorf("chain %s is %s", c.ChainID, c.State)
		}
		return nil
	}())
	add(fmt.Sprintf("the price P = %d cents is the one the fill locked into the offer", p), func() error {
		if p <= 0 || p != o.OfferPriceCents {
			return fmt.Errorf("the chain's price is %d cents, the offer's %d", p, o.OfferPriceCents)
		}
		return nil
	}())
	add(fmt.Sprintf("advertiser: escrow_hold -P, escrow_release +P, charge -P (%d cents) with the publisher", p),
		sameLines(linesOfChain(adv.Ledger, c.ChainID), []line{
			{xpromo.LineEscrowHold, -p, pub.ID, c.ChainID},
			{xpromo.LineEscrowRelease, p, pub.ID, c.ChainID},
			{xpromo.LineCharge, -p, pub.ID, c.ChainID},
		}))
	earnRule := "P - P×30/100"
	if pub.EarnMode == "credits" {
		earnRule = "(P - P×30/100) × 1.2, in credits"
	}
	add(fmt.Sprintf("publisher: earn +(%s) = %d cents with the advertiser", earnRule, earn),
		sameLines(linesOfChain(pub.Ledger, c.ChainID), []line{{xpromo.LineEarn, earn, adv.ID, c.ChainID}}))
	add(fmt.Sprintf("balances: advertiser %d - %d = %d, publisher %d", o.TopUpCents, p, o.TopUpCents-p, earn), func() error {
		if got := balance(adv.Ledger); got != o.TopUpCents-p {
			return fmt.Errorf("the advertiser's balance is %d", got)
		}
		if got := balance(pub.Ledger); got != earn {
			return fmt.Errorf("the publisher's balance is %d", got)
		}
		return nil
	}())
	click, err := verifyClick(o)
	add("the click token verifies with the publisher's registered SDK key", err)
	_, err = verifyInstall(o, click)
	add("the install countersignature verifies with the advertiser's registered SDK key", err)
	if o.Webhooks != nil {
		add("each app's receiver verified and printed chain.state_changed installed, activated_48h, cleared and chain.cleared, in order, once each", checkWebhooks(o))
	}
	add("the advertiser's stats count the cleared install", func() error {
		s := adv.Stats
		if s == nil || s.Clicks != 1 || s.Installs != 1 || s.Cleared != 1 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	}())
	return checks
}

// sameLines compares ledger lines with the expected ones.
func sameLines(got, want []line) error {
	if slices.Equal(got, want) {
		return nil
	}
	var b strings.Builder
	b.WriteString("got")
	for _, l := range got {
		b.WriteString("\n         " + l.String())
	}
	b.WriteString("\n       want")
	for _, l := range want {
		b.WriteString("\n         " + l.String())
	}
	return fmt.Errorf("%s", b.String())
}

func balance(ls []xpromo.LedgerLine) int64 {
	if len(ls) == 0 {
		return 0
	}
	return ls[len(ls)-1].BalanceAfter
}

// verifyClick parses the chain's click token and verifies it with the
// publisher's SDK key as registered with the server.
func verifyClick(o *outcome) (*attribution.Click, error) {
	pub, err := attribution.ParsePublicKey(o.Publisher.Registered.PublicKey)
	if err != nil {
		return nil, err
	}
	c, err := attribution.ParseClick(o.Chain.ClickToken)
	if err != nil {
		return nil, err
	}
	return c, c.Verify(pub)
}

// verifyInstall verifies the chain's countersignature with the
// advertiser's registered SDK key, bound to click.
func verifyInstall(o *outcome, click *attribution.Click) (*attribution.Install, error) {
	if o.Chain.Countersignature == nil {
		return nil, fmt.Errorf("chain %s has no countersignature", o.Chain.ChainID)
	}
	if click == nil {
		return nil, fmt.Errorf("no click token to bind the countersignature to")
	}
	adv, err := attribution.ParsePublicKey(o.Advertiser.Registered.PublicKey)
	if err != nil {
		return nil, err
	}
	in, err := attribution.ParseInstall(*o.Chain.Countersignature)
	if err != nil {
		return nil, err
	}
	return in, in.Verify(adv, click)
}

func kidOf(c *attribution.Click) string {
	if c == nil {
		return "?"
	}
	return c.Header.Kid
}

func kidOfInstall(in *attribution.Install) string {
	if in == nil {
		return "?"
	}
	return in.Header.Kid
}

func verdict(err error) string {
	if err != nil {
		return "DOES NOT VERIFY: " + err.Error()
	}
	return "verifies"
}

func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("Jan 2 15:04:05")
}

// shortToken shows a compact JWS's three parts, shortened.
func shortToken(tok string) string {
	parts := strings.Split(tok, ".")
	for i, p := range parts {
		if len(p) > 24 {
			parts[i] = p[:24] + "…"
		}
	}
	return strings.Join(parts, ".") + fmt.Sprintf("  (%d characters)", len(tok))
}

func fraudCounts(m map[string]int64) string {
	if len(m) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
