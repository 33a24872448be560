package ledger_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
)

// memLedger is a ledger in memory: a ledger.Tx for Apply (one writer, no
// locks) and a ledger.Reader for Verify.
type memLedger struct {
	ops      map[string]ledger.Record
	lines    []ledger.Line
	accounts map[string]ledger.Account
	holds    map[string]ledger.Hold
	// totalsSkew is added to every kept wallet total's amount: a store
	// whose totals drifted from its lines.
	totalsSkew int64
}

func newMemLedger() *memLedger {
	return &memLedger{ops: map[string]ledger.Record{}, accounts: map[string]ledger.Account{}, holds: map[string]ledger.Hold{}}
}

func (m *memLedger) FindOperations(_ context.Context, keys []string) (map[string]ledger.Record, error) {
	out := map[string]ledger.Record{}
	for _, k := range keys {
		if r, ok := m.ops[k]; ok {
			out[k] = r
		}
	}
	return out, nil
}

func (m *memLedger) OperationLines(_ context.Context, ids []string) (map[string][]ledger.Line, error) {
	out := map[string][]ledger.Line{}
	for _, l := range m.lines {
		if slices.Contains(ids, l.OperationID) {
			out[l.OperationID] = append(out[l.OperationID], l)
		}
	}
	return out, nil
}

func (m *memLedger) LockAccounts(_ context.Context, ids []string) (map[string]ledger.Account, error) {
	out := map[string]ledger.Account{}
	for _, id := range ids {
		a, ok := m.accounts[id]
		if !ok {
			a = ledger.Account{ID: id, Head: ledger.GenesisHash}
		}
		out[id] = a
	}
	return out, nil
}

func (m *memLedger) Holds(_ context.Context, ids []string) (map[string]ledger.Hold, error) {
	out := map[string]ledger.Hold{}
	for _, id := range ids {
		if h, ok := m.holds[id]; ok {
			out[id] = h
		}
	}
	return out, nil
}

func (m *memLedger) Append(_ context.Context, b ledger.Batch) error {
	for _, r := range b.Operations {
		m.ops[r.Key] = r
	}
	m.lines = append(m.lines, b.Lines...)
	for _, a := range b.Accounts {
		a.LastAt = b.Lines[len(b.Lines)-1].CreatedAt
		m.accounts[a.ID] = a
	}
	for _, h := range b.Holds {
		m.holds[h.ID] = h
	}
	for _, r := range b.Resolutions {
		h := m.holds[r.HoldID]
		h.Resolution = r.Resolution
		m.holds[r.HoldID] = h
	}
	return nil
}

func (m *memLedger) Account(_ context.Context, id string) (ledger.Account, error) {
	if a, ok := m.accounts[id]; ok {
		return a, nil
	}
	return ledger.Account{ID: id, Head: ledger.GenesisHash}, nil
}

func (m *memLedger) Lines(context.Context, string, ledger.LineQuery) ([]ledger.Line, error) {
	panic("not used by Verify")
}

// Totals sums the wallet's lines, as a store's kept totals would (plus
// totalsSkew), ordered by type and earn mode.
func (m *memLedger) Totals(_ context.Context, account string) ([]ledger.Total, error) {
	var out []ledger.Total
	for _, l := range m.lines {
		if l.Account != account {
			continue
		}
		i := slices.IndexFunc(out, func(t ledger.Total) bool { return t.Type == l.Type && t.EarnMode == l.EarnMode })
		if i < 0 {
			out = append(out, ledger.Total{Type: l.Type, EarnMode: l.EarnMode, Amount: m.totalsSkew})
			i = len(out) - 1
		}
		out[i].Amount += l.Amount
		out[i].Count++
	}
	slices.SortFunc(out, func(a, b ledger.Total) int {
		if c := strings.Compare(string(a.Type), string(b.Type)); c != 0 {
			return c
		}
		return strings.Compare(string(a.EarnMode), string(b.EarnMode))
	})
	return out, nil
}

func (m *memLedger) sorted() []ledger.Line {
	ls := slices.Clone(m.lines)
	slices.SortFunc(ls, func(a, b ledger.Line) int {
		if c := strings.Compare(a.Account, b.Account); c != 0 {
			return c
		}
		return int(a.Seq - b.Seq)
	})
	return ls
}

func (m *memLedger) Scan(_ context.Context, fn func(ledger.Line) error) error {
	for _, l := range m.sorted() {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func (m *memLedger) Accounts(context.Context) ([]ledger.Account, error) {
	var out []ledger.Account
	for _, a := range m.accounts {
		out = append(out, a)
	}
	return out, nil
}

func (m *memLedger) AllHolds(context.Context) ([]ledger.Hold, error) {
	var out []ledger.Hold
	for _, h := range m.holds {
		out = append(out, h)
	}
	return out, nil
}

func (m *memLedger) OperationIDs(_ context.Context, fn func(string) error) error {
	var ids []string
	for _, r := range m.ops {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// redate sets the time of an account's line seq, as a database written
// before the time order could hold it, and rehashes the account's chain
// from there (the hash covers the time), so that only the order is off.
func (m *memLedger) redate(account string, seq int64, at time.Time) {
	var prev []byte
	for _, l := range m.sorted() {
		if l.Account != account || l.Seq < seq {
			continue
		}
		i := slices.IndexFunc(m.lines, func(x ledger.Line) bool { return x.ID == l.ID })
		if l.Seq == seq {
			l.CreatedAt = at
		} else {
			l.PrevHash = prev
		}
		l.Hash = l.ComputeHash()
		prev = l.Hash
		m.lines[i] = l
		a := m.accounts[account]
		a.Head = l.Hash
		m.accounts[account] = a
	}
}

func TestVerifyReportsLinesBackInTime(t *testing.T) {
	ctx := context.Background()
	m := newMemLedger()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, app := range []string{"app_a", "app_a", "app_a", "app_a", "app_b"} {
		op, err := ledger.TopUp("topup:"+app+":"+string(rune('0'+i)), app, 100, "test")
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(i) * time.Hour)
		if i == 2 {
			at = t0.Add(-time.Hour) // the clock stepped back: Apply keeps the last line's time
		}
		if _, errs, err := ledger.Apply(ctx, m, at, []ledger.Operation{op}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	rep, err := ledger.Verify(ctx, m)
	if err != nil || !rep.OK() || len(rep.BackInTime) != 0 {
		t.Fatalf("a ledger written by Apply: %v %+v", err, rep)
	}

	// app_a's third and fourth lines dated before its first, as before
	// migration 00034 when a clock stepped back.
	wallet := ledger.Wallet("app_a")
	m.redate(wallet, 3, t0.Add(-2*time.Hour))
	m.redate(wallet, 4, t0.Add(-90*time.Minute))
	rep, err = ledger.Verify(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("lines back in time are not a violation: %v", rep.Violations)
	}
	if len(rep.BackInTime) != 1 {
		t.Fatalf("want one account back in time, got %+v", rep.BackInTime)
	}
	b := rep.BackInTime[0]
	if b.Account != wallet || b.Lines != 1 || b.FirstSeq != 3 || !b.At.Equal(t0.Add(-2*time.Hour)) || !b.PrevAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("got %+v", b)
	}
}
