package x402

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
	"time"
)

// The vector of shared research §2.3, produced independently with
// go-ethereum's apitypes and with this package's libraries.
const (
	vectorKey  = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	vectorAddr = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
	vectorDig  = "d0d6736199ffcbebb63e0bc882c06eea921b863a3ff6b942f03e74724ed64a97"
	vectorSig  = "0x4d3907b98e27a72f38ebee6fc104bdc73f5764dbf405395a2fb6a21bed032ace1f68c946264b7b54a74fdd746cd8829f08d60bd55f97d13b3345e2a3dba291431c"
)

var vectorAuth = Authorization{
	From:        vectorAddr,
	To:          "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
	Value:       "10000",
	ValidAfter:  "1740672089",
	ValidBefore: "1740672154",
	Nonce:       "0x0000000000000000000000000000000000000000000000000000000000000001",
}

func TestVector(t *testing.T) {
	w, err := NewWallet(vectorKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Address(); got != vectorAddr {
		t.Fatalf("address %s, want %s", got, vectorAddr)
	}
	d, err := AssetDigest(vectorAuth, USDC[NetworkBaseSepolia])
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(d) != vectorDig {
		t.Fatalf("digest %x, want %s", d, vectorDig)
	}
	if sig := w.SignDigest(d); sig != vectorSig {
		t.Fatalf("signature %s, want %s", sig, vectorSig)
	}
	from, err := Recover(d, vectorSig)
	if err != nil || from != vectorAddr {
		t.Fatalf("recovered %s, %v; want %s", from, err, vectorAddr)
	}
}

func TestRecoverRefusesMalleableAndMalformed(t *testing.T) {
	d, _ := AssetDigest(vectorAuth, USDC[NetworkBaseSepolia])
	raw, _ := hex.DecodeString(vectorSig[2:])
	// s' = N - s and the other parity recover the same key on a lax
	// ecrecover; the token refuses them, so must we.
	n, _ := new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	s := new(big.Int).SetBytes(raw[32:64])
	high := append([]byte{}, raw...)
	new(big.Int).Sub(n, s).FillBytes(high[32:64])
	high[64] ^= 1 // 27 ↔ 28
	if _, err := Recover(d, "0x"+hex.EncodeToString(high)); err == nil {
		t.Fatal("a high-s signature was accepted")
	}
	for _, sig := range []string{"", "0x", vectorSig[:len(vectorSig)-2], vectorSig[:len(vectorSig)-2] + "1d", strings.TrimPrefix(vectorSig, "0x")} {
		if _, err := Recover(d, sig); err == nil {
			t.Fatalf("signature %q was accepted", sig)
		}
	}
	// Another digest recovers another key, never the signer.
	other := vectorAuth
	other.Value = "10001"
	d2, _ := AssetDigest(other, USDC[NetworkBaseSepolia])
	if from, err := Recover(d2, vectorSig); err == nil && from == vectorAddr {
		t.Fatal("a signature over another value recovered the signer")
	}
}

func TestWalletPays(t *testing.T) {
	w, _ := NewWallet(vectorKey)
	w.Now = func() time.Time { return time.Unix(1_800_000_000, 0) }
	a := USDC[NetworkBaseSepolia]
	req := Requirements{Scheme: SchemeExact, Network: a.Network, MaxAmountRequired: "54000000", PayTo: vectorAuth.To,
		MaxTimeoutSeconds: 300, Asset: a.Address, Extra: Extra{Name: a.Name, Version: a.Version}}
	p, err := w.Pay(req)
	if err != nil {
		t.Fatal(err)
	}
	au := p.Payload.Authorization
	if au.Value != "54000000" || au.ValidBefore != "1800000300" || au.ValidAfter != "1799999400" || !SameAddress(au.To, req.PayTo) {
		t.Fatalf("authorization %+v", au)
	}
	d, _ := AssetDigest(au, a)
	if from, err := Recover(d, p.Payload.Signature); err != nil || from != w.Address() {
		t.Fatalf("recovered %s, %v", from, err)
	}
	bad := req
	bad.Extra.Name = "USD Coin" // Base's name on Base Sepolia
	if _, err := w.Pay(bad); err == nil {
		t.Fatal("signed under a domain that is not the asset's")
	}
}
