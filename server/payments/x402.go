package payments

import (
	"fmt"
	"math/big"
	"regexp"

	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
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
func (c X402Config) AtomicUSDC(cents int64) string {
	v := new(big.Rat).Mul(new(big.Rat).SetInt64(cents), big.NewRat(10_000, 1))
	v.Mul(v, c.USDPerEUR)
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
	c := s.X402
	return x402.Requirements{
		Scheme:            x402.SchemeExact,
		Network:           c.Network,
		MaxAmountRequired: c.AtomicUSDC(amountCents),
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
	q := s.X402Requirements(resource, appID, amountCents)
	return xpromo.X402Challenge{
		X402Version: xpromo.X402Version,
		Resource:    resource,
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
