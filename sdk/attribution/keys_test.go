package attribution

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	seed := bytes.Repeat([]byte{0x2a}, ed25519.SeedSize)
	kp, err := GenerateKey(bytes.NewReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kp.Private.Seed(), seed) || !kp.Public.Equal(kp.Private.Public()) {
		t.Error("GenerateKey does not use the reader's 32 bytes as seed")
	}
	if kp.ID != KeyID(kp.Public) || !strings.HasPrefix(kp.ID, KeyIDPrefix) || len(kp.ID) != 23 {
		t.Errorf("ID = %q", kp.ID)
	}
	a, _ := GenerateKey(nil)
	b, _ := GenerateKey(rand.Reader)
	if a.ID == b.ID || a.Public.Equal(b.Public) {
		t.Error("two random keys are equal")
	}
	if _, err := GenerateKey(bytes.NewReader(seed[:10])); err == nil {
		t.Error("GenerateKey from a short reader")
	}
	if _, err := KeyPairFromPrivate(ed25519.PrivateKey{1}); err == nil {
		t.Error("KeyPairFromPrivate of a short key")
	}
}

func TestPublicKeyEncoding(t *testing.T) {
	s := EncodePublicKey(pubKeys.Public)
	if len(s) != 43 {
		t.Errorf("encoded public key %q", s)
	}
	got, err := ParsePublicKey(s)
	if err != nil || !got.Equal(pubKeys.Public) {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	for _, bad := range []string{"", s + "=", s[:42], s + "AA", strings.ReplaceAll(s, "-", "+"), nonCanonical(s)} {
		if bad == s {
			continue
		}
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
}

// RFC 8410 §10.3 example: the PKCS #8 form every OpenSSL-compatible tool
// reads and writes.
const rfc8410PEM = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
-----END PRIVATE KEY-----
`

func TestPrivateKeyPEM(t *testing.T) {
	priv, err := ParsePrivateKey([]byte(rfc8410PEM))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(priv.Seed()) != "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842" {
		t.Errorf("seed = %x", priv.Seed())
	}
	if hex.EncodeToString(priv.Public().(ed25519.PublicKey)) != "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1" {
		t.Errorf("public = %x", priv.Public())
	}
	out, err := MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != rfc8410PEM {
		t.Errorf("MarshalPrivateKey:\n%s\nwant\n%s", out, rfc8410PEM)
	}

	// Round trip of a generated key.
	out, _ = MarshalPrivateKey(pubKeys.Private)
	back, err := ParsePrivateKey(out)
	if err != nil || !back.Equal(pubKeys.Private) {
		t.Fatalf("round trip: %v", err)
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	for name, bad := range map[string]string{
		"empty":         "",
		"not PEM":       "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp",
		"public key":    strings.ReplaceAll(rfc8410PEM, "PRIVATE", "PUBLIC"),
		"two blocks":    rfc8410PEM + rfc8410PEM,
		"P-256 key":     string(pem.EncodeToMemory(&pem.Block{Type: PEMBlockType, Bytes: ecDER})),
		"garbage DER":   string(pem.EncodeToMemory(&pem.Block{Type: PEMBlockType, Bytes: []byte{0x30, 0x01}})),
		"trailing text": rfc8410PEM + "junk",
	} {
		if _, err := ParsePrivateKey([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := MarshalPrivateKey(ed25519.PrivateKey{1}); err == nil {
		t.Error("marshalled a short key")
	}
}

// RFC 8037 appendix A.4: the A.1 key signs "Example of Ed25519 signing"
// under the header {"alg":"EdDSA"}. Our encoder and signer reproduce the
// RFC's compact JWS byte for byte, and our verifier accepts it: the token
// machinery interoperates with every RFC 8037 implementation.
func TestRFC8037Vector(t *testing.T) {
	const (
		d       = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
		x       = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
		compact = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc." +
			"hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
	)
	seed, ok := unb64(d)
	if !ok {
		t.Fatal("d")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub, err := ParsePublicKey(x)
	if err != nil || !pub.Equal(priv.Public()) {
		t.Fatalf("x is not the public key of d: %v", err)
	}
	if got := signCompact(priv, []byte(`{"alg":"EdDSA"}`), []byte("Example of Ed25519 signing")); got != compact {
		t.Errorf("signed:\n got %s\nwant %s", got, compact)
	}
	j, err := splitCompact(compact)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := decodeObject(j.HeaderJSON, &h, "alg"); err != nil || h.Alg != AlgEdDSA {
		t.Fatalf("header %s: %v", j.HeaderJSON, err)
	}
	if string(j.PayloadJSON) != "Example of Ed25519 signing" || j.Encode() != compact {
		t.Error("decoding")
	}
	if !verifyEd25519(pub, j) {
		t.Error("our verifier refuses the RFC 8037 A.4 signature")
	}
	j.Signature[0] ^= 1
	if verifyEd25519(pub, j) {
		t.Error("our verifier accepts a corrupted signature")
	}
	// The profile parser refuses it: no kid, no typ, not an xpromo message.
	_, err = ParseClick(compact)
	wantErr(t, err, CodeBadSignature, ReasonMalformed)
}
