package openapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The document is also the server's table of what each operation accepts:
// whether it takes a body, which query parameters it defines, and the bounds
// of every string and array of its body (docs/errors.md, "Input policy").
// Operations reads that much of it; it does not validate the document
// (openapi_test.go does).

// Operation is what the document says one operation accepts.
type Operation struct {
	ID     string
	Method string // upper case
	Path   string // as documented: /v1/apps/{app_id}/score
	// Body is the schema of the application/json request body, nil when the
	// operation takes no body.
	Body *Schema
	// Query holds the query parameters the operation defines, by name; the
	// document defines no repeatable one.
	Query map[string]*Schema
	// PathParams holds the path parameters, by name.
	PathParams map[string]*Schema
	// Headers holds the header parameters, by canonical name
	// (Idempotency-Key, X-Payment).
	Headers map[string]*Schema
}

// Schema is the part of a JSON Schema the server enforces on input. Use
// Rules to read it: a schema may reference another ($ref), combine several
// (allOf) or offer alternatives (oneOf, anyOf).
type Schema struct {
	Ref        string             `json:"$ref"`
	Type       types              `json:"type"`
	Properties map[string]*Schema `json:"properties"`
	Items      *Schema            `json:"items"`
	MaxLength  *int               `json:"maxLength"`
	MaxItems   *int               `json:"maxItems"`
	// Minimum and Maximum bound integers; the domain validators enforce
	// them, each with its own code, so the input policy does not read them.
	Minimum *float64  `json:"minimum"`
	Maximum *float64  `json:"maximum"`
	Pattern string    `json:"pattern"`
	Enum    []any     `json:"enum"`
	AllOf   []*Schema `json:"allOf"`
	OneOf   []*Schema `json:"oneOf"`
	AnyOf   []*Schema `json:"anyOf"`
	// ErrorCode (x-error-code) is the catalogued code a value that breaks
	// this schema's maxLength or pattern, or holds hidden characters, is
	// refused with; without it the input policy's generic codes apply.
	ErrorCode string `json:"x-error-code"`

	target  *Schema        // what Ref names
	pattern *regexp.Regexp // Pattern, compiled
}

// types is a JSON Schema "type": one name or a list of names.
type types []string

func (t *types) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = types{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	*t = many
	return nil
}

// Matches reports whether s (whatever it references) allows values of the
// JSON kind ("string", "number", "array", "object", "boolean", "null"); a
// schema that names no type allows every kind.
func (s *Schema) Matches(kind string) bool {
	for ; s != nil; s = s.target {
		if len(s.Type) > 0 {
			return slices.Contains(s.Type, kind) || (kind == "number" && slices.Contains(s.Type, "integer"))
		}
	}
	return true
}

// Rules returns the schemas whose keywords apply to a value of the given
// JSON kind under s: s, what it references, its allOf members, and its
// oneOf/anyOf alternatives that allow that kind.
func (s *Schema) Rules(kind string) []*Schema {
	var out []*Schema
	var visit func(*Schema)
	visit = func(x *Schema) {
		if x == nil || slices.Contains(out, x) {
			return
		}
		out = append(out, x)
		visit(x.target)
		for _, y := range x.AllOf {
			visit(y)
		}
		for _, y := range append(slices.Clone(x.OneOf), x.AnyOf...) {
			if y.Matches(kind) {
				visit(y)
			}
		}
	}
	visit(s)
	return out
}

// MatchString reports whether v matches the schema's own pattern (true
// when it has none).
func (s *Schema) MatchString(v string) bool {
	return s.pattern == nil || s.pattern.MatchString(v)
}

type parameter struct {
	Ref    string  `json:"$ref"`
	Name   string  `json:"name"`
	In     string  `json:"in"`
	Schema *Schema `json:"schema"`
}

type operationDoc struct {
	OperationID string       `json:"operationId"`
	Parameters  []*parameter `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema *Schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]*Schema    `json:"schemas"`
		Parameters map[string]*parameter `json:"parameters"`
	} `json:"components"`
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operations returns every operation of the document, parsed once.
var Operations = sync.OnceValues(func() ([]*Operation, error) { return parseOperations(Document) })

func parseOperations(raw []byte) ([]*Operation, error) {
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	r := resolver{doc: &doc, seen: map[*Schema]bool{}}
	for _, s := range doc.Components.Schemas {
		r.schema(s)
	}
	var out []*Operation
	for path, item := range doc.Paths {
		var shared []*parameter
		if p, ok := item["parameters"]; ok {
			if err := json.Unmarshal(p, &shared); err != nil {
				return nil, fmt.Errorf("openapi: %s parameters: %w", path, err)
			}
		}
		for _, m := range methods {
			rawOp, ok := item[m]
			if !ok {
				continue
			}
			var od operationDoc
			if err := json.Unmarshal(rawOp, &od); err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", m, path, err)
			}
			op := &Operation{ID: od.OperationID, Method: strings.ToUpper(m), Path: path,
				Query: map[string]*Schema{}, PathParams: map[string]*Schema{}, Headers: map[string]*Schema{}}
			for _, p := range append(slices.Clone(shared), od.Parameters...) {
				p = r.parameter(p)
				switch p.In {
				case "query":
					op.Query[p.Name] = p.Schema
				case "path":
					op.PathParams[p.Name] = p.Schema
				case "header":
					op.Headers[textproto.CanonicalMIMEHeaderKey(p.Name)] = p.Schema
				}
			}
			if od.RequestBody != nil {
				if c, ok := od.RequestBody.Content["application/json"]; ok {
					op.Body = cmp.Or(c.Schema, &Schema{})
					r.schema(op.Body)
				} else {
					op.Body = &Schema{} // a body of another type: any body is allowed
				}
			}
			out = append(out, op)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	slices.SortFunc(out, func(a, b *Operation) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	return out, nil
}

// resolver links each $ref to its target and compiles the patterns.
type resolver struct {
	doc  *document
	seen map[*Schema]bool
	err  error
}

func (r *resolver) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("openapi: "+format, args...)
	}
}

func (r *resolver) parameter(p *parameter) *parameter {
	if p.Ref != "" {
		name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
		target := r.doc.Components.Parameters[name]
		if !ok || target == nil {
			r.fail("unresolved parameter %s", p.Ref)
			return &parameter{}
		}
		p = target
	}
	r.schema(p.Schema)
	return p
}

func (r *resolver) schema(s *Schema) {
	if s == nil || r.seen[s] {
		return
	}
	r.seen[s] = true
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		if s.target = r.doc.Components.Schemas[name]; !ok || s.target == nil {
			r.fail("unresolved schema %s", s.Ref)
		}
		r.schema(s.target)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			r.fail("pattern %q: %v", s.Pattern, err)
		}
		s.pattern = re
	}
	for _, p := range s.Properties {
		r.schema(p)
	}
	r.schema(s.Items)
	for _, list := range [][]*Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for _, x := range list {
			r.schema(x)
		}
	}
}
