package payments

import (
	"context"
	"fmt"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
)

// ValidateTopUp checks a top-up amount: at least MinTopUpCents (422
// below_minimum) and at most MaxTopUpCents (422 invalid_amount).
func ValidateTopUp(amountCents int64) error {
	var e *apperr.Error
	switch {
	case amountCents < MinTopUpCents:
		e = apperr.New(apperr.BelowMinimum, "amount_cents must be at least %d (EUR %s), got %d", MinTopUpCents, EUR(MinTopUpCents), amountCents)
	case amountCents > MaxTopUpCents:
		e = apperr.New(apperr.InvalidAmount, "amount_cents must be at most %d (EUR %s) per top-up, got %d", MaxTopUpCents, EUR(MaxTopUpCents), amountCents)
	default:
		return nil
	}
	e.Field = "amount_cents"
	return e
}

// EUR formats cents as euros, e.g. 5000 → "50.00".
func EUR(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// TopUp opens a checkout session of amountCents for appID and returns it with
// the URL where a person pays. Nothing is credited until the session is
// completed.
func (s *Service) TopUp(ctx context.Context, appID string, amountCents int64) (CheckoutSession, string, error) {
	if err := ValidateTopUp(amountCents); err != nil {
		return CheckoutSession{}, "", err
	}
	now := s.now()
	sess := CheckoutSession{
		ID:          ids.New("cs"),
		AppID:       appID,
		AmountCents: amountCents,
		Status:      CheckoutOpen,
		Provider:    s.Provider.Name(),
		CreatedAt:   now,
		ExpiresAt:   now.Add(CheckoutTTL),
	}
	// The provider's session first: its reference is part of the row. If the
	// insert then fails, the provider's session expires unpaid.
	co, err := s.Provider.CreateCheckout(ctx, CheckoutRequest{
		SessionID: sess.ID, AppID: appID, AmountCents: amountCents, Currency: Currency,
		SuccessURL: s.SuccessURL, ExpiresAt: sess.ExpiresAt,
	})
	if err != nil {
		return CheckoutSession{}, "", fmt.Errorf("payments: creating the checkout: %w", err)
	}
	sess.ProviderRef = co.ProviderRef
	if err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		return tx.InsertCheckoutSession(ctx, sess)
	}); err != nil {
		return CheckoutSession{}, "", err
	}
	return sess, co.URL, nil
}

func testModeOnly() error {
	return apperr.New(apperr.TestModeOnly, "the test checkout exists only in test mode; in live mode the payment processor's checkout credits the wallet")
}

// TestCheckout returns a session for the test checkout page. An open session
// past its expiry is reported expired. Test mode only.
func (s *Service) TestCheckout(ctx context.Context, id string) (CheckoutSession, error) {
	if !s.TestMode {
		return CheckoutSession{}, testModeOnly()
	}
	var sess CheckoutSession
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var found bool
		var err error
		sess, found, err = tx.CheckoutSession(ctx, id, false)
		if err == nil && !found {
			err = apperr.New(apperr.NotFound, "no checkout session %q", id)
		}
		return err
	})
	if err != nil {
		return CheckoutSession{}, err
	}
	if sess.Status == CheckoutOpen && !s.now().Before(sess.ExpiresAt) {
		sess.Status = CheckoutExpired
	}
	return sess, nil
}

// CompleteTestCheckout pays a session in test mode: in one transaction it
// credits the wallet (ledger key "topup:<session id>") and marks the session
// completed with the operation's id. Completing a completed session returns
// it unchanged; an expired one answers 409 checkout_expired; a missing one
// 404 not_found. However many completions race, the wallet is credited once:
// the session row is locked, and the ledger key is unique.
func (s *Service) CompleteTestCheckout(ctx context.Context, id string) (CheckoutSession, error) {
	if !s.TestMode {
		return CheckoutSession{}, testModeOnly()
	}
	var sess CheckoutSession
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		var found bool
		var err error
		if sess, found, err = tx.CheckoutSession(ctx, id, true); err != nil {
			return err
		}
		if !found {
			return apperr.New(apperr.NotFound, "no checkout session %q", id)
		}
		if sess.Status != CheckoutOpen {
			return nil // completed: the same answer again; expired: answered below
		}
		now := s.now()
		if !now.Before(sess.ExpiresAt) {
			sess.Status = CheckoutExpired
			return tx.FinishCheckoutSession(ctx, sess)
		}
		sess, err = s.credit(ctx, tx, sess, now)
		return err
	})
	if err != nil {
		return CheckoutSession{}, err
	}
	if sess.Status == CheckoutExpired {
		return sess, apperr.New(apperr.CheckoutExpired, "checkout session %s expired at %s; start a new top-up", sess.ID, sess.ExpiresAt.Format("2006-01-02T15:04:05Z"))
	}
	return sess, nil
}
