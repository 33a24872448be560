package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// A tool's arguments go to the REST API as they are, and the API judges
// them: the body fields unchanged (json.Number keeps every digit), query
// values as the text a REST caller would put in the URL. So an agent's
// mistake gets the code and message a REST caller gets for the same
// mistake, from the one place that decides them (the API's catalogue), and
// nothing here can disagree with it. mcp-go's input schema validation is
// off for that reason: its messages are its own.
//
// checkArguments refuses only what the API cannot see: a path, query or
// header value that text cannot carry (an object for app_id), a missing
// path segment, an argument a tool without a body does not take. Its
// messages are worded as the API words the same mistake in a body.

// arguments are a tool call's arguments (decoded by decodeArguments, checked
// by checkArguments) and the tool's params.
type arguments struct {
	values map[string]any
	params []param
}

// decodeArguments turns a tool call's arguments (a map, or raw JSON from the
// wire) into JSON values, numbers as json.Number so that no integer loses
// precision.
func decodeArguments(raw any) (map[string]any, error) {
	var b []byte
	switch v := raw.(type) {
	case nil:
		return map[string]any{}, nil
	case json.RawMessage:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(b)) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("the arguments must be a JSON object: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// checkArguments returns the first argument of args the tool's REST call
// cannot carry (see above).
func checkArguments(params []param, args map[string]any) (badArgument, bool) {
	hasBody := slices.ContainsFunc(params, func(p param) bool { return p.in == inBody })
	if !hasBody {
		var unknown []string
		for name := range args {
			if !slices.ContainsFunc(params, func(p param) bool { return p.name == name }) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return badArgument{codeUnknownField, fmt.Sprintf("unknown field %q", unknown[0])}, true
		}
	}
	for _, p := range params {
		v, present := args[p.name]
		switch {
		case p.in == inBody:
			continue // the API's to judge
		case !present:
			if p.required {
				return badArgument{codeMissingField, p.name + " is required"}, true
			}
			continue
		}
		want := "string"
		if t, _ := p.schema["type"].(string); p.in == inHeader && t == "boolean" {
			want = "boolean"
		}
		ok := jsonType(v) == want
		if p.in == inQuery {
			ok = queryText(v)
			// An array parameter (list_events' type) repeats in the query:
			// each item must be text.
			if items, isArray := v.([]any); isArray && p.schema["type"] == "array" {
				ok = !slices.ContainsFunc(items, func(v any) bool { return !queryText(v) })
			}
		}
		if !ok {
			return badArgument{codeInvalidType, fmt.Sprintf("field %q must be a %s, not %s", p.name, want, jsonType(v))}, true
		}
	}
	return badArgument{}, false
}

// queryText reports whether v can be a query value: not null, an object or
// an array.
func queryText(v any) bool {
	_, isObject := v.(map[string]any)
	_, isArray := v.([]any)
	return v != nil && !isObject && !isArray
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if _, err := v.Int64(); err == nil || !strings.ContainsAny(string(v), ".eE") {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// str is a string argument (checked by checkArguments when it is a path or
// header value).
func (a arguments) str(name string) string {
	s, _ := a.values[name].(string)
	return s
}

func (a arguments) bool(name string) bool {
	b, _ := a.values[name].(bool)
	return b
}

func (a arguments) has(name string) bool { _, ok := a.values[name]; return ok }

// topUpAmount is the amount of a top_up body that holds amount_cents, an
// integer of 64 bits, and nothing else: the body xpromo.Client.TopUp sends.
func (a arguments) topUpAmount() (int64, bool) {
	body := a.body()
	n, ok := body["amount_cents"].(json.Number)
	if !ok || len(body) != 1 {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil && !strings.ContainsAny(string(n), ".eE")
}

// body is the JSON body of the tool's REST call: every argument that is not
// a path, query or header param of the tool, unknown ones included (the API
// refuses those with unknown_field).
func (a arguments) body() map[string]any {
	out := map[string]any{}
	for name, v := range a.values {
		i := slices.IndexFunc(a.params, func(p param) bool { return p.name == name })
		if i < 0 || a.params[i].in == inBody {
			out[name] = v
		}
	}
	return out
}

// query is the query string of the tool's REST call: its query params, as
// text (a number as its digits, a boolean as true or false).
func (a arguments) query() url.Values {
	q := url.Values{}
	for _, p := range a.params {
		if v, ok := a.values[p.name]; ok && p.in == inQuery {
			vs, isList := v.([]any) // an array parameter: the name repeats
			if !isList {
				vs = []any{v}
			}
			for _, v := range vs {
				if s, isString := v.(string); isString {
					q.Add(p.name, s)
				} else {
					q.Add(p.name, fmt.Sprint(v))
				}
			}
		}
	}
	return q
}

// badArgument is an argument the tool refuses before calling the API.
type badArgument struct{ code, message string }

func (e badArgument) Error() string { return e.code + ": " + e.message }
