package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// mcp-go validates every tool's arguments against its input schema
// (server.WithInputSchemaValidation) before the tool runs, and answers a
// refusal with a bare message. An agent should get the same stable code the
// REST API gives for the same mistake (below_minimum for a daily budget of 10,
// invalid_platform for "linux", …), so when mcp-go refuses, firstViolation
// finds the refused argument again and names the API's code for it.
//
// It reads the same schemas, and only the keywords those schemas use
// (checkedKeywords; a test keeps the two in step), so it cannot disagree
// with mcp-go about what the schema says; it only has to agree on which
// argument is wrong, and tests check it agrees on validity too.

// checkedKeywords are the JSON Schema keywords firstViolation understands.
// Annotations (description, format, default) do not refuse anything: mcp-go
// does not assert formats, so the API judges dates, URLs and emails.
var checkedKeywords = []string{
	"type", "enum", "const", "minimum", "maximum", "minLength", "maxLength",
	"pattern", "minItems", "maxItems", "items",
	"description", "format", "default",
}

// violation is an argument the input schema refuses, as the API would name it.
type violation struct {
	code    string
	message string
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

// firstViolation returns the first argument of args that params refuse:
// an unknown argument, then a missing required one, then the params in
// order.
func firstViolation(params []param, args map[string]any) (violation, bool) {
	names := make([]string, 0, len(params))
	for _, p := range params {
		names = append(names, p.name)
	}
	var unknown []string
	for k := range args {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return violation{codeUnknownField, fmt.Sprintf("unknown argument %q; this tool takes %s", unknown[0], strings.Join(names, ", "))}, true
	}
	for _, p := range params {
		if _, ok := args[p.name]; !ok && p.required {
			return violation{codeMissingField, fmt.Sprintf("%s is required", p.name)}, true
		}
	}
	for _, p := range params {
		v, ok := args[p.name]
		if !ok {
			continue
		}
		if keyword, msg := check(p.schema, v, p.name); keyword != "" {
			return violation{p.codeFor(keyword), msg}, true
		}
	}
	return violation{}, false
}

// check returns the first keyword of s that v breaks, and a message naming
// path, or "" when v satisfies s.
func check(s schema, v any, path string) (keyword, message string) {
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		return "type", fmt.Sprintf("%s must be %s, not %s", path, typeNames(t), jsonType(v))
	}
	if vs, ok := s["enum"].([]any); ok && !slices.ContainsFunc(vs, func(e any) bool { return equalJSON(e, v) }) {
		return "enum", fmt.Sprintf("%s must be one of %s, not %s", path, list(vs), show(v))
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		return "const", fmt.Sprintf("%s must be %s", path, show(c))
	}
	if n, ok := asRat(v); ok {
		if slices.Contains(typeList(s["type"]), "integer") && n.IsInt() && !n.Num().IsInt64() {
			// As the API refuses it (and before any bound): no integer of
			// the API is wider than 64 bits.
			return "type", fmt.Sprintf("%s must be an integer of at most 64 bits, not %s", path, n.RatString())
		}
		if m, ok := asRat(s["minimum"]); ok && n.Cmp(m) < 0 {
			return "minimum", fmt.Sprintf("%s must be at least %s, not %s", path, m.RatString(), n.RatString())
		}
		if m, ok := asRat(s["maximum"]); ok && n.Cmp(m) > 0 {
			return "maximum", fmt.Sprintf("%s must be at most %s, not %s", path, m.RatString(), n.RatString())
		}
	}
	if str, ok := v.(string); ok {
		n := utf8.RuneCountInString(str)
		if m, ok := asInt(s["minLength"]); ok && n < m {
			if m == 1 {
				return "minLength", fmt.Sprintf("%s must not be empty", path)
			}
			return "minLength", fmt.Sprintf("%s must be at least %d characters", path, m)
		}
		if m, ok := asInt(s["maxLength"]); ok && n > m {
			return "maxLength", fmt.Sprintf("%s must be at most %d characters", path, m)
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(str) {
				return "pattern", fmt.Sprintf("%s must match %s, not %s", path, p, show(v))
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if m, ok := asInt(s["minItems"]); ok && len(arr) < m {
			return "minItems", fmt.Sprintf("%s must list at least %d item(s)", path, m)
		}
		if m, ok := asInt(s["maxItems"]); ok && len(arr) > m {
			return "maxItems", fmt.Sprintf("%s must list at most %d items", path, m)
		}
		if items, ok := s["items"].(schema); ok {
			for i, e := range arr {
				if k, msg := check(items, e, fmt.Sprintf("%s[%d]", path, i)); k != "" {
					return k, msg
				}
			}
		}
	}
	return "", ""
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
	case json.Number, float64, int, int64:
		if r, ok := asRat(v); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(t, v any) bool {
	got := jsonType(v)
	for _, want := range typeList(t) {
		if want == got || (want == "number" && got == "integer") {
			return true
		}
	}
	return false
}

func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeNames(t any) string {
	names := typeList(t)
	for i, n := range names {
		switch n {
		case "integer", "array", "object":
			names[i] = "an " + n
		case "null":
		default:
			names[i] = "a " + n
		}
	}
	return strings.Join(names, " or ")
}

// asRat reads a JSON number exactly (json.Number, or a Go number of a
// schema literal).
func asRat(v any) (*big.Rat, bool) {
	var r big.Rat
	switch v := v.(type) {
	case json.Number:
		if _, ok := r.SetString(string(v)); !ok {
			return nil, false
		}
	case float64:
		if r.SetFloat64(v) == nil {
			return nil, false
		}
	case int:
		r.SetInt64(int64(v))
	case int64:
		r.SetInt64(v)
	default:
		return nil, false
	}
	return &r, true
}

func asInt(v any) (int, bool) {
	if r, ok := asRat(v); ok && r.IsInt() && r.Num().IsInt64() {
		return int(r.Num().Int64()), true
	}
	return 0, false
}

// equalJSON compares a schema literal with an argument value.
func equalJSON(a, b any) bool {
	if x, ok := asRat(a); ok {
		y, ok := asRat(b)
		return ok && x.Cmp(y) == 0
	}
	return a == b
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func list(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = show(v)
	}
	return strings.Join(parts, ", ")
}
