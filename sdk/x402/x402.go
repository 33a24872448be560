// Package x402 is the x402 protocol version 1 for the `exact` scheme on EVM
// chains: its wire types (the X-PAYMENT PaymentPayload, the facilitator's
// verify and settle messages, the X-PAYMENT-RESPONSE settlement response),
// the EIP-712 digest of an EIP-3009 TransferWithAuthorization, and signing
// and recovering it with secp256k1.
//
// The server verifies payments with it, and a payer signs them with a
// Wallet (xpromo.WithX402Wallet makes the SDK's TopUp pay its 402 itself).
//
// Amounts and times are decimal strings on the wire, as x402 sends them;
// addresses are compared without regard to letter case (EIP-55 checksums
// are only a spelling).
package x402

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"golang.org/x/crypto/sha3"
)

// Version is the x402 protocol version this package speaks.
const Version = 1

// SchemeExact is the only scheme: an EIP-3009 transferWithAuthorization of
// exactly the required amount.
const SchemeExact = "exact"

// Networks (x402 v1 names).
const (
	NetworkBase        = "base"
	NetworkBaseSepolia = "base-sepolia"
)

// Asset is a token an x402 payment moves, with the EIP-712 domain its
// authorizations are signed under.
type Asset struct {
	Network  string
	ChainID  int64
	Address  string // the token contract, the domain's verifyingContract
	Name     string // the domain's name: "USD Coin" on Base, "USDC" on Base Sepolia
	Version  string // the domain's version
	Decimals int
}

// USDC is USDC on each network. The EIP-712 name differs per chain, a
// classic cause of signatures that never verify on chain.
var USDC = map[string]Asset{
	NetworkBase:        {NetworkBase, 8453, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", "2", 6},
	NetworkBaseSepolia: {NetworkBaseSepolia, 84532, "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", "2", 6},
}

// ChainID returns the chain id of an x402 v1 network name.
func ChainID(network string) (int64, bool) {
	a, ok := USDC[network]
	return a.ChainID, ok
}

// Requirements is one x402 v1 PaymentRequirements (an entry of a 402
// challenge's accepts).
type Requirements struct {
	Scheme            string          `json:"scheme"`
	Network           string          `json:"network"`
	MaxAmountRequired string          `json:"maxAmountRequired"`
	Resource          string          `json:"resource"`
	Description       string          `json:"description"`
	MimeType          string          `json:"mimeType"`
	OutputSchema      json.RawMessage `json:"outputSchema,omitempty"`
	PayTo             string          `json:"payTo"`
	MaxTimeoutSeconds int64           `json:"maxTimeoutSeconds"`
	Asset             string          `json:"asset"`
	Extra             Extra           `json:"extra"`
}

// Extra is the EIP-712 domain name and version of the asset.
type Extra struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PaymentPayload is the decoded X-PAYMENT header.
type PaymentPayload struct {
	X402Version int          `json:"x402Version"`
	Scheme      string       `json:"scheme"`
	Network     string       `json:"network"`
	Payload     ExactPayload `json:"payload"`
}

// ExactPayload is the payload of the exact scheme on EVM.
type ExactPayload struct {
	Signature     string        `json:"signature"` // 0x + 65 bytes r‖s‖v
	Authorization Authorization `json:"authorization"`
}

// Authorization is an EIP-3009 TransferWithAuthorization, as x402 sends it.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`       // atomic units, decimal
	ValidAfter  string `json:"validAfter"`  // unix seconds, decimal
	ValidBefore string `json:"validBefore"` // unix seconds, decimal
	Nonce       string `json:"nonce"`       // 0x + 32 bytes
}

// SettleResponse is the facilitator's answer to /settle and, base64-encoded,
// the X-PAYMENT-RESPONSE header.
type SettleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
}

// VerifyResponse is the facilitator's answer to /verify.
type VerifyResponse struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// FacilitatorRequest is the body of a facilitator's /verify and /settle.
type FacilitatorRequest struct {
	X402Version         int            `json:"x402Version"`
	PaymentPayload      PaymentPayload `json:"paymentPayload"`
	PaymentRequirements Requirements   `json:"paymentRequirements"`
}

// Supported is the facilitator's answer to GET /supported.
type Supported struct {
	Kinds []SupportedKind `json:"kinds"`
}

// SupportedKind is one (version, scheme, network) a facilitator settles.
type SupportedKind struct {
	X402Version int    `json:"x402Version"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
}

// Encode returns v as a header value: the standard base64 (padded) of its
// JSON, as X-PAYMENT and X-PAYMENT-RESPONSE carry it.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// maxResponseHeader bounds an X-PAYMENT-RESPONSE: a settlement response is
// a few short strings (its JSON flat, so its depth and width are bounded by
// the size).
const maxResponseHeader = 8 << 10

// DecodeResponse decodes an X-PAYMENT-RESPONSE header of at most 8 KiB.
func DecodeResponse(h string) (SettleResponse, error) {
	var r SettleResponse
	if len(h) > maxResponseHeader {
		return r, fmt.Errorf("x402: X-PAYMENT-RESPONSE is longer than %d bytes", maxResponseHeader)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h))
	if err != nil {
		return r, fmt.Errorf("x402: X-PAYMENT-RESPONSE is not base64: %w", err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("x402: X-PAYMENT-RESPONSE is not a settlement response: %w", err)
	}
	return r, nil
}

var (
	addressRe = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	bytes32Re = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
	uintRe    = regexp.MustCompile(`^(0|[1-9][0-9]{0,77})$`)
)

// IsAddress reports whether s is 0x and 40 hex digits.
func IsAddress(s string) bool { return addressRe.MatchString(s) }

// SameAddress reports whether a and b are the same address.
func SameAddress(a, b string) bool { return IsAddress(a) && IsAddress(b) && strings.EqualFold(a, b) }

// ParseUint parses a decimal uint256 as x402 writes it (no sign, no leading
// zeros, no exponent).
func ParseUint(s string) (*big.Int, bool) {
	if !uintRe.MatchString(s) {
		return nil, false
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.BitLen() > 256 {
		return nil, false
	}
	return v, true
}

// ErrMalformed marks an authorization or signature that is not well formed.
var ErrMalformed = errors.New("x402: malformed")

func keccak(parts ...[]byte) []byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// Keccak256 is Ethereum's Keccak-256 (the original, not SHA3-256).
func Keccak256(b []byte) []byte { return keccak(b) }

var (
	domainType = keccak([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	// TransferWithAuthorizationType is the EIP-712 type hash of EIP-3009's
	// TransferWithAuthorization.
	transferType = keccak([]byte("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
)

func word(v *big.Int) []byte { return v.FillBytes(make([]byte, 32)) }

func addressWord(a string) []byte {
	b, _ := hex.DecodeString(a[2:])
	return append(make([]byte, 12), b...)
}

// DomainSeparator is the EIP-712 domain separator of a token: the value its
// DOMAIN_SEPARATOR() returns.
func DomainSeparator(name, version string, chainID int64, verifyingContract string) ([]byte, error) {
	if !IsAddress(verifyingContract) {
		return nil, fmt.Errorf("%w: verifying contract %q is not an address", ErrMalformed, verifyingContract)
	}
	return keccak(domainType, keccak([]byte(name)), keccak([]byte(version)), word(big.NewInt(chainID)), addressWord(verifyingContract)), nil
}

// Digest is the EIP-712 digest a payer signs for a: keccak256(0x19 0x01 ‖
// domain separator ‖ hash of the TransferWithAuthorization).
func Digest(a Authorization, domainSeparator []byte) ([]byte, error) {
	if !IsAddress(a.From) || !IsAddress(a.To) {
		return nil, fmt.Errorf("%w: authorization from and to must be addresses", ErrMalformed)
	}
	if !bytes32Re.MatchString(a.Nonce) {
		return nil, fmt.Errorf("%w: authorization nonce must be 0x and 64 hex digits", ErrMalformed)
	}
	var nums [3]*big.Int
	for i, s := range []string{a.Value, a.ValidAfter, a.ValidBefore} {
		v, ok := ParseUint(s)
		if !ok {
			return nil, fmt.Errorf("%w: authorization value, validAfter and validBefore must be decimal integers", ErrMalformed)
		}
		nums[i] = v
	}
	nonce, _ := hex.DecodeString(a.Nonce[2:])
	structHash := keccak(transferType, addressWord(a.From), addressWord(a.To), word(nums[0]), word(nums[1]), word(nums[2]), nonce)
	return keccak([]byte{0x19, 0x01}, domainSeparator, structHash), nil
}

// AssetDigest is Digest under the domain of asset.
func AssetDigest(a Authorization, asset Asset) ([]byte, error) {
	sep, err := DomainSeparator(asset.Name, asset.Version, asset.ChainID, asset.Address)
	if err != nil {
		return nil, err
	}
	return Digest(a, sep)
}

// ChecksumAddress spells a 20-byte address with its EIP-55 checksum.
func ChecksumAddress(addr []byte) string {
	lower := hex.EncodeToString(addr)
	h := keccak([]byte(lower))
	out := []byte(lower)
	for i, c := range out {
		if c >= 'a' && (h[i/2]>>(4*(1-uint(i%2))))&0xf >= 8 {
			out[i] = c - 32
		}
	}
	return "0x" + string(out)
}
