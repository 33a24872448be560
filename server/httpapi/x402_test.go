package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/mcpserver"
	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/internal/testtool"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
	"github.com/xpromo/xpromo/server/x402/x402test"
)

// These tests pay top-ups for real: the SDK's wallet signs EIP-3009
// authorizations, the server verifies them and settles them through
// x402-devchain's facilitator, which sends transferWithAuthorization to an
// EIP-3009 token on a local EVM chain. Balances are read from the chain.

func newWallet(t *testing.T) *x402.Wallet {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	w, err := x402.NewWallet(hex.EncodeToString(k))
	require.NoError(t, err)
	return w
}

type x402Fixture struct {
	api   *testServer
	chain *x402test.Devchain
	payer *x402.Wallet
	payTo string
	app   string
	key   string
}

const (
	fiftyEUR = 5000       // cents
	quote    = "54000000" // EUR 50 at 1.08, in USDC atomic units
)

// newX402 starts a devchain (the payer funded with 1,000 USDC) and a server
// settling through facilitator (the devchain's when "").
func newX402(t *testing.T, s storage.Store, facilitator string, opts ...func(*assembly.Config)) *x402Fixture {
	t.Helper()
	f := &x402Fixture{payer: newWallet(t), payTo: newWallet(t).Address()}
	f.chain = x402test.Start(t, f.payer.Address()+"=1000000000")
	if facilitator == "" {
		facilitator = f.chain.URL
	}
	cfg := unlimited
	cfg.X402EURUSD, cfg.X402PayTo, cfg.X402Facilitator, cfg.X402RPC = "1.08", f.payTo, facilitator, f.chain.RPC
	for _, o := range opts {
		o(&cfg)
	}
	// The chain's blocks carry the wall clock's time, so the server's clock
	// starts there (and stands still unless a test moves it).
	f.api = serve(t, s, time.Now().UTC().Truncate(time.Second), cfg)
	f.app, f.key = f.api.newApp()
	return f
}

func (f *x402Fixture) client(opts ...xpromo.Option) *xpromo.Client {
	return xpromo.NewClient(f.api.url, append([]xpromo.Option{xpromo.WithAPIKey(f.key), xpromo.WithHTTPClient(f.api.client), xpromo.WithRetries(0)}, opts...)...)
}

// requirements asks the server for a challenge and returns its entry.
func (f *x402Fixture) requirements(t *testing.T) x402.Requirements {
	t.Helper()
	res, err := f.client().TopUp(context.Background(), f.app, &xpromo.TopUpParams{AmountCents: fiftyEUR, PreferX402: true})
	require.NoError(t, err)
	require.True(t, res.PaymentRequired())
	a := res.Challenge.Accepts[0]
	return x402.Requirements{Scheme: a.Scheme, Network: a.Network, MaxAmountRequired: a.MaxAmountRequired, Resource: a.Resource,
		Description: a.Description, MimeType: a.MimeType, PayTo: a.PayTo, MaxTimeoutSeconds: int64(a.MaxTimeoutSeconds),
		Asset: a.Asset, Extra: x402.Extra{Name: a.Extra.Name, Version: a.Extra.Version}}
}

func (f *x402Fixture) pay(header string) response {
	return f.api.do(http.MethodPost, "/v1/apps/"+f.app+"/top-up", f.key, map[string]any{"amount_cents": fiftyEUR}, "X-PAYMENT: "+header)
}

func encode(t *testing.T, p x402.PaymentPayload) string {
	t.Helper()
	h, err := x402.Encode(p)
	require.NoError(t, err)
	return h
}

func (f *x402Fixture) topups(t *testing.T) []xpromo.LedgerLine {
	t.Helper()
	var out []xpromo.LedgerLine
	for _, l := range f.api.ledger(f.app, f.key).Lines {
		if l.Type == "topup" {
			out = append(out, l)
		}
	}
	return out
}

func TestX402TopUpSettlesOnChain(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newX402(t, s, "")
		before := f.chain.Balance(f.payer.Address())

		res, err := f.client(xpromo.WithX402Wallet(f.payer)).TopUp(context.Background(), f.app, &xpromo.TopUpParams{AmountCents: fiftyEUR})
		require.NoError(t, err)
		require.NotNil(t, res.Line, "the SDK paid the 402 and got the topup line")
		assert.Equal(t, xpromo.LineType("topup"), res.Line.Type)
		assert.Equal(t, int64(fiftyEUR), res.Line.AmountCents)
		settle, err := x402.DecodeResponse(res.PaymentResponse)
		require.NoError(t, err)
		assert.True(t, settle.Success)
		assert.Equal(t, "base-sepolia", settle.Network)
		assert.True(t, x402.SameAddress(settle.Payer, f.payer.Address()))
		require.NotEmpty(t, settle.Transaction)
		require.NotNil(t, res.Line.Note)
		assert.Contains(t, *res.Line.Note, settle.Transaction, "the ledger line names the transaction")

		assert.Equal(t, quote, f.chain.Balance(f.payTo).String(), "payTo received exactly the quote")
		assert.Equal(t, new(big.Int).Sub(before, big.NewInt(54_000_000)), f.chain.Balance(f.payer.Address()))
		assert.Len(t, f.topups(t), 1)
	})
}

func TestX402RefusalsMoveNothing(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newX402(t, s, "")
		q := f.requirements(t)
		assert.Equal(t, quote, q.MaxAmountRequired)
		assert.True(t, x402.SameAddress(q.PayTo, f.payTo))
		payerBefore := f.chain.Balance(f.payer.Address())

		refused := func(name, header, code string, status int) {
			t.Helper()
			res := f.pay(header)
			assert.Equal(t, status, res.status, "%s: %s", name, res.body)
			assert.Equal(t, code, res.code(t), name)
		}
		sign := func(w *x402.Wallet, q x402.Requirements) x402.PaymentPayload {
			t.Helper()
			p, err := w.Pay(q)
			require.NoError(t, err)
			return p
		}

		wrongPayee := q
		wrongPayee.PayTo = newWallet(t).Address()
		refused("wrong payee", encode(t, sign(f.payer, wrongPayee)), "x402_wrong_payee", 422)

		tooLittle := q
		tooLittle.MaxAmountRequired = "53999999"
		refused("too little", encode(t, sign(f.payer, tooLittle)), "x402_wrong_amount", 422)

		past := *f.payer
		past.Now = func() time.Time { return time.Now().Add(-time.Hour) }
		refused("expired", encode(t, sign(&past, q)), "x402_expired", 422)
		future := *f.payer
		future.Now = func() time.Time { return time.Now().Add(time.Hour) }
		refused("future", encode(t, sign(&future, q)), "x402_not_yet_valid", 422)

		// Signed by another key in the payer's name.
		forged := sign(newWallet(t), q)
		forged.Payload.Authorization.From = f.payer.Address()
		refused("bad signature", encode(t, forged), "x402_bad_signature", 422)
		tampered := sign(f.payer, q)
		sig, err := hex.DecodeString(tampered.Payload.Signature[2:])
		require.NoError(t, err)
		sig[4] ^= 0xff // another r: always a change
		tampered.Payload.Signature = "0x" + hex.EncodeToString(sig)
		refused("tampered signature", encode(t, tampered), "x402_bad_signature", 422)

		// Base mainnet's USDC, sent as such or passed off as Base Sepolia's.
		mainnet := q
		base := x402.USDC[x402.NetworkBase]
		mainnet.Network, mainnet.Asset, mainnet.Extra = base.Network, base.Address, x402.Extra{Name: base.Name, Version: base.Version}
		onMainnet := sign(f.payer, mainnet)
		refused("other network", encode(t, onMainnet), "x402_network_mismatch", 422)
		onMainnet.Network = x402.NetworkBaseSepolia
		refused("other asset", encode(t, onMainnet), "x402_network_mismatch", 422)

		// A payer without funds: the facilitator refuses.
		broke := sign(newWallet(t), q)
		res := f.pay(encode(t, broke))
		assert.Equal(t, 422, res.status, res.body)
		assert.Equal(t, "x402_settlement_failed", res.code(t))
		assert.Contains(t, res.body, "insufficient_funds")

		res = f.pay("bm90IGpzb24=")
		assert.Equal(t, 400, res.status)
		assert.Equal(t, "invalid_payment_header", res.code(t))

		assert.Equal(t, "0", f.chain.Balance(f.payTo).String(), "nothing moved on chain")
		assert.Equal(t, payerBefore, f.chain.Balance(f.payer.Address()))
		assert.Empty(t, f.topups(t), "nothing was credited")

		// The same authorization twice: credited once, then refused.
		good := encode(t, sign(f.payer, q))
		res = f.pay(good)
		require.Equal(t, 200, res.status, res.body)
		assert.NotEmpty(t, res.header.Get("X-PAYMENT-RESPONSE"))
		refused("replay", good, "x402_replayed", 409)
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
		assert.Len(t, f.topups(t), 1)
	})
}

func TestX402SameAuthorizationAtOnceCreditsOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newX402(t, s, "")
		p, err := f.payer.Pay(f.requirements(t))
		require.NoError(t, err)
		header := encode(t, p)
		var wg sync.WaitGroup
		codes := make([]int, 4)
		for i := range codes {
			wg.Go(func() { codes[i] = f.pay(header).status })
		}
		wg.Wait()
		ok := 0
		for _, c := range codes {
			if c == 200 {
				ok++
			} else {
				assert.Equal(t, 409, c, "the others are refused as replayed or pending")
			}
		}
		assert.Equal(t, 1, ok, "codes %v", codes)
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
		assert.Len(t, f.topups(t), 1)
	})
}

// How a facilitator in front of the devchain's treats one /settle call.
type settleFate int

const (
	settlePass      settleFate = iota // forwarded, answered
	settleCutAfter                    // forwarded (the transfer lands), answered 504
	settleCutBefore                   // not forwarded (nothing lands), answered 504
)

// facade is a facilitator in front of the devchain's (upstream, set once
// the devchain runs) that forwards every call but treats the n-th /settle
// (from 1) as fate(n) says: the server never hears what happened.
func facade(t *testing.T, upstream *string, fate func(n int) settleFate) string {
	t.Helper()
	var mu sync.Mutex
	settles := 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f := settlePass
		if strings.HasSuffix(r.URL.Path, "/settle") {
			mu.Lock()
			settles++
			f = fate(settles)
			mu.Unlock()
		}
		if f == settleCutBefore {
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		resp, err := http.Post(*upstream+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if f == settleCutAfter {
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		w.Write(out)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL
}

func TestX402UnansweredSettlementIsReconciledOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		var upstream string
		f := newX402(t, s, facade(t, &upstream, func(int) settleFate { return settleCutAfter }))
		upstream = f.chain.URL

		p, err := f.payer.Pay(f.requirements(t))
		require.NoError(t, err)
		header := encode(t, p)
		res := f.pay(header)
		assert.Equal(t, 502, res.status, res.body)
		assert.Equal(t, "x402_pending", res.code(t))
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String(), "the transfer landed on chain")
		assert.Empty(t, f.topups(t), "but nothing is credited without a settled answer")
		res = f.pay(header)
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "x402_pending", res.code(t))

		ctx := context.Background()
		rec, err := f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Zero(t, rec.Settled+rec.Failed+rec.Pending, "within the grace the request still owns it")

		f.api.clock.Advance(2 * time.Minute)
		rec, err = f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Settled)
		lines := f.topups(t)
		require.Len(t, lines, 1)
		assert.Equal(t, int64(fiftyEUR), lines[0].AmountCents)
		require.NotNil(t, lines[0].Note)
		assert.Regexp(t, `tx 0x[0-9a-fA-F]{64}`, *lines[0].Note, "the transaction found on chain")

		f.api.clock.Advance(2 * time.Minute)
		rec, err = f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Zero(t, rec.Settled+rec.Failed+rec.Pending)
		res = f.pay(header)
		assert.Equal(t, 409, res.status)
		assert.Equal(t, "x402_replayed", res.code(t))
		assert.Len(t, f.topups(t), 1, "credited once")
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
	})
}

// A settlement that never reached the chain: reconciliation finds the
// authorization unused and, while it is valid, settles it again; one that
// stays unsettled past validBefore fails (next test), and nothing moved.
func TestX402ReconciliationSettlesAgain(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		var upstream string
		cutFirst := func(n int) settleFate {
			if n == 1 {
				return settleCutBefore
			}
			return settlePass
		}
		f := newX402(t, s, facade(t, &upstream, cutFirst))
		upstream = f.chain.URL
		ctx := context.Background()

		p, err := f.payer.Pay(f.requirements(t))
		require.NoError(t, err)
		res := f.pay(encode(t, p))
		require.Equal(t, 502, res.status, res.body)
		assert.Equal(t, "0", f.chain.Balance(f.payTo).String(), "nothing landed")
		f.api.clock.Advance(2 * time.Minute)
		rec, err := f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Settled, "settled again with the stored payment")
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
		assert.Len(t, f.topups(t), 1)
	})
}

func TestX402ReconciliationFailsExpiredUnused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		var upstream string
		f := newX402(t, s, facade(t, &upstream, func(int) settleFate { return settleCutBefore }))
		upstream = f.chain.URL
		ctx := context.Background()

		p, err := f.payer.Pay(f.requirements(t))
		require.NoError(t, err)
		res := f.pay(encode(t, p))
		require.Equal(t, 502, res.status, res.body)
		f.api.clock.Advance(2 * time.Minute)
		rec, err := f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Pending, "still unanswered: pending")
		f.api.clock.Advance(10 * time.Minute) // past validBefore (5 minutes) plus a minute
		rec, err = f.api.built.Payments.ReconcileX402(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, rec.Failed, "expired unused: failed")
		assert.Equal(t, "0", f.chain.Balance(f.payTo).String())
		assert.Empty(t, f.topups(t))
	})
}

// With a rate endpoint, each challenge's amount is a stored quote: the
// payer pays the quote it was given even after the rate moved, cannot pay
// at a rate of its choosing, and a lapsed quote is refused.
func TestX402RateEndpointQuotes(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		var mu sync.Mutex
		rate, up := "1.08", true
		rates := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if !up {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, `{"base":"EUR","quote":"USD","rate":%q}`, rate)
		}))
		t.Cleanup(rates.Close)
		setRate := func(r string, ok bool) { mu.Lock(); rate, up = r, ok; mu.Unlock() }
		f := newX402(t, s, "", func(c *assembly.Config) { c.X402EURUSD, c.X402RateURL = "", rates.URL })

		at108 := f.requirements(t)
		assert.Equal(t, quote, at108.MaxAmountRequired, "EUR 50 at the endpoint's 1.08")
		paid, err := f.payer.Pay(at108)
		require.NoError(t, err)

		setRate("1.20", true)
		f.api.clock.Advance(2 * time.Minute) // past the rate's one-minute cache
		at120 := f.requirements(t)
		assert.Equal(t, "60000000", at120.MaxAmountRequired)

		res := f.pay(encode(t, paid))
		require.Equal(t, 200, res.status, "the quote given at 1.08 is still honoured: %s", res.body)
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String())

		own := at120
		own.MaxAmountRequired = "50000000" // the payer's own rate, 1.00
		p, err := f.payer.Pay(own)
		require.NoError(t, err)
		res = f.pay(encode(t, p))
		assert.Equal(t, 422, res.status)
		assert.Equal(t, "x402_wrong_amount", res.code(t))

		p, err = f.payer.Pay(at120)
		require.NoError(t, err)
		f.api.clock.Advance(10 * time.Minute) // the quote lapsed with its challenge
		res = f.pay(encode(t, p))
		assert.Equal(t, 422, res.status)
		assert.Equal(t, "x402_wrong_amount", res.code(t))
		assert.Equal(t, quote, f.chain.Balance(f.payTo).String(), "only the first payment moved")
		assert.Len(t, f.topups(t), 1)

		setRate("1.20", false)
		f.api.clock.Advance(2 * time.Minute)
		res = f.api.do(http.MethodPost, "/v1/apps/"+f.app+"/top-up", f.key, map[string]any{"amount_cents": fiftyEUR}, "Prefer: payment=x402")
		assert.Equal(t, 503, res.status)
		assert.Equal(t, "x402_unavailable", res.code(t))
	})
}

func TestX402WithoutFacilitatorIsUnavailable(t *testing.T) {
	api := newMoneyAPI(t, storagetest.SQLite(t))
	app, key := api.newApp()
	w := newWallet(t)
	res, err := xpromo.NewClient(api.url, xpromo.WithAPIKey(key), xpromo.WithHTTPClient(api.client), xpromo.WithX402Wallet(w), xpromo.WithRetries(0)).
		TopUp(context.Background(), app, &xpromo.TopUpParams{AmountCents: fiftyEUR})
	assert.Nil(t, res)
	assert.True(t, xpromo.IsCode(err, "x402_unavailable"), "%v", err)
}

// xpromo-mcp given a wallet pays a top-up itself: its top_up tool says so,
// pays the challenge with prefer_x402, and answers the topup line.
func TestX402MCPPaysWithAWallet(t *testing.T) {
	f := newX402(t, storagetest.SQLite(t), "")
	ctx := context.Background()
	connect := func(c *xpromo.Client) (*mcpclient.Client, string) {
		t.Helper()
		mc, err := mcpclient.NewInProcessClient(mcpserver.New(c).MCPServer())
		require.NoError(t, err)
		require.NoError(t, mc.Start(ctx))
		_, err = mc.Initialize(ctx, mcp.InitializeRequest{})
		require.NoError(t, err)
		t.Cleanup(func() { mc.Close() })
		tools, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
		require.NoError(t, err)
		for _, tl := range tools.Tools {
			if tl.Name == "top_up" {
				return mc, tl.Description
			}
		}
		t.Fatal("no top_up tool")
		return nil, ""
	}
	topUp := func(mc *mcpclient.Client, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = "top_up", args
		res, err := mc.CallTool(ctx, req)
		require.NoError(t, err)
		return res
	}

	_, desc := connect(f.client())
	assert.Contains(t, desc, "holds no wallet: it cannot pay an x402 challenge itself")

	mc, desc := connect(f.client(xpromo.WithX402Wallet(f.payer)))
	assert.Contains(t, desc, "holds a wallet ("+f.payer.Address()+")")
	res := topUp(mc, map[string]any{"app_id": f.app, "amount_cents": fiftyEUR})
	require.False(t, res.IsError)
	assert.Contains(t, fmt.Sprint(res.StructuredContent), "checkout_url", "without prefer_x402 nothing is paid")
	assert.Equal(t, "0", f.chain.Balance(f.payTo).String())

	res = topUp(mc, map[string]any{"app_id": f.app, "amount_cents": fiftyEUR, "prefer_x402": true})
	require.False(t, res.IsError, "%+v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var line xpromo.LedgerLine
	require.NoError(t, json.Unmarshal(raw, &line))
	assert.Equal(t, xpromo.LineType("topup"), line.Type)
	assert.Equal(t, int64(fiftyEUR), line.AmountCents)
	assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
	assert.Len(t, f.topups(t), 1)
}

// The official x402 TypeScript client (x402-fetch, tools/x402ts/pay.mjs)
// pays the server's challenge: the wire format is proven against a client
// nobody here wrote. scripts/test-deps.sh installs it (npm ci).
func TestX402OfficialTypeScriptClient(t *testing.T) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	require.NoError(t, err)
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "tools", "x402ts")
	testtool.File(t, filepath.Join(dir, "node_modules", "x402-fetch"), "the x402 TypeScript client: npm ci --prefix "+dir+"; scripts/test-deps.sh does it")
	node := testtool.Command(t, "node", "Debian: apt-get install nodejs")
	f := newX402(t, storagetest.SQLite(t), "")
	k := make([]byte, 32)
	_, err = rand.Read(k)
	require.NoError(t, err)
	payer, err := x402.NewWallet(hex.EncodeToString(k))
	require.NoError(t, err)
	f.chain.Mint(payer.Address(), "100000000")

	cmd := exec.Command(node, "pay.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XPROMO_URL="+f.api.url, "XPROMO_APP_ID="+f.app, "XPROMO_API_KEY="+f.key,
		"X402_PRIVATE_KEY=0x"+hex.EncodeToString(k), "XPROMO_AMOUNT_CENTS=5000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node pay.mjs: %s", stderr.String())
	var got struct {
		Status          int               `json:"status"`
		Body            xpromo.LedgerLine `json:"body"`
		PaymentResponse *x402.SettleResponse
	}
	require.NoError(t, json.Unmarshal(stdout, &got), string(stdout))
	require.Equal(t, 200, got.Status, string(stdout))
	assert.Equal(t, xpromo.LineType("topup"), got.Body.Type)
	assert.Equal(t, int64(fiftyEUR), got.Body.AmountCents)
	require.NotNil(t, got.PaymentResponse, "X-PAYMENT-RESPONSE decoded by x402-fetch")
	assert.True(t, got.PaymentResponse.Success)
	assert.True(t, x402.SameAddress(got.PaymentResponse.Payer, payer.Address()))
	assert.Equal(t, quote, f.chain.Balance(f.payTo).String())
	assert.Len(t, f.topups(t), 1)
}
