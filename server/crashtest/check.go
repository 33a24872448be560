package crashtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Findings is what Check found in the ledgers.
type Findings struct {
	// Lost counts acknowledged operations whose effect is missing, by the
	// kind of operation that owes it.
	Lost map[Kind]int
	// Doubled counts operations whose effect is in the ledger more than
	// once.
	Doubled map[Kind]int
	// Unexplained counts wallet lines that no acknowledged operation
	// explains: lines naming nothing the harness did, and lines of
	// operations that were refused.
	Unexplained int
	// Problems says what is wrong, one line each.
	Problems []string
}

// OK reports no finding.
func (f Findings) OK() bool {
	return f.Unexplained == 0 && sum(f.Lost) == 0 && sum(f.Doubled) == 0
}

func sum(m map[Kind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// effect names what a wallet line is the effect of: its type, its wallet
// and the id that ties it to one operation.
type effect struct {
	typ xpromo.LineType
	app string
	id  string
}

// checkoutNotePrefix starts the note of a test checkout's topup line:
// "checkout <session id>".
const checkoutNotePrefix = "checkout "

// A payout's wallet lines (docs/payments.md): the reservation, "payout
// <payout id>" (−amount), and, when the transfer was refused, its return,
// "payout <payout id> returned: <why>" (+amount).
const (
	payoutNotePrefix = "payout "
	payoutReturned   = " returned: "
)

// linePayoutReturn is the effect type of a payout's return line (a payout
// line too, told apart by its note).
const linePayoutReturn xpromo.LineType = "payout(returned)"

// effectOf identifies a line of app's wallet: a topup by its checkout
// session (in the note), an adjustment by its note (unique per operation),
// escrow, charge and earn lines by their chain, a payout's reservation
// and return by its payout id (the note). ok is false for a line that
// names none of these.
func effectOf(app string, l xpromo.LedgerLine) (e effect, ok bool) {
	e = effect{typ: l.Type, app: app}
	note, chain := deref(l.Note), deref(l.EventChainID)
	switch l.Type {
	case xpromo.LineTopup:
		e.id, ok = strings.CutPrefix(note, checkoutNotePrefix)
	case xpromo.LineAdjustment:
		// An adjustment with a chain is a clawback's refund: the harness
		// makes none.
		e.id, ok = note, note != "" && chain == ""
	case xpromo.LineEscrowHold, xpromo.LineEscrowRelease, xpromo.LineCharge, xpromo.LineEarn:
		e.id, ok = chain, chain != ""
	case xpromo.LinePayout:
		e.id, ok = strings.CutPrefix(note, payoutNotePrefix)
		if id, _, returned := strings.Cut(e.id, payoutReturned); returned {
			e.typ, e.id = linePayoutReturn, id
		}
	}
	return e, ok
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Check matches the wallets' lines (ledgers, by app id, every line of
// every app the run created) with the operations the run issued, once
// every chain is settled (the run ends past every chain's 72-hour window,
// swept):
//
//   - an acknowledged operation's effect is there exactly once: a top-up's
//     topup line, an adjustment's line (its note, its amount), a claim's
//     escrow_hold, a payout's reservation line (its payout id, its amount)
//     and no return of it;
//   - each acknowledged claim's chain is settled once: one escrow_release,
//     and one charge and one earn exactly when a heartbeat activated it;
//   - a refused operation has no effect; an unresolved one at most one;
//   - a payout reserved and returned (its transfer refused) nets zero and
//     explains itself: both lines, once each, of one payout id;
//   - every other line is unexplained.
func Check(ops []*Op, ledgers map[string][]xpromo.LedgerLine) Findings {
	c := checker{
		f:         Findings{Lost: map[Kind]int{}, Doubled: map[Kind]int{}},
		lines:     map[effect][]xpromo.LedgerLine{},
		explained: map[effect]bool{},
	}
	apps := make([]string, 0, len(ledgers))
	for app := range ledgers {
		apps = append(apps, app)
	}
	slices.Sort(apps)
	for _, app := range apps {
		for _, l := range ledgers[app] {
			e, ok := effectOf(app, l)
			if !ok {
				c.unexplained(app, l, "it names no operation of the run")
				continue
			}
			c.lines[e] = append(c.lines[e], l)
		}
	}

	heartbeats := map[string]*Op{} // by chain
	for _, op := range ops {
		if op.Kind == KindHeartbeat {
			heartbeats[op.Chain] = op
		}
	}
	unresolvedPayouts := map[string]int{}   // by app
	refusedPayouts := map[string][]string{} // by app: a lost answer's retry may have been refused
	for _, op := range ops {
		switch op.Kind {
		case KindTopUp:
			if op.Session != "" { // else no session was ever answered: nothing to find
				c.judge(op, []effect{{xpromo.LineTopup, op.App, op.Session}}, want(op), KindTopUp, KindTopUp, 0)
			}
		case KindAdjustment:
			c.judge(op, []effect{{xpromo.LineAdjustment, op.App, op.Note}}, want(op), KindAdjustment, KindAdjustment, op.Amount)
		case KindClaim:
			if op.Chain == "" {
				continue // refused or unresolved before any answer named its chain
			}
			c.judge(op, []effect{{xpromo.LineEscrowHold, op.App, op.Chain}}, want(op), KindClaim, KindClaim, 0)
			if op.Outcome == Acknowledged {
				c.settlement(op, heartbeats[op.Chain])
			}
		case KindPayout:
			switch op.Outcome {
			case Acknowledged:
				c.judge(op, []effect{{xpromo.LinePayout, op.App, op.Payout}}, 1, KindPayout, KindPayout, -op.Amount)
				c.judge(op, []effect{{linePayoutReturn, op.App, op.Payout}}, 0, KindPayout, KindPayout, 0)
			case Unresolved:
				unresolvedPayouts[op.App]++
			case Refused:
				refusedPayouts[op.App] = append(refusedPayouts[op.App], fmt.Sprintf("#%d %s", op.Seq, op.Code))
			}
		}
	}

	// A payout reserved and returned once each nets zero: explained.
	for e := range c.lines {
		if e.typ != linePayoutReturn || c.explained[e] {
			continue
		}
		reserve := effect{xpromo.LinePayout, e.app, e.id}
		if len(c.lines[e]) == 1 && len(c.lines[reserve]) == 1 && !c.explained[reserve] &&
			c.lines[e][0].AmountCents == -c.lines[reserve][0].AmountCents {
			c.explained[e], c.explained[reserve] = true, true
		}
	}

	// What is left is unexplained, except a payout line of an app with an
	// unresolved payout: it may be that payout's (which is reported as
	// unresolved already).
	left := make([]effect, 0)
	for e := range c.lines {
		if !c.explained[e] {
			left = append(left, e)
		}
	}
	slices.SortFunc(left, func(a, b effect) int {
		return strings.Compare(a.app+string(a.typ)+a.id, b.app+string(b.typ)+b.id)
	})
	for _, e := range left {
		for _, l := range c.lines[e] {
			if e.typ == xpromo.LinePayout && unresolvedPayouts[e.app] > 0 {
				unresolvedPayouts[e.app]--
				continue
			}
			why := "no operation of the run explains it"
			if e.typ == xpromo.LinePayout && len(refusedPayouts[e.app]) > 0 {
				why += " (payouts of the app answered refusals: " + strings.Join(refusedPayouts[e.app], ", ") + ")"
			}
			c.unexplained(e.app, l, why)
		}
	}
	return c.f
}

// want is how many times an operation's effect must be in the ledger:
// 1 when acknowledged, 0 when refused, -1 (at most once) when unresolved.
func want(op *Op) int {
	switch op.Outcome {
	case Acknowledged:
		return 1
	case Refused:
		return 0
	}
	return -1
}

type checker struct {
	f         Findings
	lines     map[effect][]xpromo.LedgerLine
	explained map[effect]bool
}

func (c *checker) problem(format string, args ...any) {
	c.f.Problems = append(c.f.Problems, fmt.Sprintf(format, args...))
}

func (c *checker) unexplained(app string, l xpromo.LedgerLine, why string) {
	c.f.Unexplained++
	c.problem("unexplained line %s of app %s: %s %+d, chain %q, note %q: %s",
		l.ID, app, l.Type, l.AmountCents, deref(l.EventChainID), deref(l.Note), why)
}

// judge checks that each effect of es is in the ledger as want says (1,
// 0, or -1 for at most once). The operation counts once as lost (blamed
// on lostKind) if any is missing, once as doubled (doubledKind) if any is
// there more than once; each line of an effect that must not be there is
// unexplained. amount, when not 0, is the amount each line must carry.
func (c *checker) judge(op *Op, es []effect, want int, lostKind, doubledKind Kind, amount int64) {
	var lost, doubled bool
	for _, e := range es {
		c.explained[e] = true
		lines := c.lines[e]
		n := len(lines)
		switch {
		case want == 0 && n > 0:
			c.f.Unexplained += n
			why := "refused (" + op.Code + ")"
			if op.Outcome != Refused {
				why = "no heartbeat was answered activated_48h for its chain"
			}
			c.problem("%s: %s, yet %d %s line(s) of %s are in the ledger", op, why, n, e.typ, e.id)
			continue
		case n > 1:
			doubled = true
			c.problem("%s: %s line of %s is in the ledger %d times (%s)", op, e.typ, e.id, n, lineIDs(lines))
		case want == 1 && n == 0:
			lost = true
			c.problem("%s: acknowledged, but no %s line of %s is in the ledger", op, e.typ, e.id)
		}
		if amount != 0 {
			for _, l := range lines {
				if l.AmountCents != amount {
					c.f.Unexplained++
					c.problem("%s: line %s is %+d, not the %+d of the operation", op, l.ID, l.AmountCents, amount)
				}
			}
		}
	}
	if lost {
		c.f.Lost[lostKind]++
	}
	if doubled {
		c.f.Doubled[doubledKind]++
	}
}

// settlement checks an acknowledged claim's chain: released once, and
// charged and earned once exactly when a heartbeat activated it (not at
// all when none did; at most once when the heartbeat is unresolved).
func (c *checker) settlement(claim, hb *Op) {
	activated := isActivated(claim.State) || (hb != nil && hb.Outcome == Acknowledged && isActivated(hb.State))
	cleared := 0
	switch {
	case activated:
		cleared = 1
	case hb != nil && hb.Outcome == Unresolved:
		cleared = -1
	}
	// The settling is the sweeps' (the admin's and the server's own); a
	// missing clearing is the activating heartbeat's effect lost.
	blame := claim
	if hb != nil {
		blame = hb
	}
	c.judge(claim, []effect{{xpromo.LineEscrowRelease, claim.App, claim.Chain}}, 1, KindSweep, KindSweep, 0)
	c.judge(blame, []effect{{xpromo.LineCharge, claim.App, claim.Chain}, {xpromo.LineEarn, claim.Publisher, claim.Chain}},
		cleared, KindHeartbeat, KindSweep, 0)
}

func isActivated(s xpromo.ChainState) bool {
	return s == xpromo.ChainActivated48h || s == xpromo.ChainCleared
}

func lineIDs(ls []xpromo.LedgerLine) string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return strings.Join(ids, ", ")
}
