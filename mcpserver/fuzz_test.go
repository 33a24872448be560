package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzRefusalAgreesWithValidator feeds arbitrary arguments to every tool and
// checks that firstViolation, which names refused arguments, agrees with
// mcp-go's JSON Schema validator, which decides: arguments the validator
// lets through (the call reaches the API, a closed port: `unavailable`) have
// no violation, and refused ones get the violation's code.
func FuzzRefusalAgreesWithValidator(f *testing.F) {
	seeds := []string{
		`{}`,
		`{"app_id":"app_1"}`,
		`{"app_id":"app_1","amount_cents":5000}`,
		`{"app_id":"app_1","amount_cents":4999.0}`,
		`{"app_id":"app_1","amount_cents":5e3}`,
		`{"app_id":"app_1","categories":["a","b"],"daily_budget_cents":1000,"max_bid_cents":null}`,
		`{"app_id":"app_1","categories":[],"daily_budget_cents":10}`,
		`{"name":"x","platform":"win","bundle_id":"b","domain":"d","download_url":"u","contact_email":"e","category":"a-1"}`,
		`{"app_id":"","limit":1000,"from":"2026-01-01","cursor":"c"}`,
		`{"app_id":"app_1","period":"last_7_days","extra":[1,{"a":null}]}`,
		`{"campaign_id":"cmp_1","idempotency_key":"k"}`,
		`{"app_id":"app_1","amount_cents":-1e400}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	s := newTestServer(f)
	c := connect(f, s)
	tools := allTools()
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tl := tools[int(which)%len(tools)]
		if !json.Valid(raw) || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return
		}
		args, err := decodeArguments(json.RawMessage(raw))
		if err != nil {
			return
		}
		var req mcp.CallToolRequest
		req.Params.Name = tl.name
		req.Params.Arguments = json.RawMessage(raw)
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			return // not a tool call mcp-go can parse (e.g. 1e400): a protocol error, no tool runs
		}
		e := errorOf(t, res)
		v, refused := firstViolation(tl.params, args)
		switch {
		case e.Code == "unavailable":
			if refused {
				t.Fatalf("%s %s: the validator let it through, yet firstViolation says %+v", tl.name, raw, v)
			}
		case refused:
			if e.Code != v.code {
				t.Fatalf("%s %s: code %q, want %q", tl.name, raw, e.Code, v.code)
			}
		case e.Code == "invalid_type" && strings.Contains(e.Message, "64 bits"):
			// The schema's integer does not fit an int64: the tool refuses it.
		default:
			t.Fatalf("%s %s: refused (%+v) but firstViolation finds nothing", tl.name, raw, e)
		}
	})
}
