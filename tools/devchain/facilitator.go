package main

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// The x402 v1 wire types, written here from the specification rather than
// shared with the server, so that the server's encoding is checked against
// a second reading of it.
type authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

type paymentPayload struct {
	X402Version int    `json:"x402Version"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
	Payload     struct {
		Signature     string        `json:"signature"`
		Authorization authorization `json:"authorization"`
	} `json:"payload"`
}

type requirements struct {
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	MaxAmountRequired string `json:"maxAmountRequired"`
	PayTo             string `json:"payTo"`
	Asset             string `json:"asset"`
	Extra             struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"extra"`
}

type facilitatorRequest struct {
	X402Version         int            `json:"x402Version"`
	PaymentPayload      paymentPayload `json:"paymentPayload"`
	PaymentRequirements requirements   `json:"paymentRequirements"`
}

type verifyResponse struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

type settleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
}

// checked is a payment that passed verification, ready to send.
type checked struct {
	from, to             common.Address
	value, after, before *big.Int
	nonce                [32]byte
	v                    uint8
	r, s                 [32]byte
}

// verify checks a payment as the x402 `exact` EVM scheme says (spec §6.1.2):
// requirements, recipient, exact value, time window, signature, nonce
// unused on chain, balance, and a simulation of the transfer. The caller
// holds mu, so the chain does not move under it.
func (c *chain) verify(ctx context.Context, req facilitatorRequest) (checked, string) {
	p, q := req.PaymentPayload, req.PaymentRequirements
	a := p.Payload.Authorization
	var k checked
	switch {
	case req.X402Version != 1 || p.X402Version != 1:
		return k, "invalid_x402_version"
	case p.Scheme != "exact" || q.Scheme != "exact":
		return k, "unsupported_scheme"
	case p.Network != network || q.Network != network:
		return k, "invalid_network"
	case !strings.EqualFold(q.Asset, tokenAddress.Hex()) || q.Extra.Name != "USDC" || q.Extra.Version != "2":
		return k, "invalid_payment_requirements"
	}
	var err error
	if k.from, err = parseAddr(a.From); err != nil {
		return k, "invalid_payload"
	}
	if k.to, err = parseAddr(a.To); err != nil {
		return k, "invalid_payload"
	}
	nums := make([]*big.Int, 3)
	for i, s := range []string{a.Value, a.ValidAfter, a.ValidBefore} {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok || v.Sign() < 0 || v.BitLen() > 256 {
			return k, "invalid_payload"
		}
		nums[i] = v
	}
	k.value, k.after, k.before = nums[0], nums[1], nums[2]
	nonce, err := hexutil.Decode(a.Nonce)
	if err != nil || len(nonce) != 32 {
		return k, "invalid_payload"
	}
	copy(k.nonce[:], nonce)
	payTo, err := parseAddr(q.PayTo)
	if err != nil {
		return k, "invalid_payment_requirements"
	}
	if k.to != payTo {
		return k, "invalid_exact_evm_payload_recipient_mismatch"
	}
	if want, ok := new(big.Int).SetString(q.MaxAmountRequired, 10); !ok || k.value.Cmp(want) != 0 {
		return k, "invalid_exact_evm_payload_authorization_value"
	}
	now := big.NewInt(time.Now().Unix())
	if k.before.Cmp(new(big.Int).Add(now, big.NewInt(6))) < 0 {
		return k, "invalid_exact_evm_payload_authorization_valid_before"
	}
	if k.after.Cmp(now) > 0 {
		return k, "invalid_exact_evm_payload_authorization_valid_after"
	}
	sig, err := hexutil.Decode(p.Payload.Signature)
	if err != nil || len(sig) != 65 {
		return k, "invalid_exact_evm_payload_signature"
	}
	digest := typedDataDigest(k.from, k.to, k.value, k.after, k.before, k.nonce)
	if signer, err := recoverSigner(digest, sig); err != nil || signer != k.from {
		return k, "invalid_exact_evm_payload_signature"
	}
	copy(k.r[:], sig[:32])
	copy(k.s[:], sig[32:64])
	k.v = sig[64]
	if k.v < 27 {
		k.v += 27
	}
	used, err := c.call(ctx, "authorizationState", k.from, k.nonce)
	if err != nil {
		return k, "unexpected_verify_error"
	}
	if used[0].(bool) {
		return k, "invalid_transaction_state"
	}
	bal, err := c.call(ctx, "balanceOf", k.from)
	if err != nil {
		return k, "unexpected_verify_error"
	}
	if bal[0].(*big.Int).Cmp(k.value) < 0 {
		return k, "insufficient_funds"
	}
	// The simulation catches what the checks above do not (e.g. the token's
	// own view of the time window).
	if _, err := c.call(ctx, "transferWithAuthorization", k.from, k.to, k.value, k.after, k.before, k.nonce, k.v, k.r, k.s); err != nil {
		return k, "invalid_transaction_state"
	}
	return k, ""
}

func (c *chain) settle(ctx context.Context, req facilitatorRequest) settleResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := settleResponse{Network: req.PaymentPayload.Network, Payer: req.PaymentPayload.Payload.Authorization.From}
	k, reason := c.verify(ctx, req)
	if reason != "" {
		res.ErrorReason = reason
		return res
	}
	data, err := c.token.Pack("transferWithAuthorization", k.from, k.to, k.value, k.after, k.before, k.nonce, k.v, k.r, k.s)
	if err != nil {
		res.ErrorReason = "unexpected_settle_error"
		return res
	}
	rcpt, err := c.send(ctx, data)
	if err != nil {
		res.ErrorReason = "unexpected_settle_error"
		return res
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		res.ErrorReason, res.Transaction = "invalid_transaction_state", rcpt.TxHash.Hex()
		return res
	}
	res.Success, res.Transaction, res.Payer = true, rcpt.TxHash.Hex(), k.from.Hex()
	return res
}

// readMethods are the JSON-RPC methods /rpc forwards.
var readMethods = []string{"eth_call", "eth_getLogs", "eth_blockNumber", "eth_chainId", "eth_getTransactionReceipt", "eth_getBalance"}

func newHandler(c *chain) http.Handler {
	mux := http.NewServeMux()
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
			http.Error(w, `{"error":"invalid_payload"}`, http.StatusBadRequest)
			return false
		}
		return true
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /supported", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"kinds": []any{map[string]any{"x402Version": 1, "scheme": "exact", "network": network}}})
	})
	mux.HandleFunc("POST /verify", func(w http.ResponseWriter, r *http.Request) {
		var req facilitatorRequest
		if !decode(w, r, &req) {
			return
		}
		c.mu.Lock()
		k, reason := c.verify(r.Context(), req)
		c.mu.Unlock()
		res := verifyResponse{IsValid: reason == "", InvalidReason: reason, Payer: req.PaymentPayload.Payload.Authorization.From}
		if reason == "" {
			res.Payer = k.from.Hex()
		}
		reply(w, res)
	})
	mux.HandleFunc("POST /settle", func(w http.ResponseWriter, r *http.Request) {
		var req facilitatorRequest
		if !decode(w, r, &req) {
			return
		}
		reply(w, c.settle(r.Context(), req))
	})
	mux.HandleFunc("POST /mint", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ To, Value string }
		if !decode(w, r, &req) {
			return
		}
		to, err := parseAddr(req.To)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		tx, err := c.Mint(r.Context(), to, req.Value)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply(w, map[string]string{"transaction": tx.Hex()})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if !decode(w, r, &req) {
			return
		}
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if !slices.Contains(readMethods, req.Method) {
			out["error"] = map[string]any{"code": -32601, "message": "method not served by x402-devchain: " + req.Method}
			reply(w, out)
			return
		}
		args := make([]any, len(req.Params))
		for i, p := range req.Params {
			args[i] = p
		}
		var result json.RawMessage
		if err := c.rpc.CallContext(r.Context(), &result, req.Method, args...); err != nil {
			out["error"] = map[string]any{"code": -32000, "message": err.Error()}
		} else {
			out["result"] = result
		}
		reply(w, out)
	})
	return mux
}
