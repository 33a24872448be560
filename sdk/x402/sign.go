package x402

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// halfN is half the order of secp256k1: signatures with s above it are the
// malleable twins EIP-2 (and OpenZeppelin's ECDSA) refuse.
var halfN, _ = new(big.Int).SetString("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0", 16)

// Recover returns the address that signed digest: sig is Ethereum's 65-byte
// r‖s‖v (v 27 or 28, or 0 or 1), hex with 0x. A high s is refused, as the
// token's ecrecover checks do.
func Recover(digest []byte, sig string) (string, error) {
	raw, err := decodeHex(sig)
	if err != nil || len(raw) != 65 {
		return "", fmt.Errorf("%w: signature must be 0x and 65 bytes (r, s, v) in hex", ErrMalformed)
	}
	v := raw[64]
	if v < 27 {
		v += 27
	}
	if v != 27 && v != 28 {
		return "", fmt.Errorf("%w: signature v must be 27 or 28", ErrMalformed)
	}
	if new(big.Int).SetBytes(raw[32:64]).Cmp(halfN) > 0 {
		return "", fmt.Errorf("%w: signature s is in the upper half of the curve order", ErrMalformed)
	}
	compact := append([]byte{v}, raw[:64]...)
	pub, _, err := ecdsa.RecoverCompact(compact, digest)
	if err != nil {
		return "", fmt.Errorf("%w: signature recovers no key: %v", ErrMalformed, err)
	}
	return pubAddress(pub), nil
}

func pubAddress(pub *secp256k1.PublicKey) string {
	return ChecksumAddress(keccak(pub.SerializeUncompressed()[1:])[12:])
}

func decodeHex(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return nil, ErrMalformed
	}
	return hex.DecodeString(s[2:])
}

// Wallet signs x402 payments with a secp256k1 key (an Ethereum externally
// owned account).
type Wallet struct {
	key *secp256k1.PrivateKey
	// Now is the clock the authorization's window starts from (time.Now
	// when nil).
	Now func() time.Time
}

// NewWallet returns the wallet of a private key: 32 bytes as 64 hex
// digits, with or without 0x.
func NewWallet(hexKey string) (*Wallet, error) {
	hexKey = strings.TrimSpace(hexKey)
	hexKey = strings.TrimPrefix(strings.TrimPrefix(hexKey, "0x"), "0X")
	b, err := hex.DecodeString(hexKey)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("x402: a wallet key is 32 bytes as 64 hex digits (0x optional)")
	}
	k := secp256k1.PrivKeyFromBytes(b)
	if k.Key.IsZero() {
		return nil, fmt.Errorf("x402: the wallet key is zero")
	}
	return &Wallet{key: k}, nil
}

// ReadWalletFile reads a wallet key from a file holding its hex (surrounding
// white space ignored).
func ReadWalletFile(path string) (*Wallet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("x402: reading the wallet key: %w", err)
	}
	w, err := NewWallet(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return w, nil
}

// Address is the wallet's address (EIP-55 spelling).
func (w *Wallet) Address() string { return pubAddress(w.key.PubKey()) }

// SignDigest signs a 32-byte digest: Ethereum's r‖s‖v with v 27 or 28, hex
// with 0x. The signature is deterministic (RFC 6979) and low-s.
func (w *Wallet) SignDigest(digest []byte) string {
	c := ecdsa.SignCompact(w.key, digest, false) // [27+recid] ‖ r ‖ s
	return "0x" + hex.EncodeToString(append(c[1:65:65], c[0]))
}

// Pay signs an authorization paying r: exactly MaxAmountRequired of r's
// asset to PayTo, valid from ten minutes ago (clock skew) until
// MaxTimeoutSeconds from now, with a random nonce. It refuses a network or
// asset it does not know (an unknown domain would sign something no token
// accepts) and an EIP-712 domain in Extra that differs from the asset's.
func (w *Wallet) Pay(r Requirements) (PaymentPayload, error) {
	asset, ok := USDC[r.Network]
	switch {
	case r.Scheme != SchemeExact:
		return PaymentPayload{}, fmt.Errorf("x402: scheme %q: this wallet pays %q only", r.Scheme, SchemeExact)
	case !ok:
		return PaymentPayload{}, fmt.Errorf("x402: network %q: this wallet pays on %q or %q", r.Network, NetworkBase, NetworkBaseSepolia)
	case !SameAddress(r.Asset, asset.Address):
		return PaymentPayload{}, fmt.Errorf("x402: asset %s is not USDC on %s (%s)", r.Asset, r.Network, asset.Address)
	case r.Extra.Name != "" && (r.Extra.Name != asset.Name || r.Extra.Version != asset.Version):
		return PaymentPayload{}, fmt.Errorf("x402: EIP-712 domain %q/%q differs from USDC's on %s (%q/%q)", r.Extra.Name, r.Extra.Version, r.Network, asset.Name, asset.Version)
	case !IsAddress(r.PayTo):
		return PaymentPayload{}, fmt.Errorf("x402: payTo %q is not an address", r.PayTo)
	}
	if _, ok := ParseUint(r.MaxAmountRequired); !ok {
		return PaymentPayload{}, fmt.Errorf("x402: maxAmountRequired %q is not an amount", r.MaxAmountRequired)
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	t := now().Unix()
	timeout := r.MaxTimeoutSeconds
	if timeout <= 0 {
		timeout = 60
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return PaymentPayload{}, err
	}
	a := Authorization{
		From:        w.Address(),
		To:          r.PayTo,
		Value:       r.MaxAmountRequired,
		ValidAfter:  strconv.FormatInt(t-600, 10),
		ValidBefore: strconv.FormatInt(t+timeout, 10),
		Nonce:       "0x" + hex.EncodeToString(nonce),
	}
	d, err := AssetDigest(a, asset)
	if err != nil {
		return PaymentPayload{}, err
	}
	return PaymentPayload{
		X402Version: Version,
		Scheme:      SchemeExact,
		Network:     r.Network,
		Payload:     ExactPayload{Signature: w.SignDigest(d), Authorization: a},
	}, nil
}

// PaymentHeader is Pay encoded as an X-PAYMENT header value.
func (w *Wallet) PaymentHeader(r Requirements) (string, error) {
	p, err := w.Pay(r)
	if err != nil {
		return "", err
	}
	return Encode(p)
}
