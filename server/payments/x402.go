package payments

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"time"

	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/txunit"
)

// x402 networks (v1 names); each pays in its USDC (x402.USDC), whose
// EIP-712 domain name differs per chain.
const (
	NetworkBase        = x402.NetworkBase
	NetworkBaseSepolia = x402.NetworkBaseSepolia
)

// X402MaxTimeoutSeconds bounds the validity window of a payment authorisation.
const X402MaxTimeoutSeconds = 300

// X402PaymentRequired is the challenge's error for a first request.
const X402PaymentRequired = "X-PAYMENT header is required"

// ZeroAddress is the payTo of test mode when no address is configured. No
// token transfers to it: a server without a payTo answers a paid retry 503
// x402_unavailable.
const ZeroAddress = "0x0000000000000000000000000000000000000000"

// X402Config prices top-ups for x402 payers and names who settles them.
type X402Config struct {
	Network   string   // "base" or "base-sepolia"
	PayTo     string   // recipient address
	USDPerEUR *big.Rat // the EUR→USD quote
	asset     x402.Asset
	// Facilitator verifies and settles payments; nil: this server settles
	// none (a paid retry answers 503 x402_unavailable).
	Facilitator X402Facilitator
	// Chain tells the reconciliation pass whether an authorization whose
	// settlement went unanswered was used on chain; nil: such settlements
	// stay pending (logged) until an operator resolves them.
	Chain X402Chain
	// Rates, when set, gives the EUR→USD rate of each challenge instead of
	// USDPerEUR; every challenge's amount is then stored as a quote
	// (X402Quote) that the paid retry must match.
	Rates X402Rates
}

// X402Rates is a source of EUR→USD rates (server/x402's RateSource).
type X402Rates interface {
	Rate(ctx context.Context) (*big.Rat, error)
}

var addressPattern = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)

// NewX402Config checks the x402 settings. Test mode runs on the testnet only
// (network "" means base-sepolia there; "base" is refused) and an empty payTo
// means ZeroAddress; live mode needs network "base" or "base-sepolia" chosen
// and a payTo address. rate is the decimal EUR→USD quote ("" means 1).
func NewX402Config(testMode bool, network, payTo, rate string) (X402Config, error) {
	if network == "" && testMode {
		network = NetworkBaseSepolia
	}
	asset, ok := x402.USDC[network]
	switch {
	case !ok:
		return X402Config{}, fmt.Errorf("x402 network %q: want %q or %q", network, NetworkBase, NetworkBaseSepolia)
	case testMode && network != NetworkBaseSepolia:
		return X402Config{}, fmt.Errorf("x402 network %q: test mode pays on the testnet, %q, only", network, NetworkBaseSepolia)
	}
	if payTo == "" && testMode {
		payTo = ZeroAddress
	}
	if !addressPattern.MatchString(payTo) {
		return X402Config{}, fmt.Errorf("x402 pay-to address %q: want 0x and 40 hex digits", payTo)
	}
	if rate == "" {
		rate = "1"
	}
	r, ok := new(big.Rat).SetString(rate)
	if !ok || r.Sign() <= 0 || r.Cmp(big.NewRat(1000, 1)) > 0 {
		return X402Config{}, fmt.Errorf("x402 EUR→USD rate %q: want a positive decimal number such as 1.08", rate)
	}
	return X402Config{Network: network, PayTo: payTo, USDPerEUR: r, asset: asset}, nil
}

// AtomicUSDC converts euro cents to USDC atomic units (6 decimals) at the
// quote, rounded up so that a payer never pays less than the top-up is worth:
// cents × 10⁴ × USDPerEUR.
func (c X402Config) AtomicUSDC(cents int64) string { return atomicUSDC(cents, c.USDPerEUR) }

func atomicUSDC(cents int64, rate *big.Rat) string {
	v := new(big.Rat).Mul(new(big.Rat).SetInt64(cents), big.NewRat(10_000, 1))
	v.Mul(v, rate)
	q, m := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.String()
}

// X402Requirements are the x402 v1 PaymentRequirements of a top-up of
// amountCents by appID at resource (the request's URL): the one entry of its
// challenge, and what a paid retry is verified against. The amount is the
// server's quote (AtomicUSDC), so a payer cannot choose its rate.
func (s *Service) X402Requirements(resource, appID string, amountCents int64) x402.Requirements {
	return s.x402Requirements(resource, appID, amountCents, s.X402.AtomicUSDC(amountCents))
}

func (s *Service) x402Requirements(resource, appID string, amountCents int64, value string) x402.Requirements {
	c := s.X402
	return x402.Requirements{
		Scheme:            x402.SchemeExact,
		Network:           c.Network,
		MaxAmountRequired: value,
		Resource:          resource,
		Description:       fmt.Sprintf("xpromo wallet top-up: EUR %s (%d credits) for app %s", EUR(amountCents), amountCents, appID),
		MimeType:          "application/json",
		PayTo:             c.PayTo,
		MaxTimeoutSeconds: X402MaxTimeoutSeconds,
		Asset:             c.asset.Address,
		Extra:             x402.Extra{Name: c.asset.Name, Version: c.asset.Version},
	}
}

// X402Challenge is the x402 version 1 answer (402) to a top-up of amountCents
// at resource (the request's URL), with reason as its error.
func (s *Service) X402Challenge(resource, appID string, amountCents int64, reason string) xpromo.X402Challenge {
	return challenge(s.X402Requirements(resource, appID, amountCents), reason)
}

func challenge(q x402.Requirements, reason string) xpromo.X402Challenge {
	return xpromo.X402Challenge{
		X402Version: xpromo.X402Version,
		Resource:    q.Resource,
		Error:       reason,
		Accepts: []xpromo.X402Accept{{
			Scheme:            q.Scheme,
			Network:           q.Network,
			MaxAmountRequired: q.MaxAmountRequired,
			Resource:          q.Resource,
			Description:       q.Description,
			MimeType:          q.MimeType,
			PayTo:             q.PayTo,
			MaxTimeoutSeconds: int(q.MaxTimeoutSeconds),
			Asset:             q.Asset,
			Extra:             xpromo.X402Extra{Name: q.Extra.Name, Version: q.Extra.Version},
		}},
	}
}

// X402Quote is the amount a challenge asked for a top-up, stored when the
// rate comes from a rate source: the paid retry must pay exactly a quote
// the server gave this app for this amount, before it expired, so a payer
// cannot choose its rate and a quote lapses with its challenge.
type X402Quote struct {
	ID          string // "x4q_…"
	AppID       string
	AmountCents int64
	Value       string // USDC atomic units
	Rate        string // the EUR→USD rate it was computed at
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// X402QuoteTx stores and finds quotes.
type X402QuoteTx interface {
	InsertX402Quote(ctx context.Context, q X402Quote) error
	// X402QuoteFor reports whether appID has a quote of value for
	// amountCents that expires at or after now.
	X402QuoteFor(ctx context.Context, appID string, amountCents int64, value string, now time.Time) (bool, error)
}

// X402Quoted is X402Challenge at the current rate: with a rate source, the
// rate is asked for and the challenge's amount stored as a quote (valid for
// the challenge's maxTimeoutSeconds plus a minute of skew); without one, it
// is X402Challenge at the configured rate. A rate source that cannot answer
// is 503 x402_unavailable.
func (s *Service) X402Quoted(ctx context.Context, resource, appID string, amountCents int64, reason string) (xpromo.X402Challenge, error) {
	if s.X402.Rates == nil {
		return s.X402Challenge(resource, appID, amountCents, reason), nil
	}
	rate, err := s.X402.Rates.Rate(ctx)
	if err != nil {
		return xpromo.X402Challenge{}, apperr.New(apperr.X402Unavailable, "the EUR→USD rate to quote this top-up in USDC is not available (%v); try again later or top up through checkout_url", err)
	}
	now := s.now()
	q := X402Quote{
		ID: ids.New("x4q"), AppID: appID, AmountCents: amountCents, Value: atomicUSDC(amountCents, rate),
		Rate: rate.FloatString(8), CreatedAt: now, ExpiresAt: now.Add(X402MaxTimeoutSeconds*time.Second + time.Minute),
	}
	err = s.Update(txunit.Detached(ctx), func(ctx context.Context, tx WriteTx) error { return tx.InsertX402Quote(ctx, q) })
	if err != nil {
		return xpromo.X402Challenge{}, err
	}
	return challenge(s.x402Requirements(resource, appID, amountCents, q.Value), reason), nil
}

// x402Quoted returns the requirements a paid retry of value is verified
// against: with a rate source, those of an unexpired quote of exactly value
// (else 422 x402_wrong_amount); without, those at the configured rate.
func (s *Service) x402Quoted(ctx context.Context, resource, appID string, amountCents int64, value string, now time.Time) (x402.Requirements, error) {
	if s.X402.Rates == nil {
		return s.X402Requirements(resource, appID, amountCents), nil
	}
	var found bool
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		found, err = tx.X402QuoteFor(ctx, appID, amountCents, value, now)
		return err
	})
	if err != nil {
		return x402.Requirements{}, err
	}
	if !found {
		return x402.Requirements{}, apperr.New(apperr.X402WrongAmount, "the authorization's value %s is not the amount of an unexpired challenge for this top-up of %d cents: ask for a new challenge (Prefer: payment=x402) and pay exactly its maxAmountRequired", value, amountCents)
	}
	return s.x402Requirements(resource, appID, amountCents, value), nil
}
