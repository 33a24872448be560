package x402_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wire "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/internal/testtool"
	"github.com/xpromo/xpromo/server/x402"
	"github.com/xpromo/xpromo/server/x402/x402test"
)

const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

var now = time.Unix(1_800_000_000, 0)

func requirements() wire.Requirements {
	a := wire.USDC[wire.NetworkBaseSepolia]
	return wire.Requirements{Scheme: "exact", Network: a.Network, MaxAmountRequired: "54000000", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		MaxTimeoutSeconds: 300, Asset: a.Address, Extra: wire.Extra{Name: a.Name, Version: a.Version}}
}

func signed(t *testing.T, q wire.Requirements, at time.Time) wire.PaymentPayload {
	t.Helper()
	w, err := wire.NewWallet(key)
	require.NoError(t, err)
	w.Now = func() time.Time { return at }
	p, err := w.Pay(q)
	require.NoError(t, err)
	return p
}

func TestCheck(t *testing.T) {
	q := requirements()
	p := signed(t, q, now)
	from, err := x402.Check(p, q, now)
	require.NoError(t, err)
	assert.Equal(t, "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", from)

	for _, c := range []struct {
		name   string
		edit   func(p *wire.PaymentPayload)
		at     time.Time
		code   string
		status int
	}{
		{"version 2", func(p *wire.PaymentPayload) { p.X402Version = 2 }, now, apperr.X402NetworkMismatch, 422},
		{"scheme", func(p *wire.PaymentPayload) { p.Scheme = "upto" }, now, apperr.X402NetworkMismatch, 422},
		{"network", func(p *wire.PaymentPayload) { p.Network = "base" }, now, apperr.X402NetworkMismatch, 422},
		{"payee", func(p *wire.PaymentPayload) {
			p.Payload.Authorization.To = "0x1111111111111111111111111111111111111111"
		}, now, apperr.X402WrongPayee, 422},
		{"more value", func(p *wire.PaymentPayload) { p.Payload.Authorization.Value = "54000001" }, now, apperr.X402WrongAmount, 422},
		{"leading zero", func(p *wire.PaymentPayload) { p.Payload.Authorization.Value = "054000000" }, now, apperr.InvalidPaymentHeader, 400},
		{"expired", nil, now.Add(300*time.Second - 5*time.Second), apperr.X402Expired, 422},
		{"not yet valid", nil, now.Add(-601 * time.Second), apperr.X402NotYetValid, 422},
		{"window too long", func(p *wire.PaymentPayload) { p.Payload.Authorization.ValidBefore = "1800000400" }, now, apperr.X402WindowTooLong, 422},
		{"signature of another message", func(p *wire.PaymentPayload) { p.Payload.Authorization.ValidAfter = "1799999401" }, now, apperr.X402BadSignature, 422},
		{"short signature", func(p *wire.PaymentPayload) { p.Payload.Signature = p.Payload.Signature[:100] }, now, apperr.X402BadSignature, 422},
		{"bad nonce", func(p *wire.PaymentPayload) { p.Payload.Authorization.Nonce = "0x01" }, now, apperr.InvalidPaymentHeader, 400},
		{"bad from", func(p *wire.PaymentPayload) { p.Payload.Authorization.From = "0x2c75" }, now, apperr.InvalidPaymentHeader, 400},
	} {
		p := signed(t, q, now)
		if c.edit != nil {
			c.edit(&p)
		}
		_, err := x402.Check(p, q, c.at)
		require.Error(t, err, c.name)
		assert.Equal(t, c.code, apperr.Code(err), "%s: %v", c.name, err)
		assert.Equal(t, c.status, apperr.HTTPStatus(err), c.name)
	}

	// Signed for Base mainnet's USDC but sent as Base Sepolia's: named.
	base := wire.USDC[wire.NetworkBase]
	mq := q
	mq.Network, mq.Asset, mq.Extra = base.Network, base.Address, wire.Extra{Name: base.Name, Version: base.Version}
	mp := signed(t, mq, now)
	mp.Network = wire.NetworkBaseSepolia
	_, err = x402.Check(mp, q, now)
	assert.Equal(t, apperr.X402NetworkMismatch, apperr.Code(err))
	assert.Contains(t, err.Error(), "signed for base's USDC")
}

func TestDecode(t *testing.T) {
	p := signed(t, requirements(), now)
	raw, _ := json.Marshal(p)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		got, err := x402.Decode(enc.EncodeToString(raw))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	for _, bad := range []string{
		"", "not base64 !", base64.StdEncoding.EncodeToString([]byte("[1,2]")),
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1,"scheme":"exact","network":"base"}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1,"scheme":"exact","network":"base","payload":{"signature":"0x00","authorization":{}}}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":"1"}`)),
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(" "), 9<<10)),
	} {
		_, err := x402.Decode(bad)
		assert.Equal(t, apperr.InvalidPaymentHeader, apperr.Code(err), "%q: %v", bad, err)
	}
}

// FuzzDecode: whatever the header, Decode answers a payload or
// invalid_payment_header, and Check on what it decodes answers a payer or a
// catalogued code; neither panics.
func FuzzDecode(f *testing.F) {
	q := requirements()
	w, _ := wire.NewWallet(key)
	w.Now = func() time.Time { return now }
	p, _ := w.Pay(q)
	h, _ := wire.Encode(p)
	f.Add(h)
	f.Add("")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1,"scheme":"exact","network":"base-sepolia","payload":{"signature":"0x","authorization":{"from":"0x","to":"0x","value":"1","validAfter":"0","validBefore":"99999999999999999999","nonce":"0x"}}}`)))
	f.Fuzz(func(t *testing.T, h string) {
		p, err := x402.Decode(h)
		if err != nil {
			if apperr.Code(err) != apperr.InvalidPaymentHeader {
				t.Fatalf("Decode(%q): %v", h, err)
			}
			return
		}
		if _, err := x402.Check(p, q, now); err != nil && apperr.HTTPStatus(err) >= 500 {
			t.Fatalf("Check(%+v): %v", p, err)
		}
	})
}

func TestFacilitatorOutcomes(t *testing.T) {
	var status int
	var body string
	fac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.FacilitatorRequest
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.X402Version != 1 || req.PaymentRequirements.PayTo == "" || req.PaymentPayload.Payload.Signature == "" {
			http.Error(w, "bad request body", 400)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	defer fac.Close()
	f := &x402.Facilitator{URL: fac.URL + "/", HTTP: fac.Client()}
	q := requirements()
	p := signed(t, q, now)
	ctx := context.Background()

	status, body = 200, `{"success":true,"transaction":"0xabc","network":"base-sepolia","payer":"0x1"}`
	r, err := f.Settle(ctx, p, q)
	require.NoError(t, err)
	assert.Equal(t, "0xabc", r.Transaction)

	status, body = 200, `{"success":false,"errorReason":"insufficient_funds","transaction":"","network":"base-sepolia","payer":"0x1"}`
	r, err = f.Settle(ctx, p, q)
	require.NoError(t, err, "a refusal is an answer")
	assert.Equal(t, "insufficient_funds", r.ErrorReason)
	status = 400
	_, err = f.Settle(ctx, p, q)
	require.NoError(t, err, "so is a 4xx carrying one")

	for _, c := range []struct {
		status int
		body   string
	}{{502, `{"success":true}`}, {200, `<html>`}, {200, `{"transaction":"0x1"}`}, {200, `{"success":true,"transaction":""}`}} {
		status, body = c.status, c.body
		_, err = f.Settle(ctx, p, q)
		assert.True(t, errors.Is(err, x402.ErrUnknown), "%d %s: %v", c.status, c.body, err)
	}

	status, body = 200, `{"isValid":false,"invalidReason":"insufficient_funds"}`
	v, err := f.Verify(ctx, p, q)
	require.NoError(t, err)
	assert.False(t, v.IsValid)

	fac.Close()
	_, err = f.Settle(ctx, p, q)
	assert.True(t, errors.Is(err, x402.ErrUnknown), "no answer: %v", err)
}

// The devchain's token signs under the domain the server verifies with:
// its DOMAIN_SEPARATOR() is the one computed here for Base Sepolia's USDC.
func TestDevchainDomainSeparator(t *testing.T) {
	d := x402test.Start(t)
	a := wire.USDC[wire.NetworkBaseSepolia]
	want, err := wire.DomainSeparator(a.Name, a.Version, a.ChainID, a.Address)
	require.NoError(t, err)
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + d.Asset + `","data":"0x3644e515"},"latest"]}`
	resp, err := http.Post(d.RPC, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct{ Result string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Equal(t, "0x"+hex.EncodeToString(want), out.Result)
	assert.Equal(t, int64(84532), d.ChainID)
	assert.True(t, wire.SameAddress(d.Asset, a.Address))
}

// The devchain's committed DevUSDC bytecode and ABI are what its Solidity
// source compiles to (tools/devchain/token/build.js --check, solcjs pinned
// by its package-lock.json; scripts/test-deps.sh installs it).
func TestDevUSDCIsBuiltFromItsSource(t *testing.T) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	require.NoError(t, err)
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "tools", "devchain", "token")
	testtool.File(t, filepath.Join(dir, "node_modules", "solc"), "solcjs: npm ci --prefix "+dir+"; scripts/test-deps.sh does it")
	node := testtool.Command(t, "node", "Debian: apt-get install nodejs")
	cmd := exec.Command(node, "build.js", "--check")
	cmd.Dir = dir
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
}

func TestRateSource(t *testing.T) {
	var body string
	status, calls := 200, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	src := &x402.RateSource{URL: srv.URL, HTTP: srv.Client(), Now: func() time.Time { return now }}
	ctx := context.Background()

	body = `{"rate": "1.0843"}`
	r, err := src.Rate(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1.0843", r.FloatString(4))
	body = `{"rate": 1.2}`
	r, _ = src.Rate(ctx)
	assert.Equal(t, "1.0843", r.FloatString(4), "cached for a minute")
	assert.Equal(t, 1, calls)
	now = now.Add(time.Minute)
	r, err = src.Rate(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1.2000", r.FloatString(4), "a number works too")

	for _, c := range []struct {
		status int
		body   string
	}{{200, `{"rate": "-1"}`}, {200, `{"rate": "lots"}`}, {200, `{}`}, {200, `[1]`}, {500, `{"rate": "1.1"}`}, {200, `{"rate": "1e9"}`}} {
		now = now.Add(time.Minute)
		status, body = c.status, c.body
		_, err := src.Rate(ctx)
		assert.Error(t, err, "%d %s", c.status, c.body)
	}
}
