package ledger

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
)

// Ledger posts operations to a Store. Use it by pointer: it holds the
// queue of its group commit (group.go).
type Ledger struct {
	Store Store
	Now   func() time.Time // the injected clock

	group committer
}

// PostBatch applies many operations in one transaction, as TigerBeetle does
// with a batch of transfers: each operation succeeds or fails on its own
// (errs[i]), and all the successful ones commit together. err is set only
// when the transaction itself failed, in which case nothing was written.
func (l *Ledger) PostBatch(ctx context.Context, ops []Operation) (results []Result, errs []error, err error) {
	err = l.Store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var e error
		results, errs, e = Apply(ctx, tx, l.Now(), ops)
		return e
	})
	return results, errs, err
}

// Apply posts ops inside the caller's transaction, so that a money movement
// and the state change it belongs to commit together. results[i] and errs[i]
// describe ops[i]; a failed operation writes nothing. The returned error is
// for the transaction as a whole (the caller must roll back).
func Apply(ctx context.Context, tx Tx, now time.Time, ops []Operation) (results []Result, errs []error, err error) {
	now = now.UTC().Truncate(time.Microsecond) // the precision both stores keep
	results = make([]Result, len(ops))
	errs = make([]error, len(ops))
	hashes := make([][]byte, len(ops))

	// 1. Validate, and find the keys already posted.
	var keys []string
	for i, op := range ops {
		if errs[i] = validate(op); errs[i] == nil {
			hashes[i] = op.requestHash()
			keys = append(keys, op.Key)
		}
	}
	stored, err := tx.FindOperations(ctx, keys)
	if err != nil {
		return nil, nil, err
	}

	// 2. Replays return the stored result; the rest are pending.
	var replayIDs []string
	firstInBatch := map[string]int{}
	var pending []int
	for i, op := range ops {
		if errs[i] != nil {
			continue
		}
		if rec, ok := stored[op.Key]; ok {
			if !bytes.Equal(rec.RequestHash, hashes[i]) {
				errs[i] = keyReused(op.Key)
				continue
			}
			results[i] = Result{Operation: rec, Replayed: true}
			replayIDs = append(replayIDs, rec.ID)
			continue
		}
		if _, dup := firstInBatch[op.Key]; dup {
			continue // resolved after the first one is applied
		}
		firstInBatch[op.Key] = i
		pending = append(pending, i)
	}
	if len(replayIDs) > 0 {
		lines, err := tx.OperationLines(ctx, replayIDs)
		if err != nil {
			return nil, nil, err
		}
		for i := range results {
			if results[i].Replayed {
				results[i].Lines = lines[results[i].Operation.ID]
			}
		}
	}

	// 3. Read the holds involved and lock every account, in id order so that
	// concurrent transactions cannot deadlock.
	var holdIDs, accountIDs []string
	for _, i := range pending {
		op := ops[i]
		if op.Opens != nil {
			holdIDs = append(holdIDs, op.Opens.ID)
		}
		if op.Resolves != nil {
			holdIDs = append(holdIDs, op.Resolves.HoldID)
		}
		for _, p := range op.Postings {
			accountIDs = append(accountIDs, p.Account)
		}
	}
	holds, err := tx.Holds(ctx, sortedUnique(holdIDs))
	if err != nil {
		return nil, nil, err
	}
	accounts, err := tx.LockAccounts(ctx, sortedUnique(accountIDs))
	if err != nil {
		return nil, nil, err
	}
	// A line is never dated before its account's last one, even when the
	// clock stepped back (NTP, another node's skew): the ledger pages seek
	// on that order (Account.LastAt). The whole batch keeps one instant.
	for _, a := range accounts {
		if a.LastAt.After(now) {
			now = a.LastAt.UTC().Truncate(time.Microsecond)
		}
	}

	// 4. Apply each pending operation to the locked heads, in order.
	var b Batch
	touched := map[string]bool{}
	for _, i := range pending {
		op := ops[i]
		rec := Record{ID: ids.New("op"), Key: op.Key, Kind: op.Kind, RequestHash: hashes[i], CreatedAt: now}
		lines, heads, err := post(op, rec, accounts, holds, now)
		if err != nil {
			errs[i] = err
			continue
		}
		for id, a := range heads {
			accounts[id] = a
			touched[id] = true
		}
		b.Operations = append(b.Operations, rec)
		b.Lines = append(b.Lines, lines...)
		if op.Opens != nil {
			h := *op.Opens
			h.CreatedAt, h.Resolution = now, ""
			holds[h.ID] = h
			b.Holds = append(b.Holds, h)
		}
		if s := op.Resolves; s != nil {
			h := holds[s.HoldID]
			h.Resolution = s.Resolution
			holds[s.HoldID] = h
			b.Resolutions = append(b.Resolutions, Resolution{HoldID: s.HoldID, Resolution: s.Resolution, OperationID: rec.ID, CreatedAt: now})
		}
		results[i] = Result{Operation: rec, Lines: lines}
	}
	// Repeats of a key inside the batch replay its first occurrence.
	for i, op := range ops {
		first, ok := firstInBatch[op.Key]
		if !ok || first == i || errs[i] != nil || results[i].Replayed {
			continue
		}
		switch {
		case errs[first] != nil:
			errs[i] = errs[first]
		case !bytes.Equal(hashes[first], hashes[i]):
			errs[i] = keyReused(op.Key)
		default:
			results[i] = results[first]
			results[i].Replayed = true
		}
	}
	if len(b.Operations) == 0 {
		return results, errs, nil
	}
	for _, id := range sortedUnique(mapKeys(touched)) {
		b.Accounts = append(b.Accounts, accounts[id])
	}
	if err := tx.Append(ctx, b); err != nil {
		return nil, nil, err
	}
	return results, errs, nil
}

// post computes the lines of one operation against the current heads and
// holds, without changing them; it returns the lines and the new heads.
func post(op Operation, rec Record, accounts map[string]Account, holds map[string]Hold, now time.Time) ([]Line, map[string]Account, error) {
	if h := op.Opens; h != nil {
		if _, exists := holds[h.ID]; exists {
			return nil, nil, apperr.New(apperr.InvalidOperation, "hold %q already exists", h.ID)
		}
	}
	if s := op.Resolves; s != nil {
		h, ok := holds[s.HoldID]
		switch {
		case !ok:
			return nil, nil, apperr.New(apperr.HoldNotFound, "no escrow hold %q", s.HoldID)
		case h.Resolution != "":
			return nil, nil, apperr.New(apperr.HoldAlreadyResolved, "escrow hold %q was already %s", s.HoldID, resolvedWord(h.Resolution))
		case h.Amount != s.Amount || h.Advertiser != s.Advertiser:
			return nil, nil, apperr.New(apperr.HoldMismatch, "escrow hold %q is %d cents for %s, not %d for %s", s.HoldID, h.Amount, h.Advertiser, s.Amount, s.Advertiser)
		}
	}
	heads := map[string]Account{}
	lines := make([]Line, 0, len(op.Postings))
	for i, p := range op.Postings {
		a, ok := heads[p.Account]
		if !ok {
			a = accounts[p.Account]
		}
		balance := a.Balance + p.Amount
		if balance < 0 && p.Amount < 0 {
			switch ClassOf(p.Account) {
			case ClassEscrow:
				return nil, nil, apperr.New(apperr.InsufficientFunds, "escrow %s holds %d cents, cannot release %d", p.Account, a.Balance, -p.Amount)
			case ClassPayoutClearing:
				return nil, nil, apperr.New(apperr.InsufficientFunds, "%s holds %d cents, cannot take %d: a payout's reservation is settled or returned once", p.Account, a.Balance, -p.Amount)
			case ClassWallet:
				if !p.MayOverdraw {
					return nil, nil, apperr.New(apperr.InsufficientFunds, "wallet of %s has %d cents, needs %d", AppOf(p.Account), a.Balance, -p.Amount)
				}
			}
		}
		l := Line{
			ID: fmt.Sprintf("%s.%d", rec.ID, i), OperationID: rec.ID, Index: i,
			Account: p.Account, Seq: a.Seq + 1, Type: p.Type, Amount: p.Amount, BalanceAfter: balance,
			Counterparty: p.Counterparty, ChainID: p.ChainID, Note: p.Note, EarnMode: p.EarnMode,
			CreatedAt: now, PrevHash: a.Head,
		}
		l.Hash = l.ComputeHash()
		lines = append(lines, l)
		heads[p.Account] = Account{ID: p.Account, Balance: balance, Seq: l.Seq, Head: l.Hash, LastAt: now}
	}
	return lines, heads, nil
}

func validate(op Operation) error {
	if op.Key == "" {
		return apperr.New(apperr.InvalidOperation, "operation key is required")
	}
	if op.Kind == "" || len(op.Postings) < 2 {
		return apperr.New(apperr.InvalidOperation, "operation %q needs a kind and at least two postings", op.Key)
	}
	var sum int64
	for _, p := range op.Postings {
		if p.Account == "" || !p.Type.Valid() || p.Amount == 0 {
			return apperr.New(apperr.InvalidOperation, "operation %q has a posting without account, with an unknown type or a zero amount", op.Key)
		}
		sum += p.Amount
	}
	if sum != 0 {
		return apperr.New(apperr.InvalidOperation, "operation %q postings sum to %d, not zero", op.Key, sum)
	}
	return nil
}

func keyReused(key string) error {
	return apperr.New(apperr.OperationKeyReused, "operation key %q was already used for a different operation", key)
}

func resolvedWord(r string) string {
	if r == "charge" {
		return "charged"
	}
	return "released"
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
