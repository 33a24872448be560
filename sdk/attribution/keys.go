package attribution

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
)

// KeyIDPrefix starts every SDK key id.
const KeyIDPrefix = "sk_"

// keyIDHashBytes is how many leading bytes of sha256(public key) a key id
// carries: 15 bytes = 120 bits = exactly 20 base64url characters.
const keyIDHashBytes = 15

// PEMBlockType is the PEM type of a private key file (PKCS #8).
const PEMBlockType = "PRIVATE KEY"

// KeyPair is an app's SDK key: an Ed25519 key pair and its id. The public
// half is registered with the app; the private half ships inside the app
// and signs its click tokens, install countersignatures and heartbeats.
type KeyPair struct {
	// ID is KeyID(Public), the JWS "kid" of everything the key signs.
	ID      string
	Public  ed25519.PublicKey
	Private ed25519.PrivateKey
}

// GenerateKey makes a new SDK key pair from 32 bytes of random (nil means
// crypto/rand). The CLI's `xpromo keys sdk new` calls it.
func GenerateKey(random io.Reader) (KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return KeyPair{}, fmt.Errorf("attribution: generate key: %w", err)
	}
	return KeyPair{ID: KeyID(pub), Public: pub, Private: priv}, nil
}

// KeyPairFromPrivate rebuilds the key pair of a private key.
func KeyPairFromPrivate(priv ed25519.PrivateKey) (KeyPair, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return KeyPair{}, fmt.Errorf("attribution: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	pub := priv.Public().(ed25519.PublicKey)
	return KeyPair{ID: KeyID(pub), Public: pub, Private: priv}, nil
}

// KeyID is the id of an SDK public key: "sk_" followed by the base64url
// (unpadded) of the first 15 bytes of SHA-256 over the raw 32-byte key, 23
// characters in all. Anyone holding the public key can recompute it, so a
// verifier checks that a token's kid names the key it verifies with.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return KeyIDPrefix + b64(sum[:keyIDHashBytes])
}

// EncodePublicKey is the transport form of a public key: the raw 32 bytes
// in unpadded base64url (43 characters), the "x" of its RFC 8037 OKP JWK.
func EncodePublicKey(pub ed25519.PublicKey) string { return b64(pub) }

// ParsePublicKey parses EncodePublicKey's form.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, ok := unb64(s)
	if !ok || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("attribution: public key is not 32 bytes of unpadded base64url")
	}
	return ed25519.PublicKey(b), nil
}

// MarshalPrivateKey is the storage form of a private key: a PEM block
// "PRIVATE KEY" holding PKCS #8 DER (what `openssl genpkey -algorithm
// ed25519` writes, and what OpenSSL, .NET and CryptoKit-based tools read).
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("attribution: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("attribution: marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: PEMBlockType, Bytes: der}), nil
}

// ParsePrivateKey parses MarshalPrivateKey's form: exactly one PEM block
// "PRIVATE KEY" holding an unencrypted PKCS #8 Ed25519 key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("attribution: no PEM block in private key file")
	}
	if block.Type != PEMBlockType {
		return nil, fmt.Errorf("attribution: PEM block is %q, want %q", block.Type, PEMBlockType)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("attribution: data after the PEM block in private key file")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("attribution: parse private key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("attribution: private key is %T, want Ed25519", key)
	}
	return priv, nil
}
