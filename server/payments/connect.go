package payments

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ids"
)

// AccountStatus is a connected account as the provider reports it.
type AccountStatus struct {
	AccountID        string
	ChargesEnabled   bool
	PayoutsEnabled   bool
	DetailsSubmitted bool
	// RequirementsDue lists what the account holder must still provide
	// (Stripe: requirements.currently_due and past_due).
	RequirementsDue []string
	// DisabledReason says why the account cannot receive payouts yet
	// (Stripe: requirements.disabled_reason); "" when it can.
	DisabledReason string
}

// Onboarding is a connected account and the link where its holder fills in
// what the provider needs.
type Onboarding struct {
	AccountID string
	URL       string
}

// StartOnboarding links a connected account to the app, creating one with
// the provider when the app has none (an operator-set account, or test
// mode's implicit one, is kept), and returns the link where the app's owner
// completes it. Each call answers a fresh link: links are short-lived, so
// calling again is how an expired one is replaced. The account is created
// with an idempotency key derived from the app, and linked in the same
// transaction as its audit entry, so concurrent calls link one account.
func (s *Service) StartOnboarding(ctx context.Context, appID string) (Onboarding, error) {
	var acct string
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		acct, err = s.payoutAccount(ctx, tx, appID)
		return err
	})
	if err != nil {
		return Onboarding{}, err
	}
	if acct == "" {
		created, err := s.Provider.CreateAccount(ctx, appID)
		if err != nil {
			return Onboarding{}, providerUnavailable("creating the connected account", err)
		}
		if acct, err = s.linkAccount(ctx, appID, created); err != nil {
			return Onboarding{}, err
		}
	}
	url, err := s.Provider.OnboardingLink(ctx, acct, s.ConnectReturnURL, s.ConnectReturnURL)
	if err != nil {
		return Onboarding{}, providerUnavailable("creating the onboarding link", err)
	}
	return Onboarding{AccountID: acct, URL: url}, nil
}

// linkAccount stores the account the provider created for the app, unless
// another call linked one first (that one is kept and returned).
func (s *Service) linkAccount(ctx context.Context, appID, created string) (string, error) {
	var acct string
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		if _, ok, err := tx.GetApp(ctx, appID, false); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		cur, err := tx.PayoutAccount(ctx, appID)
		if err != nil {
			return err
		}
		if acct = cur; cur != "" {
			return nil
		}
		acct = created
		now := s.now()
		if err := tx.SetPayoutAccount(ctx, appID, created, now); err != nil {
			return err
		}
		detail, err := json.Marshal(map[string]string{"from": "", "to": created, "by": "onboarding"})
		if err != nil {
			return err
		}
		return tx.InsertAdminAudit(ctx, apps.AuditEntry{
			ID: ids.New("aud"), Actor: apps.ActorSystem, Action: "app.payout_account", Subject: appID, Detail: detail, At: now,
		})
	})
	return acct, err
}

// PayoutAccountStatus asks the provider about the app's connected account
// (409 payout_account_missing when it has none).
func (s *Service) PayoutAccountStatus(ctx context.Context, appID string) (AccountStatus, error) {
	var acct string
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		acct, err = s.payoutAccount(ctx, tx, appID)
		return err
	})
	if err != nil {
		return AccountStatus{}, err
	}
	if acct == "" {
		return AccountStatus{}, apperr.New(apperr.PayoutAccountMissing, "app %s has no payout account; start one with POST /v1/apps/%s/payout-account/onboarding", appID, appID)
	}
	st, err := s.Provider.Account(ctx, acct)
	if err != nil {
		return AccountStatus{}, providerUnavailable("reading the connected account", err)
	}
	st.AccountID = acct
	if st.RequirementsDue == nil {
		st.RequirementsDue = []string{}
	}
	return st, nil
}

// providerUnavailable is the API's answer when the provider failed: 503,
// the cause logged by the caller's error handler, not shown.
func providerUnavailable(what string, err error) error {
	return fmt.Errorf("%w: %w", apperr.New(apperr.Unavailable, "the payment processor failed %s; try again", what), err)
}
