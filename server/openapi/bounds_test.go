package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/apperr"
)

// unboundedArrays are the arrays of answers that grow with an account's
// history, so no honest maxItems exists: every status change of an app, and
// every SDK key it ever registered (revoked keys stay listed).
var unboundedArrays = []string{
	"/components/schemas/AdminApp/properties/status_history",
	"/components/schemas/SDKKeyList/properties/keys",
}

// visitSchemas calls fn for every JSON object of the document that has a
// "type", with its JSON pointer.
func visitSchemas(t *testing.T, fn func(ptr string, node map[string]any, types []string)) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatal(err)
	}
	escape := strings.NewReplacer("~", "~0", "/", "~1")
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			var types []string
			switch ty := x["type"].(type) {
			case string:
				types = []string{ty}
			case []any:
				for _, e := range ty {
					if s, ok := e.(string); ok {
						types = append(types, s)
					}
				}
			}
			if len(types) > 0 {
				fn(ptr, x, types)
			}
			for k, e := range x {
				walk(ptr+"/"+escape.Replace(k), e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), e)
			}
		}
	}
	walk("", doc)
}

// Every string of the document has a maxLength, every integer a minimum
// and a maximum, every array a maxItems (an enum or a const bounds a value
// too). The server enforces the bounds of what it reads (the input policy;
// TestInputPolicyBounds in server/httpapi sends every one of them broken),
// and the answers' bounds hold because every live answer of the test suites
// is validated against this document.
func TestEveryValueIsBounded(t *testing.T) {
	visitSchemas(t, func(ptr string, node map[string]any, types []string) {
		if node["enum"] != nil || node["const"] != nil {
			return
		}
		for _, ty := range types {
			switch ty {
			case "string":
				if node["maxLength"] == nil {
					t.Errorf("%s: a string without maxLength", ptr)
				}
			case "integer":
				if node["minimum"] == nil || node["maximum"] == nil {
					t.Errorf("%s: an integer without minimum and maximum", ptr)
				}
			case "array":
				if node["maxItems"] == nil && !slices.Contains(unboundedArrays, ptr) {
					t.Errorf("%s: an array without maxItems", ptr)
				}
			}
		}
	})
}

// x-error-code names the catalogued code the input policy answers for a
// field; a pattern of a request body needs one, since the policy has no
// generic code for patterns.
func TestErrorCodesAreCatalogued(t *testing.T) {
	seen := 0
	visitSchemas(t, func(ptr string, node map[string]any, _ []string) {
		code, ok := node["x-error-code"]
		if !ok {
			return
		}
		seen++
		if s, _ := code.(string); !apperr.Known(s) || apperr.Status(s) < 400 || apperr.Status(s) > 499 {
			t.Errorf("%s: x-error-code %v is not a catalogued 4xx code", ptr, code)
		}
	})
	if seen == 0 {
		t.Error("no x-error-code in the document")
	}
	ops, err := Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		walkSchema(op.Body, op.ID, func(path string, s *Schema) {
			if s.Pattern != "" && s.ErrorCode == "" {
				t.Errorf("%s %s: pattern %q without x-error-code", op.ID, path, s.Pattern)
			}
		})
	}
}

// walkSchema calls fn for s and every schema below it, once each.
func walkSchema(s *Schema, path string, fn func(path string, s *Schema)) {
	seen := map[*Schema]bool{}
	var walk func(path string, s *Schema)
	walk = func(path string, s *Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		fn(path, s)
		walk(path, s.target)
		for name, p := range s.Properties {
			walk(path+"."+name, p)
		}
		walk(path+"[]", s.Items)
		for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
			for _, x := range list {
				walk(path, x)
			}
		}
	}
	walk(path, s)
}

// Operations reads the document the way the server's input policy does.
func TestOperations(t *testing.T) {
	ops, err := Operations()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Operation{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	if len(byID) != len(operations) {
		t.Errorf("Operations found %d operations, the document has %d", len(byID), len(operations))
	}
	for id, spec := range operations {
		op := byID[id]
		if op == nil {
			t.Errorf("%s missing", id)
			continue
		}
		if op.Method != spec.method || op.Path != spec.path || (op.Body != nil) != spec.body {
			t.Errorf("%s: %s %s body=%v, want %s %s body=%v", id, op.Method, op.Path, op.Body != nil, spec.method, spec.path, spec.body)
		}
	}

	ledger := byID["get_ledger"]
	if got := slices.Sorted(maps.Keys(ledger.Query)); !slices.Equal(got, []string{"cursor", "from", "limit", "to"}) {
		t.Errorf("get_ledger query parameters = %v", got)
	}
	if len(byID["get_score"].Query) != 0 {
		t.Error("get_score defines no query parameter")
	}
	// A path parameter shared by the path item, through a $ref.
	if s := byID["get_score"].PathParams["app_id"]; s == nil || s.MaxLength == nil || *s.MaxLength != 64 {
		t.Errorf("get_score app_id = %+v", s)
	}

	// Rules follow $ref, and of oneOf only the alternatives of the kind.
	reg := byID["register_app"].Body
	var name *Schema
	for _, r := range reg.Rules("object") {
		if p := r.Properties["name"]; p != nil {
			name = p
		}
	}
	if name == nil || name.ErrorCode != "invalid_name" || *name.MaxLength != 200 {
		t.Fatalf("register_app name = %+v", name)
	}
	alt := &Schema{OneOf: []*Schema{{Type: types{"null"}}, name}}
	if rules := alt.Rules("string"); len(rules) != 2 || rules[1] != name {
		t.Errorf("oneOf rules for a string = %v", rules)
	}
	if rules := alt.Rules("null"); len(rules) != 2 || rules[1].Type[0] != "null" {
		t.Errorf("oneOf rules for null = %v", rules)
	}
	cat := byID["create_campaign"].Body.Rules("object")[1].Properties["categories"]
	if cat.Items == nil || !cat.Items.MatchString("productivity") || cat.Items.MatchString("") || cat.Items.MatchString("Bad Key") {
		t.Error("categories items pattern is not compiled as documented")
	}
}

func TestOperationsRefusesABrokenDocument(t *testing.T) {
	for _, doc := range []string{
		`{"paths":{"/x":{"get":{"parameters":[{"$ref":"#/components/parameters/Nope"}]}}}}`,
		`{"components":{"schemas":{"A":{"$ref":"#/components/schemas/B"}}}}`,
		`{"components":{"schemas":{"A":{"type":"string","pattern":"(("}}}}`,
		`{"paths":`,
	} {
		if _, err := parseOperations([]byte(doc)); err == nil {
			t.Errorf("parseOperations(%s) accepted it", doc)
		}
	}
}

// Every operation documents the answers of the input policy, so that the
// live checks (openapitest) accept them: 400 for every operation (encoding,
// query parameters, a body where none belongs), 404 where a path parameter
// may be too long, 413 and 422 where a body is read.
func TestInputPolicyAnswersAreDocumented(t *testing.T) {
	doc := load(t)
	ops, err := Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		resp := doc.Paths.Find(op.Path).GetOperation(op.Method).Responses
		want := []int{400}
		if len(op.PathParams) > 0 {
			want = append(want, 404)
		}
		if op.Body != nil {
			want = append(want, 413, 422)
		}
		for _, status := range want {
			if resp.Status(status) == nil {
				t.Errorf("%s: no %d answer documented", op.ID, status)
			}
		}
	}
}
