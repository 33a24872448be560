// Package x402 is the server's side of x402 version 1 top-ups (scheme
// `exact`, EIP-3009 USDC): the local verification of an X-PAYMENT against
// the server's own requirements (never the payer's), the facilitator's HTTP
// client that settles it, and the chain's JSON-RPC client the reconciliation
// pass asks whether an authorization was used. The wire types, the EIP-712
// digest and secp256k1 recovery are the SDK's (sdk/x402), shared with
// payers. Crediting the wallet exactly once is the payments domain's job.
package x402

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	wire "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/jsonbound"
)

// Window rules, as facilitators apply them: validBefore at least
// MinValidity away (the settlement must land before it), and at most the
// challenge's maxTimeoutSeconds plus Skew away, so a quote lapses with its
// challenge.
const (
	MinValidity = 6 * time.Second
	Skew        = 60 * time.Second
)

// Decode decodes an X-PAYMENT header: the base64 (padded, or unpadded, or
// URL-safe) of a JSON x402 v1 PaymentPayload for the exact EVM scheme, at
// most 8 KiB, its JSON within jsonbound.Request (depth, values, key length).
// Anything else is 400 invalid_payment_header.
func Decode(h string) (wire.PaymentPayload, error) {
	bad := func(why string) (wire.PaymentPayload, error) {
		return wire.PaymentPayload{}, apperr.New(apperr.InvalidPaymentHeader, "X-PAYMENT %s; it must be the base64 of a JSON x402 version 1 PaymentPayload", why)
	}
	h = strings.TrimSpace(h)
	if len(h) > 8<<10 {
		return bad("is longer than 8 KiB")
	}
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		// Tolerate the unpadded and URL-safe alphabets some clients use.
		if raw, err = base64.RawStdEncoding.DecodeString(h); err != nil {
			if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "=")); err != nil {
				return bad("is not base64")
			}
		}
	}
	// The structure is bounded as a request body's is (docs/limits.md)
	// before anything decodes it.
	if err := jsonbound.Check(raw, jsonbound.Request); err != nil {
		return bad("is not a JSON x402 PaymentPayload (" + err.Error() + ")")
	}
	var p wire.PaymentPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return bad("is not a JSON x402 PaymentPayload (" + jsonWhy(err) + ")")
	}
	a := p.Payload.Authorization
	switch {
	case p.X402Version == 0 || p.Scheme == "" || p.Network == "":
		return bad("lacks x402Version, scheme or network")
	case p.Payload.Signature == "" || a.From == "" || a.To == "" || a.Value == "" || a.ValidAfter == "" || a.ValidBefore == "" || a.Nonce == "":
		return bad("lacks payload.signature or a field of payload.authorization (from, to, value, validAfter, validBefore, nonce)")
	}
	return p, nil
}

func jsonWhy(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + te.Field + " has the wrong type"
	}
	return "malformed JSON"
}

// Check verifies p against q, the requirements the server itself issued
// for this top-up, at now: version, scheme, network, payee, exact value,
// time window, and the EIP-712 signature recovered to `from` under the
// asset's domain. It returns the payer's address (EIP-55). Each refusal is
// a catalogued error; nothing here touches the network.
func Check(p wire.PaymentPayload, q wire.Requirements, now time.Time) (string, error) {
	asset, ok := wire.USDC[q.Network]
	if !ok || !wire.SameAddress(asset.Address, q.Asset) {
		return "", errors.New("x402: requirements for an unknown asset") // the server's own configuration: a bug
	}
	a := p.Payload.Authorization
	switch {
	case p.X402Version != wire.Version:
		return "", apperr.New(apperr.X402NetworkMismatch, "the payment is x402 version %d; this server speaks version %d", p.X402Version, wire.Version)
	case p.Scheme != q.Scheme:
		return "", apperr.New(apperr.X402NetworkMismatch, "the payment's scheme is %q; the challenge asks %q", p.Scheme, q.Scheme)
	case p.Network != q.Network:
		return "", apperr.New(apperr.X402NetworkMismatch, "the payment is on network %q; the challenge asks %q", p.Network, q.Network)
	}
	malformed := func(what string) error {
		return apperr.New(apperr.InvalidPaymentHeader, "X-PAYMENT payload.authorization.%s is malformed: addresses are 0x and 40 hex digits, value and times decimal integers, the nonce 0x and 64 hex digits", what)
	}
	if !wire.IsAddress(a.From) {
		return "", malformed("from")
	}
	if !wire.IsAddress(a.To) {
		return "", malformed("to")
	}
	if !wire.SameAddress(a.To, q.PayTo) {
		return "", apperr.New(apperr.X402WrongPayee, "the authorization pays %s; the challenge's payTo is %s", a.To, q.PayTo)
	}
	value, ok := wire.ParseUint(a.Value)
	if !ok {
		return "", malformed("value")
	}
	if value.String() != q.MaxAmountRequired {
		return "", apperr.New(apperr.X402WrongAmount, "the authorization's value is %s; the challenge asks exactly %s (atomic units of USDC, the quote of this top-up)", a.Value, q.MaxAmountRequired)
	}
	after, err1 := strconv.ParseInt(a.ValidAfter, 10, 64)
	before, err2 := strconv.ParseInt(a.ValidBefore, 10, 64)
	if _, ok := wire.ParseUint(a.ValidAfter); !ok || err1 != nil {
		return "", malformed("validAfter")
	}
	if _, ok := wire.ParseUint(a.ValidBefore); !ok || err2 != nil {
		return "", malformed("validBefore")
	}
	t := now.Unix()
	switch {
	case before < t+int64(MinValidity/time.Second):
		return "", apperr.New(apperr.X402Expired, "the authorization is valid before %s, which is past or less than %s away; sign a new one", unix(before), MinValidity)
	case after > t:
		return "", apperr.New(apperr.X402NotYetValid, "the authorization is valid only after %s; the server's clock reads %s", unix(after), unix(t))
	case before > t+q.MaxTimeoutSeconds+int64(Skew/time.Second):
		return "", apperr.New(apperr.X402WindowTooLong, "the authorization is valid until %s, beyond the challenge's maxTimeoutSeconds (%d s): the quote lapses with the challenge", unix(before), q.MaxTimeoutSeconds)
	}
	digest, err := wire.AssetDigest(a, asset)
	if err != nil {
		return "", malformed("nonce")
	}
	from, err := wire.Recover(digest, p.Payload.Signature)
	if err != nil {
		return "", apperr.New(apperr.X402BadSignature, "payload.signature is not a valid signature: %v", err)
	}
	if !wire.SameAddress(from, a.From) {
		// Signed for USDC on another network? Say so rather than "bad signature".
		for _, other := range wire.USDC {
			if other.Network == asset.Network {
				continue
			}
			if d, err := wire.AssetDigest(a, other); err == nil {
				if f, err := wire.Recover(d, p.Payload.Signature); err == nil && wire.SameAddress(f, a.From) {
					return "", apperr.New(apperr.X402NetworkMismatch, "the authorization is signed for %s's USDC (%s, chain %d); the challenge asks %s on %s (chain %d)",
						other.Network, other.Address, other.ChainID, asset.Address, asset.Network, asset.ChainID)
				}
			}
		}
		return "", apperr.New(apperr.X402BadSignature, "the signature does not recover to from (%s) under the EIP-712 domain of %s (name %q, version %q, chain %d)", a.From, asset.Address, asset.Name, asset.Version, asset.ChainID)
	}
	return from, nil
}

func unix(s int64) string { return time.Unix(s, 0).UTC().Format(time.RFC3339) }
