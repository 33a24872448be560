package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/detach"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/txunit"
)

// TestPayoutAccount is the payout account every app implicitly has in test
// mode (an account set by an operator takes precedence).
func TestPayoutAccount(appID string) string { return "acct_test_" + appID }

// Withdrawable is what a payout may take out of a wallet (decisions §3):
// cash earnings − payouts − cash clawbacks, capped by the wallet balance and
// never negative. Top-ups, refunds, adjustments and credits-mode earnings
// are not withdrawable.
func Withdrawable(totals []ledger.Total, balance int64) int64 {
	var w int64
	for _, t := range totals {
		// Amounts are signed: earn lines are positive, payouts and
		// clawbacks negative.
		switch {
		case t.Type == ledger.TypeEarn && t.EarnMode == ledger.EarnCash,
			t.Type == ledger.TypePayout,
			t.Type == ledger.TypeClawback && t.EarnMode == ledger.EarnCash:
			w += t.Amount
		}
	}
	return max(0, min(w, balance))
}

var accountIDPattern = regexp.MustCompile(`^acct_[A-Za-z0-9_]{1,250}$`)

// SetPayoutAccount sets the connected account an app's payouts go to (an
// operator's action).
func (s *Service) SetPayoutAccount(ctx context.Context, appID, accountID string) error {
	if accountID == "" {
		e := apperr.New(apperr.MissingField, "account_id is required")
		e.Field = "account_id"
		return e
	}
	if !accountIDPattern.MatchString(accountID) {
		e := apperr.New(apperr.InvalidPayoutAccount, "account_id must be a connected account id: acct_ followed by letters, digits or _")
		e.Field = "account_id"
		return e
	}
	return s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		if _, ok, err := tx.GetApp(ctx, appID, false); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		before, err := tx.PayoutAccount(ctx, appID)
		if err != nil {
			return err
		}
		now := s.now()
		if err := tx.SetPayoutAccount(ctx, appID, accountID, now); err != nil {
			return err
		}
		detail, err := json.Marshal(map[string]string{"from": before, "to": accountID})
		if err != nil {
			return err
		}
		return tx.InsertAdminAudit(ctx, apps.AuditEntry{
			ID: ids.New("aud"), Actor: apps.ActorAdmin, Action: "app.payout_account", Subject: appID, Detail: detail, At: now,
		})
	})
}

// payoutAccount returns where the app's payouts go, "" when nowhere.
func (s *Service) payoutAccount(ctx context.Context, tx Tx, appID string) (string, error) {
	acct, err := tx.PayoutAccount(ctx, appID)
	if err == nil && acct == "" && s.TestMode {
		acct = TestPayoutAccount(appID)
	}
	return acct, err
}

// Payout transfers the app's whole withdrawable balance to its payout
// account (docs/payments.md, "Payout"):
//
//  1. one transaction reads the app, locks the wallet, checks the app may
//     withdraw and the conditions (404; 409 payout_not_allowed,
//     payout_account_missing, payout_in_progress, below_minimum), records a
//     pending payout and reserves its amount: the wallet's `payout` line
//     moves it to the payout's clearing account (ledger key
//     "payout:<payout id>"), so nothing else can spend it;
//  2. the provider transfers, with the payout id as idempotency key;
//  3. one transaction settles the reservation to the processor and marks the
//     payout sent, or, if the provider refused, returns it to the wallet
//     and marks the payout failed (503 unavailable).
//
// When the provider's answer is unknown the payout stays pending (503) and
// RecoverPayouts resolves it later. A request sent with an Idempotency-Key
// is exactly once by itself: its transactions commit on their own (the
// reservation must commit before the provider is called), the key is
// recorded on the payout, and a retry with the key answers from that payout
// (resolving it first if it is still pending) instead of starting another.
func (s *Service) Payout(ctx context.Context, appID string) (Payout, error) {
	ctx = txunit.Detached(ctx)
	ref, keyed := idempotency.RefFrom(ctx)
	// The payout records the request, not only its key: one use of the key
	// (Ref.ID), so that the key used again once it expired (24 hours) asks
	// for a new payout rather than answering the old one.
	ref = idempotency.Ref{Scope: ref.Scope, Key: ref.ID()}
	var p Payout
	var retried bool // p is the payout an earlier request with the same key created
	// One id for every attempt of the transaction: a retry must reserve into
	// the clearing account the first attempt named (PostgreSQL creates a
	// missing account outside the transaction, then runs it again).
	id := ids.New("po")
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		p, retried = Payout{}, false
		app, ok, err := tx.GetApp(ctx, appID, false)
		if err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		// Locking the wallet serialises payouts of one app with each other
		// and with everything else that spends the wallet (escrow holds):
		// what is read below stays true until the reservation commits.
		wallet := ledger.Wallet(appID)
		heads, err := tx.LockAccounts(ctx, []string{wallet})
		if err != nil {
			return err
		}
		if keyed {
			if prev, found, err := tx.PayoutByRef(ctx, ref); err != nil {
				return err
			} else if found {
				p, retried = prev, true
				return nil
			}
		}
		switch app.Status {
		case xpromo.AppStatusSuspended, xpromo.AppStatusRejected:
			return apperr.New(apperr.PayoutNotAllowed, "app %s is %s: it cannot withdraw", appID, app.Status)
		}
		dest, err := s.payoutAccount(ctx, tx, appID)
		if err != nil {
			return err
		}
		if dest == "" {
			return apperr.New(apperr.PayoutAccountMissing, "app %s has no payout account; an operator connects one", appID)
		}
		if pending, err := tx.PendingPayout(ctx, appID); err != nil {
			return err
		} else if pending {
			return payoutInProgress(appID)
		}
		totals, err := tx.LedgerTotals(ctx, wallet)
		if err != nil {
			return err
		}
		amount := Withdrawable(totals, heads[wallet].Balance)
		if amount < MinPayoutCents {
			return apperr.New(apperr.BelowMinimum, "the withdrawable balance is EUR %s; a payout needs at least EUR %s of cash earnings (top-ups and credits are not withdrawable)",
				EUR(amount), EUR(MinPayoutCents)).WithStatus(409)
		}
		now := s.now()
		p = Payout{ID: id, AppID: appID, AmountCents: amount, Destination: dest,
			Status: PayoutPending, CreatedAt: now, UpdatedAt: now}
		if keyed {
			p.Ref = ref
		}
		op, err := ledger.PayoutReserve(p.ID, appID, amount)
		if err != nil {
			return err
		}
		results, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return errs[0]
		}
		p.OperationID = results[0].Operation.ID
		inserted, err := tx.InsertPayout(ctx, p)
		if err == nil && !inserted {
			err = payoutInProgress(appID) // rolls the reservation back
		}
		return err
	})
	if err != nil {
		return Payout{}, err
	}
	// The amount is reserved: the payout runs on if the client goes away
	// (its cancellation), but not past the request's deadline
	// (--request-timeout). The provider's call is bounded by it too: cut
	// off, the transfer's outcome is unknown (outcomeUnknown), which is safe,
	// since the transfer's idempotency key is the payout id and every later
	// resolve asks FindTransfer first. Recording the outcome is bounded by
	// it: a database that stopped answering must not keep the client
	// waiting past its deadline (issue 31). Either way the payout stays
	// pending and answers 503 unavailable; the retry with the same
	// Idempotency-Key, or the recovery pass, finishes it.
	ctx, cancel := detach.KeepDeadline(ctx)
	defer cancel()
	if retried && p.Status == PayoutPending {
		// The request that created it died, or is still running; resolving
		// twice is harmless (FindTransfer first, same transfer key, keyed
		// ledger operations, conditional finish).
		p, err = s.resolve(ctx, p, true)
	} else if !retried {
		p, err = s.resolve(ctx, p, false)
	}
	if err != nil {
		return Payout{}, s.unresolved(ctx, p, keyed, err)
	}
	return outcome(p)
}

// transferRequest is the transfer of payout p; its idempotency key is the
// payout id, whoever sends it (the request, a retry, the recovery pass).
func transferRequest(p Payout) TransferRequest {
	return TransferRequest{PayoutID: p.ID, AppID: p.AppID, Destination: p.Destination,
		AmountCents: p.AmountCents, Currency: Currency, IdempotencyKey: p.ID}
}

// resolve finishes a pending payout whose amount is reserved: it has the
// provider transfer it (with lookup, it first asks whether the transfer was
// already made, as after a crash), then settles or returns the reservation.
// It returns the payout as it now stands; err is set when the outcome is
// unknown (wrapping ErrTransferUnknown) or could not be recorded, and the
// payout then stays pending for the recovery pass.
func (s *Service) resolve(ctx context.Context, p Payout, lookup bool) (Payout, error) {
	req := transferRequest(p)
	var tr TransferResult
	var err error
	found := false
	if lookup {
		if tr, found, err = s.Provider.FindTransfer(ctx, req); err != nil {
			return p, fmt.Errorf("%w: asking the provider for the transfer: %w", ErrTransferUnknown, err)
		}
	}
	if !found {
		tr, err = s.Provider.Transfer(ctx, req)
	}
	switch {
	case err == nil:
		return s.finish(ctx, p, PayoutSent, tr.TransferID, "")
	case outcomeUnknown(err):
		if !errors.Is(err, ErrTransferUnknown) {
			err = fmt.Errorf("%w: %w", ErrTransferUnknown, err)
		}
		return p, err
	default:
		return s.finish(ctx, p, PayoutFailed, "", failureNote(err))
	}
}

// finish settles (sent) or returns (failed) a payout's reservation and
// records the outcome, with payout.sent when sent, in one transaction. A payout already finished by
// someone else (the recovery pass, a retry) is returned as it is.
func (s *Service) finish(ctx context.Context, p Payout, status, transferID, failure string) (Payout, error) {
	var out Payout
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		cur, found, err := tx.Payout(ctx, p.ID, true)
		if err != nil {
			return err
		} else if !found {
			return fmt.Errorf("payments: payout %s not found", p.ID)
		}
		out = cur
		if cur.Status != PayoutPending {
			return nil
		}
		var op ledger.Operation
		if status == PayoutSent {
			op, err = ledger.PayoutSettle(cur.ID, cur.AmountCents, transferID)
		} else {
			op, err = ledger.PayoutReturn(cur.ID, cur.AppID, cur.AmountCents, failure)
		}
		if err != nil {
			return err
		}
		now := s.now()
		_, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return fmt.Errorf("payments: posting %s: %v", op.Key, errs[0])
		}
		out.Status, out.TransferID, out.Failure, out.UpdatedAt = status, transferID, failure, now
		if err := tx.FinishPayout(ctx, out); err != nil {
			return err
		}
		if status != PayoutSent {
			return nil
		}
		// Whoever settles it (the request, a retry, the recovery pass)
		// announces it, once: only the transaction that finds it pending
		// gets here.
		return tx.InsertOutbox(ctx, []outbox.Event{outbox.New(out.AppID, xpromo.EventPayoutSent, xpromo.PayoutEventData{Payout: out.Wire()}, now)})
	})
	if err != nil {
		return p, err
	}
	// Someone else may have finished it the other way. Sent wins (money
	// moved); but a transfer made for a payout already failed and returned
	// means the provider contradicted itself: an operator must look.
	if out.Status == PayoutFailed && status == PayoutSent {
		s.log().ErrorContext(ctx, "payout transfer made after the payout was failed and its reservation returned; reconcile with the provider",
			"payout_id", p.ID, "app_id", p.AppID, "amount_cents", p.AmountCents, "transfer_id", transferID, "failure", out.Failure)
	}
	return out, nil
}

// failureNote is the reason a refused payout carries (on the payout and its
// return line), kept short.
func failureNote(err error) string {
	const limit = 300 // bytes
	msg := err.Error()
	if len(msg) > limit {
		msg = strings.ToValidUTF8(msg[:limit], "") + "…"
	}
	return msg
}

// outcome is the API's answer for a payout: sent answers it; failed answers
// the provider's refusal, the same every time it is asked; pending says it
// is still in progress.
func outcome(p Payout) (Payout, error) {
	switch p.Status {
	case PayoutSent:
		return p, nil
	case PayoutFailed:
		return Payout{}, apperr.New(apperr.Unavailable, "the payment processor refused payout %s (%s); its amount is back in the wallet", p.ID, p.Failure)
	default:
		return Payout{}, apperr.New(apperr.Unavailable, "the payment processor did not confirm payout %s yet; it stays in progress until it is resolved", p.ID)
	}
}

// unresolved logs a payout left pending and returns the API's answer: 503
// unavailable when the provider's answer is unknown, or when the outcome
// could not be recorded because the database was unavailable or the
// request's deadline passed (the retry with the same Idempotency-Key, or
// the recovery pass, finishes it); a 500 (no code suggesting that no money
// moved) when recording the outcome failed otherwise.
func (s *Service) unresolved(ctx context.Context, p Payout, keyed bool, err error) error {
	s.log().ErrorContext(ctx, "payout left pending: the recovery pass resolves it",
		"payout_id", p.ID, "app_id", p.AppID, "amount_cents", p.AmountCents, "error", err.Error())
	retry := "the recovery pass resolves it"
	if keyed {
		retry = "retry with the same Idempotency-Key for its outcome"
	}
	switch {
	case errors.Is(err, ErrTransferUnknown):
		return apperr.New(apperr.Unavailable, "the payment processor did not confirm payout %s; it stays in progress: %s", p.ID, retry)
	case apperr.Is(err, apperr.Unavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return apperr.New(apperr.Unavailable, "the outcome of payout %s could not be recorded within the request's deadline (the database is unavailable); it stays in progress: %s", p.ID, retry)
	}
	// Deliberately %v, not %w: the caller gets a 500 with a request id.
	return fmt.Errorf("payments: payout %s stays pending: %v", p.ID, err)
}

func payoutInProgress(appID string) error {
	return apperr.New(apperr.PayoutInProgress, "a payout of app %s is still being processed", appID)
}

// RecoveryResult counts what one RecoverPayouts pass did.
type RecoveryResult struct {
	Sent, Failed, Pending int
}

// recoveryBatch is how many pending payouts one claim takes.
const recoveryBatch = 50

// RecoverPayouts resolves every payout pending and untouched for longer than
// the grace (PayoutGrace; one stamped further than the grace in the future
// counts too: the clock went back). For each, it asks the provider by the
// payout's idempotency key, then settles it (the transfer exists, or is
// made now), fails it and returns its reservation (the provider refused
// it), or, when the provider cannot tell, leaves it pending until the next
// pass, logged at ERROR with the payout id. Every resolution is logged.
// Several instances may run it at once: claims are disjoint, and even a
// race with a live request is harmless (FindTransfer first, one transfer
// key, keyed ledger operations, conditional finish).
func (s *Service) RecoverPayouts(ctx context.Context) (RecoveryResult, error) {
	ctx = txunit.Detached(ctx)
	var res RecoveryResult
	for {
		var batch []Payout
		now := s.now()
		err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
			var err error
			batch, err = tx.ClaimStalePayouts(ctx, now, s.payoutGrace(), recoveryBatch)
			return err
		})
		if err != nil {
			return res, err
		}
		for _, p := range batch {
			if ctx.Err() != nil {
				return res, ctx.Err() // the claimed rest waits for the next pass
			}
			q, err := s.resolve(ctx, p, true)
			attrs := []any{"payout_id", p.ID, "app_id", p.AppID, "amount_cents", p.AmountCents, "pending_since", p.CreatedAt}
			switch {
			case err != nil:
				res.Pending++
				s.log().ErrorContext(ctx, "payout recovery: outcome unknown, the payout stays pending until the next pass; check the payment processor",
					append(attrs, "error", err.Error())...)
			case q.Status == PayoutSent:
				res.Sent++
				s.log().InfoContext(ctx, "payout recovery: transfer confirmed, payout sent", append(attrs, "transfer_id", q.TransferID)...)
			case q.Status == PayoutFailed:
				res.Failed++
				s.log().WarnContext(ctx, "payout recovery: transfer refused, payout failed and its amount returned to the wallet", append(attrs, "failure", q.Failure)...)
			}
		}
		if len(batch) < recoveryBatch || ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
}
