package x402

import (
	"encoding/json"
	"testing"

	wire "github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/jsonbound"
)

// FuzzAnswers: whatever the facilitator, the chain or the rate endpoint
// answers, within the bounds every answer is read under, decoding it
// returns a value or an error, never a panic; and a settlement it decodes
// as a success names a transaction or is ErrUnknown.
func FuzzAnswers(f *testing.F) {
	for _, s := range []string{
		`{"success":true,"transaction":"0xabc","network":"base-sepolia","payer":"0x1"}`,
		`{"success":true,"transaction":""}`, `{"isValid":false}`, `{"jsonrpc":"2.0","id":1,"result":"0x10"}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}`, `{"rate":"1.0843"}`, `{"rate":1e400}`,
		`[[[[`, `{"success":[{"a":{}}]}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if jsonbound.Check(raw, jsonbound.Answer) != nil {
			return // refused before any decoder runs
		}
		var r wire.SettleResponse
		_ = decodeAnswer("/settle", 200, raw, &r, func(m map[string]json.RawMessage) bool { _, ok := m["success"]; return ok })
		var out string
		_ = decodeRPC("eth_call", "200 OK", raw, &out)
		if rate, err := parseRate(raw); err == nil && (rate.Sign() <= 0 || len(rate.String()) > 200) {
			t.Fatalf("%q: rate %v accepted", raw, rate)
		}
	})
}
