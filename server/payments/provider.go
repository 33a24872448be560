package payments

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/ids"
)

// Provider is a payment processor: it hosts the checkout page where a person
// pays a top-up, and it transfers payouts to connected accounts. The test
// provider (TestProvider) runs everything locally; the Stripe provider
// (Checkout Sessions and Connect transfers) implements the same interface.
type Provider interface {
	// Name identifies the provider in stored checkout sessions ("test",
	// "stripe").
	Name() string
	// CreateCheckout opens the provider's checkout for a session the server
	// has already numbered. The wallet is credited later, when the provider
	// reports the session paid (test mode: the test checkout page).
	CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error)
	// Transfer sends money to a connected account. It must be idempotent on
	// IdempotencyKey: the same key returns the same transfer and moves money
	// once (Stripe: the Idempotency-Key header, honoured for 24 hours). An
	// error means no money moved, unless it wraps ErrTransferUnknown (a
	// timeout, a 5xx) or is a context error: then the payout stays pending
	// until the recovery pass asks again.
	Transfer(ctx context.Context, r TransferRequest) (TransferResult, error)
	// FindTransfer asks the provider for the transfer made for r, whatever
	// its age (Stripe: the transfers listed by transfer_group = r.PayoutID).
	// found is false when the provider made none: no money moved for r. An
	// error means the provider could not tell.
	FindTransfer(ctx context.Context, r TransferRequest) (t TransferResult, found bool, err error)

	// CreateAccount creates a connected account for an app's payouts
	// (Stripe: an Express account), idempotently per app.
	CreateAccount(ctx context.Context, appID string) (accountID string, err error)
	// OnboardingLink returns a short-lived link where the account's holder
	// completes it; the provider sends the person to returnURL when done,
	// to refreshURL when the link expired.
	OnboardingLink(ctx context.Context, accountID, refreshURL, returnURL string) (string, error)
	// Account reports whether the account can receive payouts.
	Account(ctx context.Context, accountID string) (AccountStatus, error)
}

// CheckoutRequest is what a provider needs to open a checkout.
type CheckoutRequest struct {
	SessionID   string // "cs_…", the server's id (Stripe: client_reference_id)
	AppID       string
	AmountCents int64
	Currency    string // always "EUR"
	SuccessURL  string // where the payer lands after paying; "" = provider's choice
	ExpiresAt   time.Time
}

// Checkout is an opened checkout.
type Checkout struct {
	ProviderRef string // the provider's id of the session (Stripe: cs_live_…)
	URL         string // where the person pays
}

// TransferRequest is one payout transfer.
type TransferRequest struct {
	PayoutID       string // Stripe: transfer_group, what FindTransfer lists by
	AppID          string
	Destination    string // the connected account (Stripe: acct_…)
	AmountCents    int64
	Currency       string // always "EUR"
	IdempotencyKey string // the payout id: a retried transfer moves money once
}

// TransferResult is a completed transfer.
type TransferResult struct {
	TransferID string
}

// ErrTransferUnknown marks a transfer whose outcome is unknown (the provider
// did not answer). The payout is left pending rather than failed, because
// failing it would let the app ask again and be paid twice.
var ErrTransferUnknown = errors.New("payments: transfer outcome unknown")

// outcomeUnknown reports whether a provider's error leaves open whether money
// moved: ErrTransferUnknown, or a call cut short by its context.
func outcomeUnknown(err error) bool {
	return errors.Is(err, ErrTransferUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// TestProvider is the provider of test mode: no money moves. Its checkout is
// the server's own page, <BaseURL>/test/checkout/{session_id}, where a Pay
// button (or `curl -X POST`) completes the session; its transfers succeed at
// once with ids "tr_test_…" and are recorded in the store (table
// test_transfers, keyed by idempotency key), so that like a real processor's
// they outlive the server, and the recovery pass finds them after a crash.
type TestProvider struct {
	// BaseURL is the server's public URL (scheme://host[:port]).
	BaseURL string
	// Update and View run fn in a read-write or read-only transaction of the
	// store that records the test transfers.
	Update func(ctx context.Context, fn func(ctx context.Context, tx TestTransferTx) error) error
	View   func(ctx context.Context, fn func(ctx context.Context, tx TestTransferTx) error) error
	// Now is the injected clock.
	Now func() time.Time
}

// TestTransfer is a transfer of the test provider: table test_transfers.
type TestTransfer struct {
	Key         string // the idempotency key (the payout id)
	TransferID  string // "tr_test_…"
	PayoutID    string
	AppID       string
	Destination string
	AmountCents int64
	Currency    string
	CreatedAt   time.Time
}

// TestTransferTx is what the test provider needs from a transaction.
type TestTransferTx interface {
	// InsertTestTransfer stores t unless a transfer with its key exists; it
	// reports whether it inserted.
	InsertTestTransfer(ctx context.Context, t TestTransfer) (bool, error)
	// TestTransfer reads the transfer made under an idempotency key.
	TestTransfer(ctx context.Context, key string) (t TestTransfer, found bool, err error)
}

// TestCheckoutPath is the path of the test checkout page of a session.
func TestCheckoutPath(sessionID string) string {
	return "/test/checkout/" + url.PathEscape(sessionID)
}

// Name implements Provider.
func (p *TestProvider) Name() string { return "test" }

// CreateCheckout implements Provider: the checkout is the server's own test
// page, and the session is its own reference.
func (p *TestProvider) CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error) {
	return Checkout{
		ProviderRef: r.SessionID,
		URL:         strings.TrimRight(p.BaseURL, "/") + TestCheckoutPath(r.SessionID),
	}, nil
}

var errNoTestStore = errors.New("payments: the test provider has no store to record transfers in")

// Transfer implements Provider, idempotently on the key like the real thing:
// the first call records the transfer, later ones return it. A key reused
// for another amount, currency or destination is refused, as Stripe refuses
// an idempotency key reused with other parameters.
func (p *TestProvider) Transfer(ctx context.Context, r TransferRequest) (TransferResult, error) {
	if err := ctx.Err(); err != nil {
		return TransferResult{}, err
	}
	if p.Update == nil {
		return TransferResult{}, errNoTestStore
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	var t TestTransfer
	err := p.Update(ctx, func(ctx context.Context, tx TestTransferTx) error {
		_, err := tx.InsertTestTransfer(ctx, TestTransfer{
			Key: r.IdempotencyKey, TransferID: ids.New("tr_test"), PayoutID: r.PayoutID, AppID: r.AppID,
			Destination: r.Destination, AmountCents: r.AmountCents, Currency: r.Currency,
			CreatedAt: now().UTC().Truncate(time.Microsecond),
		})
		if err != nil {
			return err
		}
		var found bool
		if t, found, err = tx.TestTransfer(ctx, r.IdempotencyKey); err == nil && !found {
			err = fmt.Errorf("payments: test transfer %s vanished", r.IdempotencyKey)
		}
		return err
	})
	if err != nil {
		// Whether the record committed is unknown, as after a processor's 5xx.
		return TransferResult{}, fmt.Errorf("%w: recording the test transfer: %w", ErrTransferUnknown, err)
	}
	if t.AmountCents != r.AmountCents || t.Currency != r.Currency || t.Destination != r.Destination {
		return TransferResult{}, fmt.Errorf("payments: idempotency key %s was used for a transfer of %d %s to %s", r.IdempotencyKey, t.AmountCents, t.Currency, t.Destination)
	}
	return TransferResult{TransferID: t.TransferID}, nil
}

// FindTransfer implements Provider: the transfer recorded under the key.
func (p *TestProvider) FindTransfer(ctx context.Context, r TransferRequest) (TransferResult, bool, error) {
	if p.View == nil {
		return TransferResult{}, false, errNoTestStore
	}
	var t TestTransfer
	var found bool
	err := p.View(ctx, func(ctx context.Context, tx TestTransferTx) error {
		var err error
		t, found, err = tx.TestTransfer(ctx, r.IdempotencyKey)
		return err
	})
	if err != nil || !found {
		return TransferResult{}, false, err
	}
	return TransferResult{TransferID: t.TransferID}, true, nil
}

// CreateAccount implements Provider: test mode's account of an app is the
// implicit TestPayoutAccount, which needs no onboarding.
func (p *TestProvider) CreateAccount(ctx context.Context, appID string) (string, error) {
	return TestPayoutAccount(appID), nil
}

// OnboardingLink implements Provider: there is nothing to fill in, so the
// link is where the person would come back to (the server's base URL when
// no return URL is configured).
func (p *TestProvider) OnboardingLink(ctx context.Context, accountID, refreshURL, returnURL string) (string, error) {
	if returnURL == "" {
		returnURL = strings.TrimRight(p.BaseURL, "/") + "/"
	}
	return returnURL, nil
}

// Account implements Provider: a test account is ready at once.
func (p *TestProvider) Account(ctx context.Context, accountID string) (AccountStatus, error) {
	return AccountStatus{AccountID: accountID, ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true, RequirementsDue: []string{}}, nil
}
