package mcpserver

import (
	"encoding/json"
	"testing"
)

// FuzzArguments: whatever an agent sends as a tool's arguments is either
// refused with one of the codes the API uses for it or mapped onto the REST
// request without losing an argument: each goes to the body, the query, a
// header or the path.
func FuzzArguments(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[1]`, `{"app_id":"app_1","limit":0}`, `{"app_id":7}`,
		`{"app_id":"a","amount_cents":123456789012345678901234567890,"prefer_x402":"yes"}`,
		`{"campaign_id":"c","colour":"blue"}`, `{"period":{"x":1},"app_id":"a"}`,
	} {
		for i := range allTools() {
			f.Add(i, seed)
		}
	}
	tools := allTools()
	f.Fuzz(func(t *testing.T, i int, raw string) {
		if i < 0 || i >= len(tools) {
			return
		}
		tl := tools[i]
		args, err := decodeArguments(json.RawMessage(raw))
		if err != nil {
			return
		}
		if bad, refused := checkArguments(tl.params, args); refused {
			switch bad.code {
			case codeMissingField, codeUnknownField, codeInvalidType:
			default:
				t.Fatalf("%s %s: unexpected code %q", tl.name, raw, bad.code)
			}
			return
		}
		a := arguments{values: args, params: tl.params}
		body, query := a.body(), a.query()
		for name := range args {
			_, inBody := body[name]
			_, inQuery := query[name]
			known := false
			for _, p := range tl.params {
				if p.name == name && (p.in == inPath || p.in == inHeader) {
					known = true
				}
			}
			if !inBody && !inQuery && !known {
				t.Fatalf("%s %s: argument %q goes nowhere", tl.name, raw, name)
			}
		}
	})
}
