package x402

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	wire "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/jsonbound"
)

// Chain reads an EIP-3009 token's state over Ethereum JSON-RPC: whether an
// authorization was used, and the transaction that used it. The
// reconciliation pass asks it about settlements whose outcome is unknown.
type Chain struct {
	// URL is the chain's JSON-RPC endpoint (e.g. https://sepolia.base.org).
	URL string
	// HTTP sends the requests: the server's outbound client.
	HTTP *http.Client
	// Lookback is how many blocks back from the newest eth_getLogs searches
	// for the AuthorizationUsed event (0: 20,000, about 11 hours on Base).
	Lookback uint64
}

var (
	selAuthorizationState  = wire.Keccak256([]byte("authorizationState(address,bytes32)"))[:4]
	selBalanceOf           = wire.Keccak256([]byte("balanceOf(address)"))[:4]
	topicAuthorizationUsed = "0x" + hex.EncodeToString(wire.Keccak256([]byte("AuthorizationUsed(address,bytes32)")))
)

func word(addr string) string { return strings.Repeat("0", 24) + strings.ToLower(addr[2:]) }

// AuthorizationUsed reports whether the token asset has used the
// authorization (from, nonce), and the hash of the transaction that used it
// when its AuthorizationUsed event is within Lookback blocks ("" if not).
func (c *Chain) AuthorizationUsed(ctx context.Context, asset, from, nonce string) (used bool, tx string, err error) {
	if !wire.IsAddress(asset) || !wire.IsAddress(from) || len(nonce) != 66 {
		return false, "", fmt.Errorf("x402: chain query for a malformed authorization")
	}
	var out string
	data := "0x" + hex.EncodeToString(selAuthorizationState) + word(from) + strings.ToLower(nonce[2:])
	if err := c.call(ctx, "eth_call", []any{map[string]string{"to": asset, "data": data}, "latest"}, &out); err != nil {
		return false, "", err
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(out, "0x"), 16)
	if !ok {
		return false, "", fmt.Errorf("x402: authorizationState answered %q", out)
	}
	if v.Sign() == 0 {
		return false, "", nil
	}
	var head string
	if err := c.call(ctx, "eth_blockNumber", []any{}, &head); err != nil {
		return true, "", err
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(head, "0x"), 16)
	if !ok {
		return true, "", fmt.Errorf("x402: eth_blockNumber answered %q", head)
	}
	back := c.Lookback
	if back == 0 {
		back = 20_000
	}
	start := new(big.Int).Sub(n, new(big.Int).SetUint64(back))
	if start.Sign() < 0 {
		start.SetInt64(0)
	}
	var logs []struct {
		TransactionHash string `json:"transactionHash"`
	}
	filter := map[string]any{
		"address": asset, "fromBlock": "0x" + start.Text(16), "toBlock": "latest",
		"topics": []any{topicAuthorizationUsed, "0x" + word(from), strings.ToLower(nonce)},
	}
	if err := c.call(ctx, "eth_getLogs", []any{filter}, &logs); err != nil {
		return true, "", err
	}
	if len(logs) > 0 {
		tx = logs[0].TransactionHash
	}
	return true, tx, nil
}

// BalanceOf returns an address's balance of the token asset (atomic units).
func (c *Chain) BalanceOf(ctx context.Context, asset, owner string) (*big.Int, error) {
	var out string
	data := "0x" + hex.EncodeToString(selBalanceOf) + word(owner)
	if err := c.call(ctx, "eth_call", []any{map[string]string{"to": asset, "data": data}, "latest"}, &out); err != nil {
		return nil, err
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(out, "0x"), 16)
	if !ok {
		return nil, fmt.Errorf("x402: balanceOf answered %q", out)
	}
	return v, nil
}

func (c *Chain) call(ctx context.Context, method string, params []any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("x402: chain RPC URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("x402: chain %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := jsonbound.Read(resp.Body, MaxChainAnswerBytes, jsonbound.Answer)
	if err != nil {
		return fmt.Errorf("x402: chain %s: %w", method, err)
	}
	return decodeRPC(method, resp.Status, raw, out)
}

// decodeRPC reads a JSON-RPC answer (raw, already within jsonbound.Answer)
// into out.
func decodeRPC(method, status string, raw []byte, out any) error {
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("x402: chain %s answered %s, not JSON-RPC", method, status)
	}
	if r.Error != nil {
		return fmt.Errorf("x402: chain %s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	return json.Unmarshal(r.Result, out)
}
