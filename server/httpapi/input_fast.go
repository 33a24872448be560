package httpapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/textcheck"
)

// decodeFast is the one pass over a request body that the usual request
// takes: it applies the input policy (checkJSON's rules) and decodes into
// dst (encoding/json's) as it goes, without a token allocation each.
//
// It only ever answers "accepted, and dst holds what the two-pass path would
// have decoded", or "not sure": any refusal, and anything it does not handle
// (a field name that matches only case-insensitively, a float, a type with
// its own UnmarshalJSON, a body that is not an object, …), returns false,
// and decodeJSON then runs the two passes (checkJSON, encoding/json) that
// word every refusal. So the codes and messages are the two passes' by
// construction, and FuzzDecodeFast checks that an accepted body is decoded
// exactly as they would decode it.
func decodeFast(raw []byte, schema *openapi.Schema, dst any) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || planOf(v.Type().Elem()) == nil || !utf8.Valid(raw) {
		return false
	}
	d := fastDecoder{b: raw}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	if !d.value(v.Elem(), schema) {
		return false
	}
	d.space()
	return d.i == len(d.b)
}

// typePlan is what decodeFast knows of a Go type; nil: not handled.
type typePlan struct {
	kind   reflect.Kind
	elem   *typePlan      // of a pointer's or a slice's element
	fields []fieldPlan    // of a struct
	byName map[string]int // JSON name → index in fields
	typ    reflect.Type   // for new pointers and slices
}

type fieldPlan struct {
	name  string
	index int
	plan  *typePlan
}

var plans sync.Map // reflect.Type → *typePlan (nil when not handled)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func planOf(t reflect.Type) *typePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan)
	}
	p := buildPlan(t, 0)
	plans.Store(t, p)
	return p
}

func buildPlan(t reflect.Type, depth int) *typePlan {
	if depth > 8 || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	p := &typePlan{kind: t.Kind(), typ: t}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return p
	case reflect.Pointer, reflect.Slice:
		if p.elem = buildPlan(t.Elem(), depth+1); p.elem == nil || t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		return p
	case reflect.Struct:
		p.byName = map[string]int{}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous || (opts != "" && opts != "omitempty") {
				return nil // embedding and ,string follow rules of their own
			}
			if name == "" {
				name = f.Name
			}
			fp := buildPlan(f.Type, depth+1)
			if fp == nil {
				return nil
			}
			if _, dup := p.byName[name]; dup {
				return nil
			}
			p.byName[name] = len(p.fields)
			p.fields = append(p.fields, fieldPlan{name: name, index: i, plan: fp})
		}
		if len(p.fields) > 64 {
			return nil
		}
		return p
	}
	return nil
}

// rulesOf caches openapi's Schema.Rules, which walks the schema anew (and
// allocates) on each call.
var rules sync.Map // rulesKey → []*openapi.Schema

type rulesKey struct {
	s    *openapi.Schema
	kind string
}

func rulesOf(s *openapi.Schema, kind string) []*openapi.Schema {
	if s == nil {
		return nil
	}
	k := rulesKey{s, kind}
	if r, ok := rules.Load(k); ok {
		return r.([]*openapi.Schema)
	}
	r := s.Rules(kind)
	rules.Store(k, r)
	return r
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i into v, whose type has a plan.
func (d *fastDecoder) value(v reflect.Value, s *openapi.Schema) bool {
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	c := d.b[d.i]
	if c == 'n' {
		if !d.literal("null") {
			return false
		}
		if k := v.Kind(); k == reflect.Pointer || k == reflect.Slice {
			v.SetZero() // as encoding/json; null leaves other kinds as they are
		}
		return true
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	switch c {
	case '{':
		return v.Kind() == reflect.Struct && d.object(v, s)
	case '[':
		return v.Kind() == reflect.Slice && d.array(v, s)
	case '"':
		str, ok := d.str()
		if !ok || v.Kind() != reflect.String || !stringKept(str, s) {
			return false
		}
		v.SetString(str)
		return true
	case 't', 'f':
		if v.Kind() != reflect.Bool {
			return false
		}
		if c == 't' {
			v.SetBool(true)
			return d.literal("true")
		}
		v.SetBool(false)
		return d.literal("false")
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := d.integer()
		if !ok || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
		return true
	}
	return false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// integer reads an integer literal (no fraction, no exponent: those go the
// long way, as encoding/json refuses them for integer fields with its own
// message).
func (d *fastDecoder) integer() (int64, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return n, err == nil
}

func (d *fastDecoder) object(v reflect.Value, s *openapi.Schema) bool {
	plan := planOf(v.Type())
	if plan == nil {
		return false
	}
	objRules := rulesOf(s, "object")
	d.i++ // {
	var seen uint64
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return true
	}
	for {
		d.space()
		key, ok := d.plainKey()
		if !ok {
			return false
		}
		// An exact match only: encoding/json also matches names
		// case-insensitively, which the long way decides.
		idx, ok := plan.byName[string(key)]
		if !ok || seen&(1<<idx) != 0 {
			return false
		}
		seen |= 1 << idx
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		var prop *openapi.Schema
		for _, r := range objRules {
			if p := r.Properties[string(key)]; p != nil {
				prop = p
				break
			}
		}
		f := plan.fields[idx]
		if !d.value(v.Field(f.index), prop) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

func (d *fastDecoder) array(v reflect.Value, s *openapi.Schema) bool {
	arrRules := rulesOf(s, "array")
	var items *openapi.Schema
	for _, r := range arrRules {
		if r.Items != nil {
			items = r.Items
			break
		}
	}
	d.i++ // [
	v.SetLen(0)
	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // [] is an empty slice, not nil
	}
	n := 0
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			if !d.value(v.Index(n), items) {
				return false
			}
			n++
			d.space()
			if d.i >= len(d.b) {
				return false
			}
			if d.b[d.i] == ']' {
				d.i++
				break
			}
			if d.b[d.i] != ',' {
				return false
			}
			d.i++
		}
	}
	for _, r := range arrRules {
		if r.MaxItems != nil && n > *r.MaxItems {
			return false
		}
	}
	return true
}

// plainKey reads a field name without escapes (names with escapes go the
// long way).
func (d *fastDecoder) plainKey() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value, resolving escapes; a lone surrogate, a NUL or
// a raw control character is left to the long way.
func (d *fastDecoder) str() (string, bool) {
	start := d.i + 1
	j := start
	for ; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return string(d.b[start:j]), true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", false
		}
	}
	// Escapes: decode from here on.
	out := make([]byte, j-start, j-start+16)
	copy(out, d.b[start:j])
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			return "", false
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b, j+2)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				r2, ok := hex4(d.b, j+8)
				if r >= 0xDC00 || !ok || j+7 >= len(d.b) || d.b[j+6] != '\\' || d.b[j+7] != 'u' {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				j += 6
			}
			if r == 0 {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += 6
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// stringKept reports whether v keeps every rule checkJSON's str applies.
func stringKept(v string, s *openapi.Schema) bool {
	if !textcheck.Encoded(v) {
		return false
	}
	if _, hidden := textcheck.FirstHidden(v); hidden {
		return false
	}
	for _, r := range rulesOf(s, "string") {
		if r.MaxLength != nil && utf8.RuneCountInString(v) > *r.MaxLength {
			return false
		}
		if !r.MatchString(v) {
			return false
		}
	}
	return true
}
