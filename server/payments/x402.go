package payments

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
)

// x402 networks (v1 names) and their USDC contract, with the EIP-712 domain
// the token signs under: the name differs per chain ("USD Coin" on Base,
// "USDC" on Base Sepolia), a classic cause of signatures that never verify.
const (
	NetworkBase        = "base"
	NetworkBaseSepolia = "base-sepolia"
)

type usdc struct{ address, name, version string }

var usdcByNetwork = map[string]usdc{
	NetworkBase:        {"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", "2"},
	NetworkBaseSepolia: {"0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", "2"},
}

// X402MaxTimeoutSeconds bounds the validity window of a payment authorisation.
const X402MaxTimeoutSeconds = 300

// X402NotEnabled is the challenge's error for a paid retry until settlement
// is implemented: the offered payment is never verified nor settled, so
// nothing is credited.
const X402NotEnabled = "x402 settlement is not enabled on this server yet: the X-PAYMENT was neither verified nor settled and nothing was credited; top up through checkout_url (send the request without Prefer: payment=x402 and without X-PAYMENT)"

// X402PaymentRequired is the challenge's error for a first request.
const X402PaymentRequired = "X-PAYMENT header is required"

// ZeroAddress is the payTo of test mode when no address is configured.
// Settlement is not enabled, so nothing can be paid to it.
const ZeroAddress = "0x0000000000000000000000000000000000000000"

// X402Config prices top-ups for x402 payers.
type X402Config struct {
	Network   string   // "base" or "base-sepolia"
	PayTo     string   // recipient address
	USDPerEUR *big.Rat // the EUR→USD quote
	asset     usdc
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
	asset, ok := usdcByNetwork[network]
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

// X402Challenge is the x402 version 1 answer (402) to a top-up of amountCents
// at resource (the request's URL), with reason as its error.
func (s *Service) X402Challenge(resource, appID string, amountCents int64, reason string) xpromo.X402Challenge {
	c := s.X402
	return xpromo.X402Challenge{
		X402Version: xpromo.X402Version,
		Resource:    resource,
		Error:       reason,
		Accepts: []xpromo.X402Accept{{
			Scheme:            "exact",
			Network:           c.Network,
			MaxAmountRequired: c.AtomicUSDC(amountCents),
			Resource:          resource,
			Description:       fmt.Sprintf("xpromo wallet top-up: EUR %s (%d credits) for app %s", EUR(amountCents), amountCents, appID),
			MimeType:          "application/json",
			PayTo:             c.PayTo,
			MaxTimeoutSeconds: X402MaxTimeoutSeconds,
			Asset:             c.asset.address,
			Extra:             xpromo.X402Extra{Name: c.asset.name, Version: c.asset.version},
		}},
	}
}

// PaymentPayload is the decoded X-PAYMENT header (x402 v1), as far as the
// server reads it before settlement exists.
type PaymentPayload struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Payload     json.RawMessage `json:"payload"`
}

// DecodePaymentHeader decodes an X-PAYMENT header: base64 of a JSON x402 v1
// PaymentPayload. Anything else is 400 invalid_payment_header.
func DecodePaymentHeader(h string) (PaymentPayload, error) {
	bad := func(why string) (PaymentPayload, error) {
		return PaymentPayload{}, apperr.New(apperr.InvalidPaymentHeader, "X-PAYMENT %s; it must be the base64 of a JSON x402 version 1 PaymentPayload", why)
	}
	h = strings.TrimSpace(h)
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		// Tolerate the unpadded and URL-safe alphabets some clients use.
		if raw, err = base64.RawStdEncoding.DecodeString(h); err != nil {
			if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "=")); err != nil {
				return bad("is not base64")
			}
		}
	}
	var p PaymentPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return bad("is not a JSON object")
	}
	if p.X402Version != xpromo.X402Version || p.Scheme == "" || p.Network == "" || len(p.Payload) == 0 || p.Payload[0] != '{' {
		return bad("lacks x402Version 1, scheme, network or payload")
	}
	return p, nil
}
