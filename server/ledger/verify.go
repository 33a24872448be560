package ledger

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// Violation is one broken invariant found by Verify.
type Violation struct {
	Check   string // which invariant: zero_sum, sequence, balance_chain, hash_chain, head, operation, overdraft, escrow, line_type, payout_clearing, wallet_totals
	Subject string // the account, operation or hold concerned
	Detail  string
}

func (v Violation) String() string { return fmt.Sprintf("%s %s: %s", v.Check, v.Subject, v.Detail) }

// Report is the outcome of Verify.
type Report struct {
	Accounts, Lines, Operations, Holds int
	Violations                         []Violation
	// BackInTime are the accounts whose lines go back in time: a line dated
	// before the line ahead of it in sequence order. Since migration 00034
	// a posting is never dated before its accounts' last lines
	// (Account.LastAt), so only lines written before it can be out of
	// order. It is not a violation (the money is right, and an append-only
	// ledger cannot re-date them), but a ledger page of such an account
	// from or to a date may omit lines (docs/ledger.md, "Lines written
	// before the time order").
	BackInTime []BackInTime
}

// BackInTime is an account whose lines go back in time: how many lines are
// dated before the line ahead of them, and the first such line.
type BackInTime struct {
	Account   string
	Lines     int
	FirstLine string
	FirstSeq  int64
	At        time.Time // the first such line's time
	PrevAt    time.Time // the time of the line ahead of it, later than At
}

func (b BackInTime) String() string {
	return fmt.Sprintf("%s: %d line(s) dated before the line ahead of them, the first %s (seq %d) at %s after %s",
		b.Account, b.Lines, b.FirstLine, b.FirstSeq, b.At.UTC().Format(time.RFC3339Nano), b.PrevAt.UTC().Format(time.RFC3339Nano))
}

// OK reports whether no invariant was violated.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// totalKey is a wallet total's key: a line type and earn mode.
type totalKey struct {
	typ  LineType
	mode EarnMode
}

// Verify recomputes every invariant of the ledger from its rows:
//   - every operation, and the ledger as a whole, sums to zero;
//   - each account's sequence numbers run 1, 2, 3… without gaps;
//   - each balance_after equals the previous one plus the amount;
//   - each line's hash is sha256(previous hash || line) and links to the previous line;
//   - each account head (balance, seq, hash) equals its last line;
//   - each line belongs to a stored operation, and each operation has lines;
//   - no escrow balance goes below zero, and a wallet only where the line may
//     overdraw: a clawback, or the wallet's adjustment of a processor
//     adjustment (its operation's other line is an adjustment on the
//     processor's side);
//   - wallets carry only the API's line types;
//   - the open holds of each advertiser sum to its escrow balance;
//   - each payout's clearing account holds only `payout` lines: a positive
//     reservation, then at most one line that empties it (settled or
//     returned), never more, never below zero;
//   - each wallet's totals by type and earn mode, which the store keeps as
//     the lines are written (Reader.Totals: payouts and balances read them),
//     equal its lines' sums.
//
// It also lists the accounts whose lines go back in time (Report.BackInTime:
// lines written before migration 00034; not a violation).
//
// It reads everything, so it is an operator's command, not a request path.
func Verify(ctx context.Context, r Reader) (Report, error) {
	var rep Report
	bad := func(check, subject, format string, args ...any) {
		rep.Violations = append(rep.Violations, Violation{check, subject, fmt.Sprintf(format, args...)})
	}

	accounts, err := r.Accounts(ctx)
	if err != nil {
		return rep, err
	}
	heads := map[string]Account{}
	for _, a := range accounts {
		heads[a.ID] = a
	}
	rep.Accounts = len(accounts)

	opSums := map[string]int64{}
	var total int64
	var cur Line // the previous line of the account being scanned
	last := map[string]Line{}
	// Wallet adjustments that overdraw are allowed only in a processor
	// adjustment: which operations are, is known once every line was read.
	var overdrawnAdjustments []Line
	processorAdjustments := map[string]bool{}
	// Each wallet's lines summed by type and earn mode, to compare with the
	// totals the store keeps as they are written (Reader.Totals).
	walletTotals := map[string]map[totalKey]Total{}
	err = r.Scan(ctx, func(l Line) error {
		rep.Lines++
		total += l.Amount
		opSums[l.OperationID] += l.Amount
		if l.Account != cur.Account {
			cur = Line{Account: l.Account, Hash: GenesisHash}
		}
		if l.Seq > 1 && l.CreatedAt.Before(cur.CreatedAt) {
			if n := len(rep.BackInTime); n > 0 && rep.BackInTime[n-1].Account == l.Account {
				rep.BackInTime[n-1].Lines++
			} else {
				rep.BackInTime = append(rep.BackInTime, BackInTime{Account: l.Account, Lines: 1, FirstLine: l.ID, FirstSeq: l.Seq, At: l.CreatedAt, PrevAt: cur.CreatedAt})
			}
		}
		if l.Seq != cur.Seq+1 {
			bad("sequence", l.Account, "line %s has seq %d after seq %d", l.ID, l.Seq, cur.Seq)
		}
		if l.BalanceAfter != cur.BalanceAfter+l.Amount {
			bad("balance_chain", l.Account, "line %s: %d + %d != balance_after %d", l.ID, cur.BalanceAfter, l.Amount, l.BalanceAfter)
		}
		if !bytes.Equal(l.PrevHash, cur.Hash) {
			bad("hash_chain", l.Account, "line %s does not link to the previous line's hash", l.ID)
		}
		if !bytes.Equal(l.Hash, l.ComputeHash()) {
			bad("hash_chain", l.Account, "line %s: stored hash does not match its contents", l.ID)
		}
		if l.Type == TypeAdjustment && strings.HasPrefix(l.Account, ProcessorClearing+":") {
			processorAdjustments[l.OperationID] = true
		}
		switch ClassOf(l.Account) {
		case ClassEscrow:
			if l.BalanceAfter < 0 {
				bad("overdraft", l.Account, "line %s leaves escrow at %d", l.ID, l.BalanceAfter)
			}
		case ClassWallet:
			switch {
			case l.BalanceAfter >= 0 || l.Amount >= 0 || l.Type == TypeClawback:
			case l.Type == TypeAdjustment:
				overdrawnAdjustments = append(overdrawnAdjustments, l)
			default:
				bad("overdraft", l.Account, "%s line %s leaves the wallet at %d", l.Type, l.ID, l.BalanceAfter)
			}
			if l.Type == TypeTake || l.Type == TypeCreditBonus {
				bad("line_type", l.Account, "line %s has platform type %s on a wallet", l.ID, l.Type)
			}
			if walletTotals[l.Account] == nil {
				walletTotals[l.Account] = map[totalKey]Total{}
			}
			k := totalKey{l.Type, l.EarnMode}
			t := walletTotals[l.Account][k]
			t.Type, t.EarnMode, t.Amount, t.Count = l.Type, l.EarnMode, t.Amount+l.Amount, t.Count+1
			walletTotals[l.Account][k] = t
		case ClassPayoutClearing:
			if l.Type != TypePayout {
				bad("line_type", l.Account, "line %s has type %s on a payout's clearing account", l.ID, l.Type)
			}
			switch {
			case l.Seq == 1 && l.Amount <= 0:
				bad("payout_clearing", l.Account, "line %s: the first line is %d, not a reservation", l.ID, l.Amount)
			case l.Seq == 2 && l.BalanceAfter != 0:
				bad("payout_clearing", l.Account, "line %s leaves %d cents: a settlement or return takes the whole reservation", l.ID, l.BalanceAfter)
			case l.Seq > 2:
				bad("payout_clearing", l.Account, "line %s: the reservation was resolved more than once", l.ID)
			}
			if l.BalanceAfter < 0 {
				bad("overdraft", l.Account, "line %s leaves a payout's clearing account at %d", l.ID, l.BalanceAfter)
			}
		}
		cur = l
		last[l.Account] = l
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Operations = len(opSums)
	for _, l := range overdrawnAdjustments {
		if !processorAdjustments[l.OperationID] {
			bad("overdraft", l.Account, "%s line %s leaves the wallet at %d", l.Type, l.ID, l.BalanceAfter)
		}
	}

	if total != 0 {
		bad("zero_sum", "ledger", "all lines sum to %d", total)
	}
	for op, sum := range opSums {
		if sum != 0 {
			bad("zero_sum", op, "operation lines sum to %d", sum)
		}
	}
	for id, a := range heads {
		l, ok := last[id]
		if !ok {
			if a.Balance != 0 || a.Seq != 0 {
				bad("head", id, "account has balance %d and seq %d but no lines", a.Balance, a.Seq)
			}
			continue
		}
		if a.Balance != l.BalanceAfter || a.Seq != l.Seq || !bytes.Equal(a.Head, l.Hash) {
			bad("head", id, "head (balance %d, seq %d) differs from last line (balance_after %d, seq %d) or its hash", a.Balance, a.Seq, l.BalanceAfter, l.Seq)
		}
	}
	for id := range last {
		if _, ok := heads[id]; !ok {
			bad("head", id, "lines exist for an account that has no head")
		}
	}
	for id := range heads {
		if ClassOf(id) != ClassWallet {
			continue
		}
		kept, err := r.Totals(ctx, id)
		if err != nil {
			return rep, err
		}
		want := walletTotals[id]
		same := len(kept) == len(want)
		for _, t := range kept {
			if want[totalKey{t.Type, t.EarnMode}] != t {
				same = false
			}
		}
		if !same {
			bad("wallet_totals", id, "the kept totals %v differ from the lines' %v", kept, want)
		}
	}
	stored := map[string]bool{}
	err = r.OperationIDs(ctx, func(id string) error {
		stored[id] = true
		if _, ok := opSums[id]; !ok {
			bad("operation", id, "operation has no lines")
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for op := range opSums {
		if !stored[op] {
			bad("operation", op, "lines name an operation that has no record")
		}
	}

	holds, err := r.AllHolds(ctx)
	if err != nil {
		return rep, err
	}
	rep.Holds = len(holds)
	open := map[string]int64{}
	for _, h := range holds {
		if h.Resolution == "" {
			open[Escrow(h.Advertiser)] += h.Amount
		}
	}
	for id, a := range heads {
		if ClassOf(id) == ClassEscrow && a.Balance != open[id] {
			bad("escrow", id, "escrow balance %d but open holds sum to %d", a.Balance, open[id])
		}
	}
	for id, sum := range open {
		if _, ok := heads[id]; !ok {
			bad("escrow", id, "open holds sum to %d but the escrow account does not exist", sum)
		}
	}
	return rep, nil
}
