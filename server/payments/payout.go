package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
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
// account:
//
//  1. one transaction locks the wallet, checks the account, that no payout
//     is pending and the withdrawable amount (409 payout_account_missing,
//     payout_in_progress, below_minimum), and records a pending payout;
//  2. the provider transfers, with the payout id as idempotency key;
//  3. one transaction posts the payout line (note = transfer id, key
//     "payout:<payout id>") and marks the payout sent.
//
// A refused transfer marks the payout failed, and the app can ask again.
func (s *Service) Payout(ctx context.Context, appID string) (Payout, error) {
	var p Payout
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		dest, err := s.payoutAccount(ctx, tx, appID)
		if err != nil {
			return err
		}
		if dest == "" {
			return apperr.New(apperr.PayoutAccountMissing, "app %s has no payout account; an operator connects one", appID)
		}
		// Locking the wallet serialises payouts of one app with each other
		// and with the posting of a previous payout's line: the totals read
		// below include every payout already sent.
		wallet := ledger.Wallet(appID)
		heads, err := tx.LockAccounts(ctx, []string{wallet})
		if err != nil {
			return err
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
		p = Payout{ID: ids.New("po"), AppID: appID, AmountCents: amount, Destination: dest,
			Status: PayoutPending, CreatedAt: now, UpdatedAt: now}
		inserted, err := tx.InsertPayout(ctx, p)
		if err == nil && !inserted {
			err = payoutInProgress(appID)
		}
		return err
	})
	if err != nil {
		return Payout{}, err
	}

	tr, err := s.Provider.Transfer(ctx, TransferRequest{
		PayoutID: p.ID, AppID: appID, Destination: p.Destination,
		AmountCents: p.AmountCents, Currency: Currency, IdempotencyKey: p.ID,
	})
	if err != nil {
		if errors.Is(err, ErrTransferUnknown) {
			s.log().ErrorContext(ctx, "payout transfer outcome unknown; the payout stays pending until reconciled",
				"payout_id", p.ID, "app_id", appID, "amount_cents", p.AmountCents, "error", err.Error())
			return Payout{}, apperr.New(apperr.Unavailable, "the payment processor did not confirm payout %s; it stays in progress until reconciled", p.ID)
		}
		p.Status, p.Failure, p.UpdatedAt = PayoutFailed, err.Error(), s.now()
		// A fresh context: the payout must not stay pending because the
		// request was cancelled after the refusal.
		if ferr := s.Update(context.WithoutCancel(ctx), func(ctx context.Context, tx WriteTx) error {
			return tx.FinishPayout(ctx, p)
		}); ferr != nil {
			return Payout{}, fmt.Errorf("payments: recording failed payout %s: %w", p.ID, ferr)
		}
		return Payout{}, apperr.New(apperr.Unavailable, "the payment processor refused payout %s: %v", p.ID, err)
	}

	p.TransferID = tr.TransferID
	var opErr error
	var final Payout
	err = s.Update(context.WithoutCancel(ctx), func(ctx context.Context, tx WriteTx) error {
		q := p // from the same start on every attempt
		opErr = nil
		op, err := ledger.Payout("payout:"+q.ID, appID, q.AmountCents, q.TransferID)
		if err != nil {
			return err
		}
		now := s.now()
		results, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return err
		}
		q.UpdatedAt = now
		if opErr = errs[0]; opErr != nil {
			// The money left but the wallet was spent below the amount while
			// the transfer ran. The payout stays pending, with its transfer
			// id, so no second payout can start before an operator
			// reconciles it.
			q.Failure = "transfer sent but not recorded: " + opErr.Error()
		} else {
			q.Status, q.OperationID = PayoutSent, results[0].Operation.ID
		}
		final = q
		return tx.FinishPayout(ctx, q)
	})
	if err == nil && opErr != nil {
		err = opErr
	}
	if err == nil {
		p = final
	}
	if err != nil {
		s.log().ErrorContext(ctx, "payout transferred but not recorded in the ledger; reconcile it",
			"payout_id", p.ID, "transfer_id", p.TransferID, "app_id", appID, "amount_cents", p.AmountCents, "error", err.Error())
		// Deliberately not an application error (%v, not %w): the caller gets
		// a 500 with a request id, never a code suggesting no money moved.
		return Payout{}, fmt.Errorf("payments: payout %s transferred as %s but not recorded: %v", p.ID, p.TransferID, err)
	}
	return p, nil
}

func payoutInProgress(appID string) error {
	return apperr.New(apperr.PayoutInProgress, "a payout of app %s is still being processed", appID)
}
