package payments

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
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
	// once. An error means no money moved, unless it wraps
	// ErrTransferUnknown (a timeout, a 5xx): then the payout stays pending
	// until someone reconciles it with the provider.
	Transfer(ctx context.Context, r TransferRequest) (TransferResult, error)
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
	PayoutID       string
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

// TestProvider is the provider of test mode: no money moves. Its checkout is
// the server's own page, <BaseURL>/test/checkout/{session_id}, where a Pay
// button (or `curl -X POST`) completes the session; its transfers succeed at
// once with ids "tr_test_…".
type TestProvider struct {
	// BaseURL is the server's public URL (scheme://host[:port]).
	BaseURL string

	mu        sync.Mutex
	transfers map[string]string // idempotency key → transfer id
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

// Transfer implements Provider, idempotently on the key like the real thing.
func (p *TestProvider) Transfer(ctx context.Context, r TransferRequest) (TransferResult, error) {
	if err := ctx.Err(); err != nil {
		return TransferResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.transfers == nil {
		p.transfers = map[string]string{}
	}
	id, ok := p.transfers[r.IdempotencyKey]
	if !ok {
		id = ids.New("tr_test")
		p.transfers[r.IdempotencyKey] = id
	}
	return TransferResult{TransferID: id}, nil
}
