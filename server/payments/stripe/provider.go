// Package stripe is the Stripe payment provider (payments.Provider): top-ups
// are Checkout Sessions, payouts are Connect transfers to the apps' Express
// accounts, and Stripe's webhook events complete sessions (Webhook). It is
// the only package that speaks Stripe's API, through stripe-go against a
// configurable base URL and the server's outbound HTTP client; the payments
// domain above it is the same in test mode. See docs/payments.md.
package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/xpromo/xpromo/server/jsonbound"
	"github.com/xpromo/xpromo/server/payments"
)

// DefaultAPIURL is Stripe's API.
const DefaultAPIURL = "https://api.stripe.com"

// Config configures the provider.
type Config struct {
	// SecretKey is the platform account's secret (sk_live_…, sk_test_…) or
	// restricted (rk_…) key.
	SecretKey string
	// APIURL is Stripe's API base URL ("" is DefaultAPIURL); tests and
	// operators rehearsing point it at stripe-mock or another counterpart.
	APIURL string
	// HTTPClient makes the requests: the server's outbound client.
	HTTPClient *http.Client
	// SuccessURL and CancelURL are where Checkout sends the payer after
	// paying or giving up.
	SuccessURL, CancelURL string
	// ConnectCountry is the ISO 3166-1 alpha-2 country of the Express
	// accounts created for apps (e.g. "DE").
	ConnectCountry string
	// MaxNetworkRetries is how often stripe-go retries a request that
	// failed on the network or with a 409/5xx, under the same idempotency
	// key (nil: stripe-go's default, 2).
	MaxNetworkRetries *int64
}

// Provider implements payments.Provider and payments.CheckoutLookup.
type Provider struct {
	sc  *stripego.Client
	cfg Config
}

var (
	_ payments.Provider       = (*Provider)(nil)
	_ payments.CheckoutLookup = (*Provider)(nil)
	_ payments.PaymentLookup  = (*Provider)(nil)
)

// New returns the provider.
func New(cfg Config) *Provider {
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	backends := stripego.NewBackendsWithConfig(&stripego.BackendConfig{
		URL:               stripego.String(strings.TrimRight(cfg.APIURL, "/")),
		HTTPClient:        boundAnswers(cfg.HTTPClient),
		MaxNetworkRetries: cfg.MaxNetworkRetries,
		LeveledLogger:     &stripego.LeveledLogger{Level: stripego.LevelNull},
		EnableTelemetry:   stripego.Bool(false),
	})
	return &Provider{sc: stripego.NewClient(cfg.SecretKey, stripego.WithBackends(backends)), cfg: cfg}
}

// MaxAnswerBytes bounds what is read of one answer of Stripe's API (after
// the transport inflates it), whatever the HTTP client allows; its JSON is
// held to jsonbound.Answer before stripe-go decodes it (docs/limits.md).
// Stripe's objects are a few KiB, and the pages the provider lists hold at
// most ten of them.
const MaxAnswerBytes = 1 << 20

// boundAnswers returns a copy of c (nil: a client with stripe-go's 80-second
// timeout) whose answers are read whole, within MaxAnswerBytes and
// jsonbound.Answer, before stripe-go sees them. An answer beyond the bounds
// is a transport error: stripe-go retries it as it would a cut connection,
// then the operation fails as for an unreachable Stripe.
func boundAnswers(c *http.Client) *http.Client {
	b := http.Client{Timeout: 80 * time.Second}
	if c != nil {
		b = *c
	}
	next := b.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	b.Transport = boundedAnswers{next: next}
	return &b
}

type boundedAnswers struct{ next http.RoundTripper }

func (t boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := jsonbound.Read(resp.Body, MaxAnswerBytes, jsonbound.Answer)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("stripe: the answer to %s %s is beyond the bounds of an answer: %w", req.Method, req.URL.Path, err)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	return resp, nil
}

// Livemode reports whether the key is a live one: its events must say
// livemode true, and test ones are ignored (and the other way round).
func (p *Provider) Livemode() bool { return Livemode(p.cfg.SecretKey) }

// Livemode reports whether a Stripe secret or restricted key is live.
func Livemode(key string) bool {
	return strings.HasPrefix(key, "sk_live_") || strings.HasPrefix(key, "rk_live_")
}

// Name implements payments.Provider.
func (p *Provider) Name() string { return "stripe" }

// checkoutExpiryMargin keeps the Stripe session's expiry inside Stripe's
// limit (24 hours after its creation) whatever the clocks' skew: Stripe's
// session closes a little before the server's row, and the reconciliation
// pass closes the row.
const checkoutExpiryMargin = 5 * time.Minute

// CreateCheckout implements payments.Provider: a Checkout Session in
// payment mode for one line of amount_cents euro cents, carrying the
// server's session id as client_reference_id (what the webhook names) and
// in metadata with the app, under the idempotency key
// "xpromo-checkout-<session id>".
func (p *Provider) CreateCheckout(ctx context.Context, r payments.CheckoutRequest) (payments.Checkout, error) {
	params := &stripego.CheckoutSessionCreateParams{
		Mode:              stripego.String(string(stripego.CheckoutSessionModePayment)),
		ClientReferenceID: stripego.String(r.SessionID),
		LineItems: []*stripego.CheckoutSessionCreateLineItemParams{{
			Quantity: stripego.Int64(1),
			PriceData: &stripego.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripego.String(strings.ToLower(r.Currency)),
				UnitAmount: stripego.Int64(r.AmountCents),
				ProductData: &stripego.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripego.String(fmt.Sprintf("xpromo wallet top-up: EUR %s for app %s", payments.EUR(r.AmountCents), r.AppID)),
				},
			},
		}},
		Metadata: map[string]string{"xpromo_session_id": r.SessionID, "xpromo_app_id": r.AppID},
		PaymentIntentData: &stripego.CheckoutSessionCreatePaymentIntentDataParams{
			Metadata: map[string]string{"xpromo_session_id": r.SessionID, "xpromo_app_id": r.AppID},
		},
	}
	if u := firstNonEmpty(r.SuccessURL, p.cfg.SuccessURL); u != "" {
		params.SuccessURL = stripego.String(u)
	}
	if p.cfg.CancelURL != "" {
		params.CancelURL = stripego.String(p.cfg.CancelURL)
	}
	if !r.ExpiresAt.IsZero() {
		params.ExpiresAt = stripego.Int64(r.ExpiresAt.Add(-checkoutExpiryMargin).Unix())
	}
	params.SetIdempotencyKey("xpromo-checkout-" + r.SessionID)
	cs, err := p.sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return payments.Checkout{}, fmt.Errorf("stripe: creating the checkout session: %w", err)
	}
	if cs.ID == "" || cs.URL == "" {
		return payments.Checkout{}, errors.New("stripe: the checkout session came back without an id or a url")
	}
	return payments.Checkout{ProviderRef: cs.ID, URL: cs.URL}, nil
}

// LookupCheckout implements payments.CheckoutLookup: it retrieves the
// session, with its PaymentIntent, and says what it amounts to.
func (p *Provider) LookupCheckout(ctx context.Context, ref string) (payments.CheckoutState, error) {
	params := &stripego.CheckoutSessionRetrieveParams{}
	params.AddExpand("payment_intent")
	cs, err := p.sc.V1CheckoutSessions.Retrieve(ctx, ref, params)
	if err != nil {
		return payments.CheckoutState{}, fmt.Errorf("stripe: retrieving checkout session %s: %w", ref, err)
	}
	st := sessionState(cs)
	if cs.Status == stripego.CheckoutSessionStatusComplete && st.Outcome == payments.OutcomeOpen && cs.PaymentIntent != nil {
		// Completed with a delayed payment method: it failed if its
		// PaymentIntent gave up or wants another payment method.
		switch cs.PaymentIntent.Status {
		case stripego.PaymentIntentStatusCanceled, stripego.PaymentIntentStatusRequiresPaymentMethod:
			st.Outcome = payments.OutcomeFailed
		}
	}
	return st, nil
}

// CheckoutByPayment implements payments.PaymentLookup: the Checkout
// Session of a PaymentIntent (GET /v1/checkout/sessions?payment_intent=…),
// for the refunds and disputes of sessions completed before their
// PaymentIntent was stored. found is false when the PaymentIntent has no
// Checkout Session (a payment of another integration).
func (p *Provider) CheckoutByPayment(ctx context.Context, paymentIntent string) (payments.CheckoutState, bool, error) {
	params := &stripego.CheckoutSessionListParams{PaymentIntent: stripego.String(paymentIntent)}
	params.Limit = stripego.Int64(1)
	for cs, err := range p.sc.V1CheckoutSessions.List(ctx, params).All(ctx) {
		if err != nil {
			return payments.CheckoutState{}, false, fmt.Errorf("stripe: listing the checkout sessions of %s: %w", paymentIntent, err)
		}
		if cs.PaymentIntent == nil || cs.PaymentIntent.ID != paymentIntent {
			continue // a counterpart that ignores the filter must not make us believe
		}
		return sessionState(cs), true, nil
	}
	return payments.CheckoutState{}, false, nil
}

// sessionState maps a Checkout Session to what the domain acts on.
func sessionState(cs *stripego.CheckoutSession) payments.CheckoutState {
	st := payments.CheckoutState{
		ProviderRef: cs.ID, SessionID: cs.ClientReferenceID,
		AmountCents: cs.AmountTotal, Currency: string(cs.Currency),
		Outcome: payments.OutcomeOpen,
	}
	if cs.PaymentIntent != nil {
		st.PaymentRef = cs.PaymentIntent.ID
	}
	switch {
	case cs.Status == stripego.CheckoutSessionStatusComplete && cs.PaymentStatus == stripego.CheckoutSessionPaymentStatusPaid:
		st.Outcome = payments.OutcomePaid
	case cs.Status == stripego.CheckoutSessionStatusExpired:
		st.Outcome = payments.OutcomeExpired
	}
	return st
}

// Transfer implements payments.Provider: a transfer to the connected
// account, transfer_group = the payout id (what FindTransfer lists by),
// idempotency key = the payout id. A refusal by Stripe (4xx: insufficient
// balance, an account that cannot receive transfers) is definite; a 5xx, a
// 409 (a concurrent request with the key), a 429 or no answer leaves the
// outcome unknown (payments.ErrTransferUnknown).
func (p *Provider) Transfer(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
	params := &stripego.TransferCreateParams{
		Amount:        stripego.Int64(r.AmountCents),
		Currency:      stripego.String(strings.ToLower(r.Currency)),
		Destination:   stripego.String(r.Destination),
		TransferGroup: stripego.String(r.PayoutID),
		Description:   stripego.String("xpromo payout " + r.PayoutID),
		Metadata:      map[string]string{"xpromo_payout_id": r.PayoutID, "xpromo_app_id": r.AppID},
	}
	params.SetIdempotencyKey(r.IdempotencyKey)
	tr, err := p.sc.V1Transfers.Create(ctx, params)
	if err != nil {
		return payments.TransferResult{}, classify("creating the transfer", err)
	}
	return payments.TransferResult{TransferID: tr.ID}, nil
}

// FindTransfer implements payments.Provider: the transfers listed by
// transfer_group = the payout id, which unlike the idempotency key (kept 24
// hours) finds the transfer at any age. A transfer of another amount,
// currency or destination under the group is an error: an operator looks.
func (p *Provider) FindTransfer(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, bool, error) {
	params := &stripego.TransferListParams{TransferGroup: stripego.String(r.PayoutID)}
	params.Limit = stripego.Int64(10)
	for tr, err := range p.sc.V1Transfers.List(ctx, params).All(ctx) {
		if err != nil {
			return payments.TransferResult{}, false, fmt.Errorf("stripe: listing the transfers of %s: %w", r.PayoutID, err)
		}
		if tr.TransferGroup != r.PayoutID {
			continue // a counterpart that ignores the filter must not make us believe
		}
		dest := ""
		if tr.Destination != nil {
			dest = tr.Destination.ID
		}
		if tr.Amount != r.AmountCents || !strings.EqualFold(string(tr.Currency), r.Currency) || dest != r.Destination {
			return payments.TransferResult{}, false, fmt.Errorf("stripe: transfer %s of group %s is %d %s to %s, the payout is %d %s to %s",
				tr.ID, r.PayoutID, tr.Amount, tr.Currency, dest, r.AmountCents, r.Currency, r.Destination)
		}
		return payments.TransferResult{TransferID: tr.ID}, true, nil
	}
	return payments.TransferResult{}, false, nil
}

// classify wraps err in payments.ErrTransferUnknown unless Stripe answered
// a definite refusal.
func classify(what string, err error) error {
	var se *stripego.Error
	if errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 &&
		se.HTTPStatusCode != http.StatusConflict && se.HTTPStatusCode != http.StatusTooManyRequests {
		return fmt.Errorf("stripe: %s: %s (%s)", what, se.Msg, firstNonEmpty(string(se.Code), string(se.Type)))
	}
	return fmt.Errorf("%w: stripe: %s: %w", payments.ErrTransferUnknown, what, err)
}

// CreateAccount implements payments.Provider: an Express account in
// ConnectCountry with the transfers capability, under the idempotency key
// "xpromo-account-<app id>", so that concurrent onboardings create one.
func (p *Provider) CreateAccount(ctx context.Context, appID string) (string, error) {
	params := &stripego.AccountCreateParams{
		Type: stripego.String(string(stripego.AccountTypeExpress)),
		Capabilities: &stripego.AccountCreateCapabilitiesParams{
			Transfers: &stripego.AccountCreateCapabilitiesTransfersParams{Requested: stripego.Bool(true)},
		},
		Metadata: map[string]string{"xpromo_app_id": appID},
	}
	if p.cfg.ConnectCountry != "" {
		params.Country = stripego.String(p.cfg.ConnectCountry)
	}
	params.SetIdempotencyKey("xpromo-account-" + appID)
	acct, err := p.sc.V1Accounts.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: creating the connected account: %w", err)
	}
	return acct.ID, nil
}

// OnboardingLink implements payments.Provider: an account_onboarding
// Account Link.
func (p *Provider) OnboardingLink(ctx context.Context, accountID, refreshURL, returnURL string) (string, error) {
	refreshURL, returnURL = firstNonEmpty(refreshURL, p.cfg.SuccessURL), firstNonEmpty(returnURL, p.cfg.SuccessURL)
	link, err := p.sc.V1AccountLinks.Create(ctx, &stripego.AccountLinkCreateParams{
		Account:    stripego.String(accountID),
		Type:       stripego.String("account_onboarding"),
		RefreshURL: stripego.String(refreshURL),
		ReturnURL:  stripego.String(returnURL),
	})
	if err != nil {
		return "", fmt.Errorf("stripe: creating the account link: %w", err)
	}
	return link.URL, nil
}

// Account implements payments.Provider.
func (p *Provider) Account(ctx context.Context, accountID string) (payments.AccountStatus, error) {
	a, err := p.sc.V1Accounts.GetByID(ctx, accountID, nil)
	if err != nil {
		return payments.AccountStatus{}, fmt.Errorf("stripe: reading account %s: %w", accountID, err)
	}
	st := payments.AccountStatus{AccountID: a.ID, ChargesEnabled: a.ChargesEnabled, PayoutsEnabled: a.PayoutsEnabled,
		DetailsSubmitted: a.DetailsSubmitted, RequirementsDue: []string{}}
	if a.Requirements != nil {
		st.RequirementsDue = append(append(st.RequirementsDue, a.Requirements.PastDue...), a.Requirements.CurrentlyDue...)
		st.DisabledReason = string(a.Requirements.DisabledReason)
	}
	return st, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
